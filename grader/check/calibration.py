"""``grader calibrate NAME``: measure the trainings a staged training check decides on, and write its stages.

An assignment whose checks train something declares, in ``solutions/NAME/calibration.py``, ``CALIBRATION =
Calibration(...)``: how to train each kind of implementation (the reference, known mistakes that still learn, ones
that do not) from a seed and score it after each stage, which kinds should pass and which fail, the seeds, the
stages, the mark and the margins. The command trains every kind from every seed, each kind in a process of its own
on one thread (as the grader's student processes train), derives the stages from the calibration seeds
(``staged.calibrate``), measures the error rates on trainings the calibration did not see (other seeds, and the
check's own seed under other float kernels: what differs from one CPU to another), and writes all of it to
``solutions/NAME/training_stages.py``, which the checks read (``StagedVerdict.from_module``). The thresholds are
never typed in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader.check.load import load_solution_module
from grader.check.staged import Rates, StagedVerdict, calibrate, error_rates
from grader.errors import ConfigurationError

STAGES_MODULE = "training_stages"
DECLARATION_MODULE = "calibration"
# Float kernels another computer would use: (label, environment). The first is this machine's own choice. PyTorch
# picks AVX-512, AVX2 or plain kernels (ATEN_CPU_CAPABILITY), MKL its matrix products' (MKL_ENABLE_INSTRUCTIONS):
# what differs between one CPU and another.
KERNELS = (
    ("as detected", {}),
    ("ATen AVX2", {"ATEN_CPU_CAPABILITY": "avx2"}),
    ("ATen plain", {"ATEN_CPU_CAPABILITY": "default"}),
    ("MKL AVX2", {"MKL_ENABLE_INSTRUCTIONS": "AVX2"}),
    ("MKL SSE4.2, ATen plain", {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ATEN_CPU_CAPABILITY": "default"}),
)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass(frozen=True)
class Calibration:
    """What ``grader calibrate`` trains and how the stages are derived from it."""

    # (kind, seed, stages) -> the score after each stage of one training from that seed, gone on with from stage to
    # stage as the check does. Runs in a process of its own for each kind (and each set of float kernels).
    trajectory: Callable[[str, int, tuple[float, ...]], list[float]]
    should_pass: tuple[str, ...]  # kinds the check must pass: the reference, mistakes that still learn
    should_fail: tuple[str, ...]  # kinds it must fail
    stages: tuple[float, ...]  # where the check scores the training (its work: epochs, say); the last decides at mark
    mark: float
    pass_margin: float  # a stage passes a score this far above every training that should fail ...
    fail_margin: float  # ... and fails one this far below every training that should pass
    seeds: tuple[int, ...]  # the calibration's trainings
    held_out: tuple[int, ...] = ()  # trainings the error rates are measured on, not the thresholds
    check_seed: int | None = None  # the seed the check trains from: trained under the other kernels too
    kernels: int = len(KERNELS)  # how many of KERNELS the check_seed trains under
    unit: str = "epochs"  # what the stages count
    score: str = "the score"  # what the score is, for the file's comment

    def __post_init__(self) -> None:
        if set(self.should_pass) & set(self.should_fail):
            raise ConfigurationError("a kind cannot both pass and fail the calibration")
        if not self.should_pass or not self.should_fail or not self.seeds:
            raise ConfigurationError("a calibration needs kinds that pass, kinds that fail and seeds")

    @property
    def kinds(self) -> tuple[str, ...]:
        return (*self.should_pass, *self.should_fail)


@dataclass(frozen=True)
class _Run:
    part: str  # "calibration" or "held out"
    kind: str
    seed: int
    kernels: str
    scores: list[float]


def declared(name: str, solutions_dir: Path) -> Calibration:
    """The assignment's ``CALIBRATION`` (its ``calibration.py``)."""
    path = solutions_dir / name / f"{DECLARATION_MODULE}.py"
    if not path.is_file():
        raise ConfigurationError(f"{name}: no {path}: an assignment whose checks train something declares "
                                 "CALIBRATION = Calibration(...) there (docs/writing-checks.md)")
    calibration = getattr(load_solution_module(name, DECLARATION_MODULE, solutions_dir=solutions_dir),
                          "CALIBRATION", None)
    if not isinstance(calibration, Calibration):
        raise ConfigurationError(f"{name}: {path} has no CALIBRATION = Calibration(...)")
    return calibration


def _trainings(name: str, solutions_dir: Path, trainings: Sequence[tuple[str, int]], environment: dict[str, str],
               stages: Sequence[float]) -> list[list[float]]:
    """The trajectories of ``trainings`` (kind, seed), one after another in a process of its own under
    ``environment``'s kernels (which a process chooses when it starts)."""
    command = [sys.executable, "-m", __spec__.name, name, str(solutions_dir), json.dumps([list(t) for t in trainings]),
               json.dumps(list(stages))]
    done = subprocess.run(command, env={**os.environ, **ONE_THREAD, **environment}, capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigurationError(f"{name}: a training for the calibration failed:\n{done.stderr.strip()}")
    return [[float(x) for x in scores] for scores in json.loads(done.stdout)]


def trajectories(calibration: Calibration, trainings: Sequence[tuple[str, int]],
                 stages: Sequence[float]) -> list[list[float]]:
    """What a calibration's training process prints (``--trajectories``): each (kind, seed)'s scores."""
    unknown = sorted({kind for kind, _ in trainings} - set(calibration.kinds))
    if unknown:
        raise ConfigurationError(f"{', '.join(map(repr, unknown))}: not among the calibration's kinds "
                                 f"({', '.join(calibration.kinds)})")
    return [list(map(float, calibration.trajectory(kind, int(seed), tuple(stages)))) for kind, seed in trainings]


def measure(name: str, calibration: Calibration, *, solutions_dir: Path, out: Path, command: str,
            workers: int | None = None) -> StagedVerdict:
    """Train every kind (in processes, ``workers`` at a time), derive the stages, measure the error rates, and
    write ``out``; returns the verdict written."""
    stages = calibration.stages
    # The trainings on this machine's kernels, dealt out to as many processes as run at once; one process for each
    # other set of kernels (a process chooses its kernels when it starts), training the check's seed of every kind.
    workers = workers or os.cpu_count() or 1
    # The check's own seed, trained here too, so that what the check decides on this machine is on record.
    check_seed = () if calibration.check_seed is None or calibration.check_seed in calibration.seeds else \
        (calibration.check_seed,)
    here = [(part, kind, seed) for kind in calibration.kinds
            for part, seeds in (("calibration", calibration.seeds), ("held out", calibration.held_out + check_seed))
            for seed in dict.fromkeys(seeds)]
    plan: list[tuple[str, dict[str, str], list[tuple[str, str, int]]]] = [
        (KERNELS[0][0], {}, here[index::workers]) for index in range(min(workers, len(here)))]
    if calibration.check_seed is not None:
        plan += [(label, environment, [("held out", kind, calibration.check_seed) for kind in calibration.kinds])
                 for label, environment in KERNELS[1:calibration.kernels]]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_trainings, name, solutions_dir, [(kind, seed) for _, kind, seed in trainings],
                               environment, stages) for _, environment, trainings in plan]
        runs = [_Run(part, kind, seed, label, scores)
                for (label, _, trainings), future in zip(plan, futures)
                for (part, kind, seed), scores in zip(trainings, future.result())]
    seconds = time.perf_counter() - started

    def of(part: str, kinds: tuple[str, ...]) -> list[list[float]]:
        return [run.scores for run in runs if run.part == part and run.kind in kinds]

    verdict = calibrate(stages, of("calibration", calibration.should_pass),
                        of("calibration", calibration.should_fail), mark=calibration.mark,
                        pass_margin=calibration.pass_margin, fail_margin=calibration.fail_margin)
    measured: dict[str, object] = {
        "margins": {"pass": calibration.pass_margin, "fail": calibration.fail_margin},
        "calibration": {"seeds": list(calibration.seeds),
                        **_rates(error_rates(verdict, of("calibration", calibration.should_pass),
                                             of("calibration", calibration.should_fail)), calibration.unit)},
    }
    held_out_kernels = [label for label, _ in KERNELS[1:calibration.kernels]] if calibration.check_seed is not None \
        else []
    if calibration.held_out or held_out_kernels:
        measured["held_out"] = {"seeds": list(dict.fromkeys(calibration.held_out + check_seed)),
                                "kernels": held_out_kernels,
                                **_rates(error_rates(verdict, of("held out", calibration.should_pass),
                                                     of("held out", calibration.should_fail)), calibration.unit)}
    if calibration.check_seed is not None:
        measured["check_seed"] = {run.kind: _decided(verdict, run.scores, calibration.unit) for run in runs
                                  if run.seed == calibration.check_seed and run.kernels == KERNELS[0][0]}
    verdict = StagedVerdict(verdict.mark, verdict.stages, measured)
    write_stages(verdict, out, command=command, trainings=len(runs), seconds=seconds, unit=calibration.unit,
                 score=calibration.score)
    return verdict


def _rates(rates: Rates, unit: str) -> dict[str, object]:
    return {"should_pass": rates.passing, "should_fail": rates.failing, "failed_early": rates.failed_passing,
            "passed_early": rates.passed_failing, "decided_at": rates.decided_at,
            f"mean_{unit.replace(' ', '_')}": round(rates.mean_work, 3)}


def _decided(verdict: StagedVerdict, scores: list[float], unit: str) -> str:
    index, decision = verdict.first_decision(scores)
    return f"{'pass' if decision else 'fail'} after {verdict.stages[index].after:g} {unit} ({scores[index]:.1%})"


def write_stages(verdict: StagedVerdict, out: Path, *, command: str, trainings: int, seconds: float,
                 unit: str = "epochs", score: str = "the score") -> None:
    """``out`` as checks import it: the stages and what was measured, as Python literals (a kit holds them as the
    constants of a module it does not ship)."""
    stages = ",\n".join(f"    ({s.after!r}, {s.pass_at!r}, {s.fail_below!r})" for s in verdict.stages)
    comment = textwrap.fill(f"({unit} trained, pass at or above, fail below): {score} after that stage.", 116,
                            initial_indent="# ", subsequent_indent="# ")
    out.write_text(f'''"""The training check's stages (grader/check/staged.py), written by `{command}` on
{datetime.now(UTC):%Y-%m-%d} ({trainings} trainings in {seconds:.0f} s): do not edit by hand, run it again."""

MARK = {verdict.mark!r}
UNIT = {json.dumps(unit)}
{comment}
STAGES = (
{stages},
)
MEASURED = {json.dumps(dict(verdict.measured), indent=4)}
''', encoding="utf-8")


def _main(argv: Sequence[str]) -> None:
    """A training process (what ``_trainings`` starts): NAME SOLUTIONS_DIR TRAININGS_JSON STAGES_JSON; prints the
    trajectories as JSON. Lighter than ``python -m grader``, which loads every command."""
    # Run as __main__, this module is not the grader.check.calibration the assignment's Calibration comes from.
    from grader.check import calibration as declaring

    name, solutions_dir, trainings, stages = argv
    calibration = declaring.declared(name, Path(solutions_dir))
    print(json.dumps(declaring.trajectories(calibration, [(str(k), int(s)) for k, s in json.loads(trainings)],
                                  [float(s) for s in json.loads(stages)])))


if __name__ == "__main__":
    _main(sys.argv[1:])
