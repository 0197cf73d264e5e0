"""``grader gradescope ASSIGNMENT [--out ZIP]``: the Gradescope autograder zip for an assignment; and
``grader gradescope-run``, what the zip's run_autograder runs on Gradescope for each submission."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader.execute import isolation, lifetime
from grader.export import build_autograder_zip
from grader.paths import PROJECT_ROOT, SOLUTIONS_DIR
from grader.pipeline.gradescope_run import (
    CONFIG,
    DEFAULT_ROOT,
    configured_assignment,
    grade_gradescope_submission,
    write_unconfigured,
)

STOP_SECONDS = 10.0  # for the second try to stop in order once its starter has gone, before it is killed


def _gradescope(args: argparse.Namespace) -> int:
    out = Path(args.out or f"out/gradescope/{args.assignment}/autograder.zip")
    built = build_autograder_zip(args.assignment, out, solutions_dir=Path(args.solutions))
    provided = [n for n in built.names if n.startswith("assignments/")]
    also = f" and its provided {', '.join(provided)}" if provided else ""
    print(f"Wrote {built.path} ({built.size / 1024:.0f} KiB, {len(built.names)} files): setup.sh, run_autograder, "
          f"the grader, {len(built.solutions)} files of solutions/{built.assignment}/{also} (no other "
          f"assignment's solutions, no tests).")
    print("Upload it on Gradescope: a Programming Assignment > Configure Autograder > Zip file upload, base image "
          "Ubuntu 22.04 or newer; students upload their notebook or .py file. Hidden checks are shown to students "
          "after you publish the grades.")
    return 0


def _gradescope_run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    starter = os.environ.pop(lifetime.OWNER_ENV, "")
    if args.once and starter:  # the second try, started by a first one: it stops should the first be killed
        lifetime.stop_when_gone(lifetime.Owner.parse(starter), STOP_SECONDS)
    try:
        assignment = args.assignment or configured_assignment(PROJECT_ROOT)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: no assignment given and {PROJECT_ROOT / CONFIG} does not name one ({exc})", file=sys.stderr)
        write_unconfigured(root, f"it does not say which assignment it grades ({CONFIG} is missing)")
        return 2
    grade_gradescope_submission(root=root, assignment=assignment, solutions_dir=Path(args.solutions),
                                sandbox=args.sandbox, again=not args.once)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    gradescope = commands.add_parser("gradescope", help="write the Gradescope autograder zip for an assignment")
    gradescope.add_argument("assignment", help="assignment name, a folder in solutions/")
    gradescope.add_argument("--out", help="the zip to write (default: out/gradescope/ASSIGNMENT/autograder.zip)")
    gradescope.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    gradescope.set_defaults(run=_gradescope)

    run = commands.add_parser("gradescope-run", help="grade the submission in a Gradescope autograder's tree (what "
                                                     "the zip's run_autograder runs)")
    run.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", DEFAULT_ROOT),
                     help="Gradescope's /autograder (default: $AUTOGRADER_ROOT, else /autograder)")
    run.add_argument("--assignment", help=f"the assignment (default: the one in {CONFIG} beside the grader)")
    run.add_argument("--solutions", default=str(SOLUTIONS_DIR), help=argparse.SUPPRESS)
    # Gradescope's container, made afresh for each submission and holding nothing else, is the boundary there: its
    # defaults refuse bubblewrap's namespaces, and every other layer is used (docs/gradescope.md).
    run.add_argument("--sandbox", choices=isolation.MODES, default="partial", help=argparse.SUPPRESS)
    run.add_argument("--once", action="store_true", help=argparse.SUPPRESS)  # the retry itself: no third try
    run.set_defaults(run=_gradescope_run)
