"""`make soak`: the sample classes graded again and again under a competing CPU load, every result as in a calm run.

    .venv/bin/python -m tests.soak [--rounds 2] [--assignments a,b] [--paths threads,processes,dask] [--no-load]

1. Grades each sample class (tests/submissions/<assignment>) once, calm, with threads: the baseline.
2. Starts a competing load: one process per core spinning in plain Python, at the grader's own priority, as another
   user's work on a shared machine would be (a niced load would yield to the grader and prove nothing).
3. Grades each class ``--rounds`` times through each path: threads of this process, job processes
   (grader.pipeline.backends.processes) and a Dask LocalCluster (grader.pipeline.backends.dask).
4. Compares every student's results.json with the baseline's, less the fields that say when and how long
   (``TIME_KEYS``), and looks for an internal error, timeout or crash, of the submission or of a check, that the
   calm run did not have, nor a submission the run failed on once and graded again (ClassRun.regraded).

It prints a row per assignment, path and round (seconds, submissions, differences, bad statuses), what differed
(student, field, before and after), where the load's CPU time went, and a verdict; it exits 1 on any difference or
new bad status. tests/test_soak.py runs a short version of it in `make test`. Figures depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from grader.check.load import available_assignments
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class
from grader.results import CRASHED, INTERNAL, SUBMISSION_CRASHED, SUBMISSION_TIMEOUT, TIMEOUT

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"
# Every assignment with a sample class in tests/submissions/.
ASSIGNMENTS = tuple(name for name in available_assignments() if (SUBMISSIONS / name).is_dir())
PATHS = ("threads", "processes", "dask")
ROUNDS = 2  # 4 classes x 3 paths x 2 rounds under load: 25 minutes on 2 cores shared with other work (2026-11-23)

# Every field of results.json (grader/record/gradescope.py) that says when or how long: the run's seconds
# (execution_time, the result's duration_s) and when it was graded. submitted_at is the file's time and late_s is
# computed from it, so both are kept: they must not move either.
TIME_KEYS = frozenset({"execution_time", "graded_at"})
# What a loaded machine must never cause: the grader failing, or a student's code stopped or killed.
BAD = frozenset({INTERNAL, TIMEOUT, CRASHED, SUBMISSION_TIMEOUT, SUBMISSION_CRASHED})
REGRADED = "regraded"  # a Bad's status when the run failed on a submission once and graded it again
SHOWN = 20  # differences printed per row; the count says how many more


@dataclass(frozen=True)
class Difference:
    student: str
    field: str  # a path into results.json, e.g. "tests[3] (q2: padding).output"
    before: str  # in the calm run
    after: str

    def __str__(self) -> str:
        return f"{self.student}: {self.field}: {self.before} -> {self.after}"


@dataclass(frozen=True)
class Bad:
    """An internal error, timeout or crash: of the submission (``where`` "submission") or of a check (its id)."""

    student: str
    where: str
    status: str
    detail: str = ""  # the traceback or message, when there is one

    @property
    def key(self) -> tuple[str, str, str]:
        return self.student, self.where, self.status


@dataclass(frozen=True)
class Row:
    assignment: str
    path: str  # "calm" for the baseline, else one of PATHS
    round: int  # 0 for the baseline
    seconds: float
    submissions: int
    differences: tuple[Difference, ...] = ()
    bad: tuple[Bad, ...] = ()  # only those the calm run did not have (the calm run's row: all of its own)


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    load_processes: int = 0
    load_cpu_s: float = 0.0  # CPU seconds the competing load got
    loaded_s: float = 0.0  # wall seconds it ran

    @property
    def loaded(self) -> list[Row]:
        return [r for r in self.rows if r.path != "calm"]

    @property
    def ok(self) -> bool:
        return bool(self.loaded) and not any(r.differences or r.bad for r in self.loaded)


# ----- comparing results ---------------------------------------------------------------------------------------------
def strip_times(data: Any) -> Any:
    """``data`` without the keys of TIME_KEYS, at any depth."""
    if isinstance(data, dict):
        return {k: strip_times(v) for k, v in data.items() if k not in TIME_KEYS}
    if isinstance(data, list):
        return [strip_times(v) for v in data]
    return data


def _shown(value: Any, other: Any) -> str:
    """A value as printed beside the one it differs from: a long string around where the two first part."""
    if isinstance(value, str) and isinstance(other, str) and max(len(value), len(other)) > 120:
        at = next((i for i, (a, b) in enumerate(zip(value, other)) if a != b), min(len(value), len(other)))
        start = max(0, at - 50)
        return ("…" if start else "") + repr(value[start:at + 70]) + ("…" if at + 70 < len(value) else "")
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)


def _label(index: int, item: Any) -> str:
    name = item.get("name") if isinstance(item, dict) else None
    return f"[{index}] ({name})" if isinstance(name, str) else f"[{index}]"


def differences(before: Any, after: Any, where: str = "") -> list[tuple[str, str, str]]:
    """(field, before, after) for every leaf where two results.json differ, times stripped beforehand."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in list(before) + [k for k in after if k not in before]:
            path = f"{where}.{key}" if where else key
            if key not in after:
                found.append((path, _shown(before[key], None), "(missing)"))
            elif key not in before:
                found.append((path, "(missing)", _shown(after[key], None)))
            else:
                found += differences(before[key], after[key], path)
        return found
    if isinstance(before, list) and isinstance(after, list):
        found = []
        for index, (a, b) in enumerate(zip(before, after)):
            found += differences(a, b, where + _label(index, a))
        if len(before) != len(after):
            found.append((f"{where} length", str(len(before)), str(len(after))))
        return found
    if before != after or type(before) is not type(after):
        return [(where or "(whole)", _shown(before, after), _shown(after, before))]
    return []


def compare_class(baseline: dict[str, dict], run: dict[str, dict]) -> list[Difference]:
    """Every difference, student by student, between a class's results.json files and the baseline's."""
    found = []
    for student in sorted(baseline.keys() | run.keys()):
        if student not in run:
            found.append(Difference(student, "results.json", "written", "(missing)"))
        elif student not in baseline:
            found.append(Difference(student, "results.json", "(missing)", "written"))
        else:
            found += [Difference(student, *d) for d in differences(strip_times(baseline[student]),
                                                                   strip_times(run[student]))]
    return found


def read_class(out_dir: Path) -> dict[str, dict]:
    """Each student's results.json in a run's output folder."""
    return {path.parent.name: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted((out_dir / "students").glob("*/results.json"))}


def bad_statuses(results: dict[str, dict]) -> list[Bad]:
    """The internal errors, timeouts and crashes results.json reports, the submission's and each check's."""
    found = []
    for student, data in sorted(results.items()):
        extra = data.get("extra_data", {})
        if extra.get("status") in BAD:
            detail = "\n".join([extra.get("reason", ""), *extra.get("notes", [])]).strip()
            found.append(Bad(student, "submission", extra["status"], detail))
        for test in data.get("tests", []):
            outcome = test.get("extra_data", {}).get("outcome")
            if outcome in BAD:
                found.append(Bad(student, test["extra_data"].get("check_id", test.get("name", "?")), outcome,
                                 test.get("output", "")))
    return found


def _with_details(bad: list[Bad], run: ClassRun) -> list[Bad]:
    """A bad check's detail from the gradebook (results.json has the student's message only; the instructor's
    detail holds the traceback)."""
    checks = {(r.student, c.check_id): c for r in run.results for c in r.checks}
    out = []
    for b in bad:
        check = checks.get((b.student, b.where))
        extra = check.detail if check is not None and check.detail else ""
        out.append(Bad(b.student, b.where, b.status, "\n".join(x for x in (b.detail, extra) if x)))
    return out


def new_bad(baseline: list[Bad], run: list[Bad]) -> list[Bad]:
    """The bad statuses of a run the calm run did not have."""
    known = {b.key for b in baseline}
    return [b for b in run if b.key not in known]


# ----- the competing load --------------------------------------------------------------------------------------------
SPIN = "while True:\n    pass\n"


def _cpu_seconds(pid: int) -> float:
    with contextlib.suppress(psutil.Error):
        times = psutil.Process(pid).cpu_times()
        return times.user + times.system
    return 0.0


@contextlib.contextmanager
def competing_load(processes: int | None = None) -> Iterator[Callable[[], float]]:
    """One spinning Python process per core (or ``processes``) until the block ends; yields a function that says
    the CPU seconds they have had so far."""
    spinners: list[subprocess.Popen] = []
    try:
        for _ in range(processes or os.cpu_count() or 1):
            spinners.append(subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL))
        yield lambda: sum(_cpu_seconds(p.pid) for p in spinners)
    finally:
        for spinner in spinners:
            spinner.terminate()
        for spinner in spinners:
            try:
                spinner.wait(timeout=10)
            except subprocess.TimeoutExpired:
                spinner.kill()
                spinner.wait()


@contextlib.contextmanager
def dask_cluster(workers: int) -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster:
        yield cluster.scheduler_address


# ----- grading -------------------------------------------------------------------------------------------------------
def grade(assignment: str, path: str, out_dir: Path, *, jobs: int, scheduler: str | None = None) -> ClassRun:
    """Grade a sample class through ``path`` ("threads", "processes" or "dask") into a fresh ``out_dir``."""
    if path == "dask":
        if scheduler is None:
            raise ValueError("the dask path needs a scheduler")
        options = RunOptions(scheduler=scheduler)
    elif path in ("threads", "processes"):
        options = RunOptions(jobs=max(2, jobs) if path == "processes" else jobs, job_processes=path == "processes")
    else:
        raise ValueError(f"unknown path {path!r}: one of {', '.join(PATHS)}")
    return grade_class(RunRequest(assignment=assignment, submissions_dir=SUBMISSIONS / assignment, out_dir=out_dir,
                                  force=True), options)


def _graded(assignment: str, path: str, round_: int, out_dir: Path, jobs: int, scheduler: str | None,
            ) -> tuple[Row, dict[str, dict], list[Bad]]:
    started = time.perf_counter()
    try:
        run = grade(assignment, path, out_dir, jobs=jobs, scheduler=scheduler)
    except Exception:  # a run that dies is the soak's finding, not its end: the other rounds still say something
        failed = Bad("(the whole run)", path, INTERNAL, traceback.format_exc())
        return Row(assignment, path, round_, time.perf_counter() - started, 0), read_class(out_dir), [failed]
    seconds = time.perf_counter() - started
    results = read_class(out_dir)
    bad = bad_statuses(results)
    if bad:
        bad = _with_details(bad, run)
    # The run grades again, once, a submission it failed on (ClassRun.regraded): the second try's result hides the
    # first failure from results.json, yet that failure is the flake this soak looks for.
    bad += [Bad(student, "submission", REGRADED, "the grader failed on it once; its second grading is recorded")
            for student in run.regraded]
    return Row(assignment, path, round_, seconds, len(run.summaries)), results, bad


def soak(*, assignments: Sequence[str] = ASSIGNMENTS, paths: Sequence[str] = PATHS, rounds: int = ROUNDS,
         load: bool = True, jobs: int | None = None, work_dir: Path,
         echo: Callable[[str], None] = lambda line: None) -> Report:
    """Grade each class calm, then ``rounds`` times through each path under the competing load (see the module's
    docstring); ``echo`` gets each row as it is done. The output folders go under ``work_dir``."""
    jobs = jobs or os.cpu_count() or 1
    report = Report()
    baselines: dict[str, tuple[dict[str, dict], list[Bad]]] = {}
    for assignment in assignments:
        row, results, bad = _graded(assignment, "threads", 0, work_dir / assignment / "calm", jobs, None)
        row = Row(assignment, "calm", 0, row.seconds, row.submissions, bad=tuple(bad))
        baselines[assignment] = results, bad
        report.rows.append(row)
        echo(format_row(row))
    with contextlib.ExitStack() as stack:
        scheduler = stack.enter_context(dask_cluster(jobs)) if "dask" in paths else None
        cpu = stack.enter_context(competing_load()) if load else (lambda: 0.0)
        report.load_processes = (os.cpu_count() or 1) if load else 0
        started = time.perf_counter()
        for round_ in range(1, rounds + 1):
            for assignment in assignments:
                calm, calm_bad = baselines[assignment]
                for path in paths:
                    out_dir = work_dir / assignment / f"{path}-{round_}"
                    row, results, bad = _graded(assignment, path, round_, out_dir, jobs, scheduler)
                    row = Row(assignment, path, round_, row.seconds, row.submissions,
                              tuple(compare_class(calm, results)), tuple(new_bad(calm_bad, bad)))
                    report.rows.append(row)
                    echo(format_row(row))
                    shutil.rmtree(out_dir, ignore_errors=True)  # pages and gradebooks add up over many rounds
        report.loaded_s = time.perf_counter() - started
        report.load_cpu_s = cpu()
    return report


# ----- printing ------------------------------------------------------------------------------------------------------
HEADER = f"{'assignment':<26} {'path':<10} {'round':>5} {'seconds':>8} {'subs':>5} {'diffs':>6} {'bad':>4}"


def format_row(row: Row) -> str:
    line = (f"{row.assignment:<26} {row.path:<10} {row.round:>5} {row.seconds:>8.1f} {row.submissions:>5} "
            f"{len(row.differences):>6} {len(row.bad):>4}")
    for difference in row.differences[:SHOWN]:
        line += f"\n    differs: {difference}"
    if len(row.differences) > SHOWN:
        line += f"\n    ... and {len(row.differences) - SHOWN} more differences"
    for bad in row.bad:
        line += f"\n    {'calm run has' if row.path == 'calm' else 'new'}: {bad.student} {bad.where} {bad.status}"
        line += "".join(f"\n      | {text}" for text in bad.detail.splitlines()[-25:])
    return line


def summary(report: Report) -> str:
    lines = ["", HEADER, *(format_row(r).split("\n", 1)[0] for r in report.rows), ""]
    for path in ["calm", *dict.fromkeys(r.path for r in report.loaded)]:
        rows = [r for r in report.rows if r.path == path]
        lines.append(f"{path:<10} {len(rows):>3} runs, {sum(r.submissions for r in rows):>4} submissions, "
                     f"{sum(r.seconds for r in rows):>7.1f} s, {sum(len(r.differences) for r in rows)} differences, "
                     f"{sum(len(r.bad) for r in rows)} {'bad statuses' if path == 'calm' else 'new bad statuses'}")
    if report.load_processes:
        lines.append(f"competing load: {report.load_processes} spinning processes had {report.load_cpu_s:.0f} CPU s "
                     f"of {report.loaded_s:.0f} s x {os.cpu_count()} cores "
                     f"({100 * report.load_cpu_s / max(report.loaded_s * (os.cpu_count() or 1), 1e-9):.0f}%)")
    calm_bad = sum(len(r.bad) for r in report.rows if r.path == "calm")
    if report.ok:
        verdict = (f"PASS: {len(report.loaded)} loaded runs, every results.json as in the calm run (times aside), "
                   "no new internal error, timeout, crash or regrade")
    else:
        differing = sum(1 for r in report.loaded if r.differences)
        flaky = sum(1 for r in report.loaded if r.bad)
        verdict = (f"FAIL: {differing} of {len(report.loaded)} loaded runs differ from the calm run, "
                   f"{flaky} have a new internal error, timeout, crash or regrade")
    if calm_bad:
        verdict += f" (the calm run itself had {calm_bad} bad statuses: see its rows)"
    return "\n".join([*lines, verdict])


def _names(text: str, allowed: Sequence[str]) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in allowed]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'none given'}: choose from {', '.join(allowed)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"graded runs per class and path (default {ROUNDS})")
    parser.add_argument("--assignments", type=lambda t: _names(t, ASSIGNMENTS), default=list(ASSIGNMENTS),
                        help=f"comma-separated (default {','.join(ASSIGNMENTS)})")
    parser.add_argument("--paths", type=lambda t: _names(t, PATHS), default=list(PATHS),
                        help=f"comma-separated (default {','.join(PATHS)})")
    parser.add_argument("--load", action=argparse.BooleanOptionalAction, default=True,
                        help="a spinning process per core while the loaded rounds run (default on)")
    parser.add_argument("--jobs", type=int, default=None, help="parallel jobs, and Dask workers (default: cores)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the calm runs' output folders here")
    args = parser.parse_args(argv)
    print(f"soak {datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {os.cpu_count()} cores, jobs {args.jobs or os.cpu_count()}, "
          f"{args.rounds} rounds x {len(args.paths)} paths x {len(args.assignments)} classes, "
          f"load {'on' if args.load else 'off'}", flush=True)
    print(HEADER, flush=True)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        work = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="soak-")))
        report = soak(assignments=args.assignments, paths=args.paths, rounds=args.rounds, load=args.load,
                      jobs=args.jobs, work_dir=work, echo=lambda line: print(line, flush=True))
    print(summary(report))
    print(f"wall time: {time.perf_counter() - started:.0f} s")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
