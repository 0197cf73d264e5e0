"""Where a run's time goes, stage by stage: the figures `grader grade` prints and `make bench` reports.

Stages: ``read`` (reading and parsing the submission), ``execute`` (starting the student's process, running the
program and waiting for its answers: the student's code and the pipes), ``check`` (the grader's side of the checks:
inputs, references, comparisons, diagnoses), ``record`` (results.json and the gradebook) and ``report`` (rendering
the pages). Times are summed over submissions graded in parallel, so they add up to more than the wall time.
``RenderTimes`` times the pages alone, reused results' included: the student pages must stay fast.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field

STAGES = ("read", "execute", "check", "record", "report")


class StageClock:
    """Seconds per stage, added to from the grading threads."""

    def __init__(self) -> None:
        self._seconds = dict.fromkeys(STAGES, 0.0)
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self._seconds[stage] += max(0.0, seconds)

    def seconds(self) -> dict[str, float]:
        with self._lock:
            return dict(self._seconds)

    def snapshot(self, submissions: int) -> StageTimes:
        with self._lock:
            return StageTimes(submissions, tuple(self._seconds.items()))


@dataclass(frozen=True)
class StageTimes:
    submissions: int = 0  # graded in this run (reused results are only reported)
    seconds: tuple[tuple[str, float], ...] = field(default_factory=lambda: tuple((s, 0.0) for s in STAGES))

    def summary(self) -> str:
        """'Time by stage (summed over submissions, 17 graded): read 0.1 s, execute 4.2 s (...)'."""
        total = sum(s for _, s in self.seconds) or 1.0
        parts = ", ".join(f"{stage} {seconds:.2f} s ({100 * seconds / total:.0f}%)" for stage, seconds in self.seconds)
        return f"Time by stage (summed over the {self.submissions} submission(s) graded): {parts}"


@dataclass(frozen=True)
class RenderTimes:
    """How long writing the pages took (rendering only, not writing the files): the student pages must stay fast."""

    pages: int = 0  # students, each with a student page and an instructor page
    student_s: float = 0.0
    instructor_s: float = 0.0
    dashboard_s: float = 0.0

    def add(self, student_s: float, instructor_s: float) -> RenderTimes:
        return dataclasses.replace(self, pages=self.pages + 1, student_s=self.student_s + student_s,
                                   instructor_s=self.instructor_s + instructor_s)

    def summary(self) -> str:
        """e.g. 'Reports: 17 student pages in 0.09 s (5.3 ms each); ...'"""
        if not self.pages:
            return f"Reports: no student pages; the dashboard in {1000 * self.dashboard_s:.1f} ms"
        each = 1000 / self.pages
        return (f"Reports: {self.pages} student pages in {self.student_s:.2f} s ({self.student_s * each:.1f} ms "
                f"each); {self.pages} instructor pages, with the notebook rendered by nbconvert, in "
                f"{self.instructor_s:.2f} s ({self.instructor_s * each:.0f} ms each); the dashboard in "
                f"{1000 * self.dashboard_s:.1f} ms")
