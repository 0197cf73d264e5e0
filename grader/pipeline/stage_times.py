"""Where a run's time goes, stage by stage: the figures `grader grade` prints and `make bench` reports.

Stages: ``read`` (reading and parsing the submission), ``execute`` (starting the student's process, running the
program and waiting for its answers: the student's code and the pipes), ``check`` (the grader's side of the checks:
inputs, references, comparisons, diagnoses), ``record`` (results.json and the gradebook) and ``report`` (rendering
the pages). Times are summed over submissions graded in parallel, so they add up to more than the wall time.
"""

from __future__ import annotations

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
