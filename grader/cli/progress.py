"""How `grader grade` shows a class being graded: a progress bar on a terminal, a line per student in a log.

On a terminal (rich): one bar with the count graded, the time spent and the time left, and above it a line for each
submission that could not be graded fully (timed out, crashed, unreadable), so a class of hundreds does not scroll
away. Anywhere else (CI, a file, a pipe): one line per student as each result is recorded, as `grep` and the tests
read it.
"""

from __future__ import annotations

import sys
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from grader.names import terminal_text
from grader.results import GRADED, SubmissionResult


def result_line(result: SubmissionResult, done: int, total: int) -> str:
    status = "" if result.status == GRADED else f"  {result.status}: {terminal_text(result.reason[:80])}"
    return (f"[{done:>{len(str(total))}}/{total}] {terminal_text(result.student):<28} {result.score:>6g} / "
            f"{result.max_score:g}"
            f"  ({result.duration_s:.1f} s){status}")


class ProgressDisplay:
    """Use as a context manager around grading; ``planned`` and ``advance`` are grade_class's callbacks."""

    def __init__(self, *, bar: bool | None = None) -> None:
        self.bar = sys.stdout.isatty() if bar is None else bar
        self._progress: Progress | None = None
        self._task: int | None = None

    def __enter__(self) -> ProgressDisplay:
        if self.bar:
            self._progress = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TextColumn("·"),
                                      TimeElapsedColumn(), TextColumn("· left"), TimeRemainingColumn(),
                                      console=Console(), transient=True)
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()

    def planned(self, to_grade: int) -> None:
        if self._progress is not None:
            self._task = self._progress.add_task("grading", total=to_grade)

    def advance(self, result: SubmissionResult, done: int, total: int) -> None:
        if self._progress is None or self._task is None:
            print(result_line(result, done, total), flush=True)
            return
        if result.status != GRADED:
            self._progress.console.print(result_line(result, done, total), markup=False, highlight=False)
        self._progress.update(self._task, completed=done)
