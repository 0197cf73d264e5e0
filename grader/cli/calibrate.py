"""``grader calibrate NAME``: train what an assignment's training check decides on and write the check's stages
(grader/check/calibration.py)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from grader.check.calibration import STAGES_MODULE, Calibration, declared, measure
from grader.cli.kit import shown
from grader.errors import ConfigurationError
from grader.paths import SOLUTIONS_DIR


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def narrowed(calibration: Calibration, args: argparse.Namespace) -> Calibration:
    """The declared calibration with the command line's narrower kinds, seeds, kernels or stages (a quick trial)."""
    changes: dict[str, object] = {}
    if args.kinds:
        kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
        unknown = sorted(set(kinds) - set(calibration.kinds))
        if unknown:
            raise ConfigurationError(f"--kinds: {', '.join(map(repr, unknown))} not among the calibration's kinds "
                                     f"({', '.join(calibration.kinds)})")
        changes["should_pass"] = tuple(k for k in calibration.should_pass if k in kinds)
        changes["should_fail"] = tuple(k for k in calibration.should_fail if k in kinds)
    if args.seeds:
        changes["seeds"] = _numbers(args.seeds)
    if args.held_out is not None:
        changes["held_out"] = _numbers(args.held_out)
    if args.kernels is not None:
        changes["kernels"] = args.kernels
    if args.stages:
        changes["stages"] = tuple(float(x) for x in args.stages.split(","))
    return dataclasses.replace(calibration, **changes) if changes else calibration


def _calibrate(args: argparse.Namespace) -> int:
    solutions = Path(args.solutions).resolve()
    calibration = narrowed(declared(args.name, solutions), args)
    out = Path(args.out) if args.out else solutions / args.name / f"{STAGES_MODULE}.py"
    print(f"{args.name}: training {len(calibration.kinds)} kinds from {len(calibration.seeds)} seeds "
          f"({len(calibration.held_out)} held out) ...", flush=True)
    verdict = measure(args.name, calibration, solutions_dir=solutions, out=out, command=f"grader calibrate "
                      f"{args.name}", workers=args.jobs)
    print(f"wrote {shown(out)}")
    print(json.dumps(dict(verdict.measured), indent=1))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    calibrate = commands.add_parser(
        "calibrate", help="train what a training check decides on and write its stages (training_stages.py)",
        description="Train every kind the assignment's solutions/NAME/calibration.py declares (CALIBRATION) from "
                    "each seed, scored after each stage; derive the staged verdict's thresholds, measure its error "
                    "rates on held-out seeds and other float kernels, and write solutions/NAME/training_stages.py.")
    calibrate.add_argument("name", help="the assignment")
    calibrate.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    calibrate.add_argument("--out", help="the file written (default: solutions/NAME/training_stages.py)")
    calibrate.add_argument("--jobs", type=int, help="trainings at a time (default: one per core)")
    calibrate.add_argument("--kinds", help="only these kinds, comma-separated (a quick trial)")
    calibrate.add_argument("--seeds", help="the calibration's seeds in place of the declared ones, e.g. 10,11")
    calibrate.add_argument("--held-out", help="the held-out seeds in place of the declared ones ('' for none)")
    calibrate.add_argument("--kernels", type=int, help="how many float-kernel sets the check's seed trains under")
    calibrate.add_argument("--stages", help="the stages in place of the declared ones, e.g. 0.5,1,2 (the last "
                                            "decides at the mark)")
    calibrate.set_defaults(run=_calibrate)
