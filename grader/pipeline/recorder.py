"""How a class run records what arrives: each result adjusted (manual marks, late penalty), its files written, then
its gradebook row, as it arrives; and each reused result reported again with this run's adjustments."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from grader.adjust import Adjustments
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.errors import StorageError
from grader.pipeline.backends import Arrival
from grader.pipeline.stage_times import RenderTimes, StageClock
from grader.pipeline.student_files import write_student_files
from grader.pipeline.submission_run import grader_failed_result
from grader.record import Gradebook
from grader.record.output import OutputFolder
from grader.results import SubmissionResult
from grader.storage import Refused

Progress = Callable[[SubmissionResult, int, int], None]  # (result, graded so far, to grade in this run)


def grader_failed(outcome: SubmissionResult | BaseException) -> bool:
    """Whether the grader itself failed on a submission or one of its checks (never the student's doing)."""
    return isinstance(outcome, BaseException) or outcome.grader_failed


class Recorder:
    """The run's results so far: ``summaries`` (each without its pages' material), ``times`` (the pages'),
    ``graded`` (in this run, not reused)."""

    def __init__(self, book: Gradebook, spec: Assignment, *, root: Path, fingerprint: str, out: OutputFolder,
                 adjust: Adjustments, clock: StageClock, submissions: Mapping[str, Submission],
                 progress: Progress | None, to_grade: int, folders: Mapping[str, str] | None = None) -> None:
        self.book, self.spec, self.root, self.fingerprint, self.out = book, spec, root, fingerprint, out
        # The folders an earlier run wrote each student's files to (OUT/student-folders.json): a reused result's
        # pages are written again unless they are where this run puts them.
        self.folders = folders or {}
        self.adjust, self.clock, self.submissions = adjust, clock, submissions
        self.progress, self.to_grade = progress, to_grade
        self.summaries: list[SubmissionResult] = []
        self.times = RenderTimes()
        self.graded = 0

    def take(self, arriving: Iterable[Arrival]) -> list[Submission]:
        """Record every arrival but those the grader failed on, which are returned to be graded again."""
        failed = []
        for submission, outcome, rendered in arriving:
            if isinstance(outcome, StorageError):  # a job process's write refused: ends the run, as the run's own
                raise outcome
            if grader_failed(outcome):
                failed.append(submission)
            else:
                self.record(submission, outcome, rendered)
        return failed

    @contextmanager
    def refusals(self, total: int) -> Iterator[None]:
        """A refused write (a full disk, a read-only folder) raised in the block says how far the run got: the
        students recorded so far, of ``total``, stay."""
        try:
            yield
        except Refused as exc:
            raise exc.told(out=self.out.path, so_far=f"{len(self.summaries)} of {total} students graded and "
                           "recorded so far, and kept: the same command, once that is fixed, goes on from there") \
                from exc.__cause__

    def record(self, submission: Submission, outcome: SubmissionResult | BaseException,
               rendered: tuple[float, float] | None) -> None:
        if isinstance(outcome, StorageError):
            raise outcome
        if isinstance(outcome, SubmissionResult) and rendered is not None:
            result = outcome  # adjusted, its files written, by the job process that graded it
        else:
            result = outcome if isinstance(outcome, SubmissionResult) else grader_failed_result(
                submission, self.spec, self.root, detail="".join(traceback.format_exception(outcome)))
            result = self.adjust.apply(result, submission)
            rendered = write_student_files(self.out.path, result, self.spec.title, submission, self.clock)
        self.times = self.times.add(*rendered)
        recording = time.perf_counter()
        self.book.record(result, fingerprint=self.fingerprint)  # after its files: a row means its pages exist
        self.clock.add("record", time.perf_counter() - recording)
        self.summaries.append(result.summary())
        self.graded += 1
        if self.progress is not None:
            self.progress(result, self.graded, self.to_grade)

    def report_again(self, stored: SubmissionResult) -> None:
        """A reused result, with this run's manual marks and late penalty: its pages are written again only when
        those changed it or a page is missing (the stored one is read whole only then)."""
        submission = self.submissions.get(stored.student)
        adjusted = self.adjust.apply(stored, submission)
        folder = self.out.student(stored.student)
        if adjusted == stored and self.folders.get(stored.student) == folder.path.name and folder.complete():
            self.summaries.append(adjusted)
            return
        whole = self.book.result(self.spec.name, stored.student)
        result = self.adjust.apply(whole, submission) if whole is not None else adjusted
        self.times = self.times.add(*write_student_files(self.out.path, result, self.spec.title, submission))
        if adjusted != stored:  # new marks or a new deadline: the gradebook's totals follow them
            self.book.record(result, fingerprint=self.fingerprint)
        self.summaries.append(result.summary())
