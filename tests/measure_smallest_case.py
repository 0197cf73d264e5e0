"""What the search for smallest failing cases costs: grade a sample class and time every search (wall time inside
``SubmissionRunner._shrink``), for the figures in the README.

    .venv/bin/python -m tests.measure_smallest_case attention_scoring [more assignments ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from grader.check.context import CheckContext
from grader.check.runner import SubmissionRunner
from grader.check.spec import CheckSpec
from grader.check.student import StudentCode
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.results import SmallestCase

from .conftest import ROOT


def measure(assignment: str) -> str:
    seconds: list[float] = []
    runs: list[int] = []
    search = SubmissionRunner._shrink

    def timed(self: SubmissionRunner, check: CheckSpec, seed: int, code: StudentCode,
              failed: CheckContext) -> tuple[SmallestCase | None, str | None]:
        start = time.perf_counter()
        found = search(self, check, seed, code, failed)
        seconds.append(time.perf_counter() - start)
        runs.append(found[0].attempts if found[0] else 0)
        return found

    SubmissionRunner._shrink = timed  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            run = grade_class(RunRequest(assignment=assignment,
                                         submissions_dir=ROOT / "tests" / "submissions" / assignment,
                                         out_dir=Path(out) / "out", force=True), RunOptions(jobs=1))
            total = time.perf_counter() - start
    finally:
        SubmissionRunner._shrink = search  # type: ignore[method-assign]
    each = f"{1000 * sum(seconds) / len(seconds):.0f} ms each, at most {1000 * max(seconds):.0f} ms, " \
           f"{min(runs)}-{max(runs)} runs each" if seconds else "none"
    return (f"{assignment}: {len(run.results)} submissions graded in {total:.1f} s (one at a time); "
            f"{len(seconds)} searches took {sum(seconds):.2f} s in all ({each})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="+")
    for assignment in parser.parse_args().assignments:
        print(measure(assignment), flush=True)


if __name__ == "__main__":
    main()
