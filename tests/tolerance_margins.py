"""How far every tensor verdict of the sample classes is from flipping: ``python -m tests.tolerance_margins``.

A check compares the student's float32 tensor with a float64 reference within ``atol + rtol * |expected|``
(grader/check/compare.py). Another CPU rounds float32 sums differently, by a few units in the last place, so a
verdict can only depend on the machine when an error sits near that bound. This grades the sample classes and the
real-style corpus in this process (threads), and records, for every comparison, the ratio of the largest error to
its bound: a comparison that passed has it below 1, one that failed above. It prints, per assignment and dtype of
the student's answer, the largest ratio among passes and the smallest among failures, with their labels (a float64
answer's error is the student's own, typed-in numbers say, not the arithmetic's).
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader.check import context
from grader.check.load import available_assignments
from grader.pipeline import RunOptions, RunRequest, grade_class

ROOT = Path(__file__).resolve().parent.parent
# Every assignment with a sample class in tests/submissions/.
ASSIGNMENTS = tuple(name for name in available_assignments() if (ROOT / "tests" / "submissions" / name).is_dir())


@dataclass
class Margins:
    """The comparison closest to its bound on each side: (ratio, label)."""

    passed: tuple[float, str] = (0.0, "")
    failed: tuple[float, str] = (float("inf"), "")
    compared: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ratio: float, label: str) -> None:
        with self.lock:
            self.compared += 1
            if ratio <= 1 and ratio > self.passed[0]:
                self.passed = (ratio, label)
            elif ratio > 1 and ratio < self.failed[0]:
                self.failed = (ratio, label)


def error_ratio(got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> float:
    """The largest |got - expected| / (atol + rtol |expected|) over the finite entries (0 when none differs)."""
    got, expected = got.astype(np.float64), expected.astype(np.float64)
    finite = np.isfinite(got) & np.isfinite(expected)
    if not finite.any():
        return 0.0
    return float(np.max(np.abs(got[finite] - expected[finite]) / (atol + rtol * np.abs(expected[finite]))))


@contextmanager
def recording(margins: dict[str, Margins]) -> Iterator[None]:
    """Every value comparison of this process's checks, recorded in ``margins`` by the dtype of the student's
    answer (shapes that differ are not)."""
    compare = context.compare_tensor

    def measured(label, got, expected, *, rtol=1e-4, atol=1e-5, **options):  # options: as compare_tensor's
        mismatch = compare(label, got, expected, rtol=rtol, atol=atol, **options)
        if got is not None and got.array is not None and got.shape == np.shape(expected) and \
                np.asarray(expected).dtype.kind == "f" and (mismatch is None or mismatch.category == "values"):
            kind = "float64" if got.array.dtype == np.float64 else "float32"
            margins[kind].add(error_ratio(got.array, np.asarray(expected), rtol=rtol, atol=atol), label)
        return mismatch

    context.compare_tensor = measured
    try:
        yield
    finally:
        context.compare_tensor = compare


def new_margins() -> dict[str, Margins]:
    return {"float32": Margins(), "float64": Margins()}


def measure(assignment: str) -> dict[str, Margins]:
    """Both bundled classes of ``assignment`` graded afresh with every comparison recorded (the tests read the
    session's shared runs instead: tests/bundled_classes.py)."""
    margins = new_margins()
    with recording(margins), tempfile.TemporaryDirectory() as out:
        for folder in (ROOT / "tests" / "submissions" / assignment, ROOT / "tests" / "submissions" / "real_style" /
                       assignment):
            if not folder.is_dir():  # a new assignment has no real-style files yet
                continue
            grade_class(RunRequest(assignment=assignment, submissions_dir=folder,
                                   out_dir=Path(out) / folder.parent.name, force=True), RunOptions(job_processes=False))
    return margins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", default=ASSIGNMENTS)
    for assignment in parser.parse_args().assignments:
        for dtype, margins in measure(assignment).items():
            if not margins.compared:
                continue
            print(f"{assignment}, {dtype} answers: {margins.compared} comparisons; the closest pass used "
                  f"{margins.passed[0]:.2g} of its bound ({margins.passed[1]}), the closest failure exceeded it "
                  f"{margins.failed[0]:.3g} times ({margins.failed[1]})", flush=True)


if __name__ == "__main__":
    main()
