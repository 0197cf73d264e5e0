"""Grade a class: every submission in a folder, in parallel, each result recorded as it arrives.

A run into an output folder that already holds a gradebook resumes: submissions whose stored result still holds
(same content, same grading fingerprint; see ``resume``) are not graded again, and grades.csv, the dashboard and the
students' pages cover the whole class, reused results and new ones alike. ``force`` regrades everyone.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import queue
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from grader.adjust import AdjustmentReport, Adjustments, DeadlineRule, LateOverride, deadline_rule
from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import Skipped, Submission, discover
from grader.execute import isolation
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits
from grader.execute.workers import WorkerPool
from grader.layout import SOLUTIONS_DIR
from grader.pipeline.distributed import DaskGrading, Grading
from grader.pipeline.fingerprint import grading_fingerprint
from grader.pipeline.handback import Handback, similarity, write_platform_files
from grader.pipeline.job_processes import PROCESSES_FROM, JobProcesses, JobSettings, PagesSettings
from grader.pipeline.resume import check_students, plan_resume
from grader.pipeline.stage_times import StageClock, StageTimes
from grader.pipeline.student_files import STUDENT_FILES, write_student_files
from grader.pipeline.submission_run import grade_submission, unrun_questions
from grader.record import Gradebook, write_grades_csv, write_lms_csv, write_text_atomic
from grader.record.atomic import remove_partial_writes
from grader.record.output_lock import output_lock
from grader.report import render_dashboard
from grader.results import INTERNAL, SubmissionResult

Progress = Callable[[SubmissionResult, int, int], None]  # (result, graded so far, to grade in this run)
Planned = Callable[[int, int], None]  # (to grade in this run, unchanged since an earlier run)


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


@dataclass(frozen=True)
class ClassRun:
    assignment: str
    out_dir: Path
    # The whole class, graded now and reused, each without its pages' material (SubmissionResult.summary): a run's
    # memory does not grow with the class. ``results`` reads the whole results back from the gradebook.
    summaries: tuple[SubmissionResult, ...]
    skipped: tuple[Skipped, ...]
    unchanged: tuple[str, ...] = ()  # students whose stored result was reused, not regraded
    missing: tuple[str, ...] = ()  # students in the gradebook with no submission now (kept there)
    held_back: tuple[str, ...] = ()  # not graded for --student, though new or changed since their stored result
    rendering: RenderTimes = RenderTimes()
    stages: StageTimes = field(default_factory=StageTimes)  # where the time went (summed over submissions)
    job_processes: int = 0  # processes that graded in parallel (0: threads of the run's own process, or a cluster)
    job_peak_mib: int = 0  # the largest of their peak memories
    adjustments: AdjustmentReport = field(default_factory=AdjustmentReport)  # manual marks, late penalties
    regraded: tuple[str, ...] = ()  # students the grader failed on once, graded again in a fresh process

    @functools.cached_property
    def results(self) -> tuple[SubmissionResult, ...]:
        """The class's whole results (heatmaps, traces, output...), read back from the gradebook."""
        with Gradebook(self.out_dir / "gradebook.sqlite") as book:
            whole = [book.result(self.assignment, r.student) for r in self.summaries]
        return tuple(w if w is not None else r for w, r in zip(whole, self.summaries))

    @property
    def graded_now(self) -> int:
        return len(self.summaries) - len(self.unchanged)

    @property
    def internal_errors(self) -> int:
        """Checks or submissions the grader itself failed on: the only reason for a non-zero exit."""
        return sum(1 for r in self.summaries if r.status == INTERNAL) + sum(
            1 for r in self.summaries for c in r.checks if c.status == INTERNAL)

    @property
    def dashboard(self) -> Path:
        return self.out_dir / "index.html"


def grader_failed(outcome: SubmissionResult | BaseException) -> bool:
    """Whether the grader itself failed on a submission or one of its checks (never the student's doing)."""
    return isinstance(outcome, BaseException) or outcome.grader_failed


def _internal_error(submission: Submission, assignment: Assignment, root: Path,
                    error: BaseException) -> SubmissionResult:
    detail = "".join(traceback.format_exception(error))
    reason = "the grader itself failed on this submission (not the student's fault)"
    return SubmissionResult(
        student=submission.student, assignment=assignment.name, source=str(submission.path.relative_to(root)),
        kind=submission.kind, sha256="", status=INTERNAL, reason=reason,
        questions=unrun_questions(assignment, submission.student, f"not run: {reason}"), units=(), answers=(),
        notes=(), grader_trace=detail[-2000:], submitted_at=submission.submitted_at.isoformat(timespec="seconds"),
        graded_at=datetime.now(UTC).isoformat(timespec="seconds"), duration_s=0.0)


def grade_class(*, assignment: str, submissions_dir: Path, out_dir: Path, jobs: int | None = None,
                solutions_dir: Path = SOLUTIONS_DIR, device: str = "cpu", force: bool = False,
                limit_overrides: Sequence[str] = (), sandbox: str = "auto", layout: str = "auto",
                progress: Progress | None = None, planned: Planned | None = None,
                late: LateOverride | None = None, students: Sequence[str] = (),
                scheduler: str | None = None, job_processes: bool | None = None,
                handback: Handback | None = None) -> ClassRun:
    """Grade every submission in ``submissions_dir`` into ``out_dir``; with ``students`` (``--student``), grade only
    theirs and report everyone else's stored result as it is (see ``resume``).

    ``limit_overrides`` are ``name=value`` pairs applied over the assignment's limits; ``sandbox`` is the
    isolation mode (auto, require, off; see grader.execute.isolation); ``layout`` the submissions folder's (auto,
    flat, nbgrader, gradescope; see grader.discover.layouts); ``scheduler`` the address of a Dask scheduler whose
    workers grade the submissions (grader.pipeline.distributed) instead of this machine's; ``job_processes`` whether
    parallel jobs are processes or threads (None: processes for a large class; see job_processes.py); ``handback``
    what is written for the course beyond the grades (a platform's imports, similar submissions; handback.py).
    """
    spec = load_assignment(assignment, solutions_dir=solutions_dir)
    limits = spec.limits.with_overrides(limit_overrides)
    rule = deadline_rule(spec.deadline, spec.late, late)  # ``late``: the run's --deadline and late rule
    layers = isolation.detect(sandbox)
    submissions, skipped = discover(submissions_dir, layout=layout, assignment=spec.name)
    check_students(students, submissions, submissions_dir)
    with output_lock(out_dir):
        return _grade_locked(spec, submissions, skipped, submissions_dir=submissions_dir, out_dir=out_dir, jobs=jobs,
                             device=device, force=force, limits=limits, layers=layers, progress=progress,
                             planned=planned, rule=rule, students=students, scheduler=scheduler,
                             job_processes=job_processes, handback=handback or Handback())


def _grade_locked(spec: Assignment, submissions: list[Submission], skipped: list[Skipped], *, submissions_dir: Path,
                  out_dir: Path, jobs: int | None, device: str, force: bool, limits: Limits, layers: Sandbox,
                  progress: Progress | None, planned: Planned | None,
                  rule: DeadlineRule | None = None, students: Sequence[str] = (),
                  scheduler: str | None = None, job_processes: bool | None = None,
                  handback: Handback = Handback()) -> ClassRun:  # noqa: B008  (frozen: one shared default is safe)
    remove_partial_writes(out_dir)
    # Manual marks and late penalties go on top of every result written, the reused ones included (grader/adjust).
    adjust = Adjustments(out_dir, spec, rule or deadline_rule(spec.deadline, spec.late, None))
    fingerprint = grading_fingerprint(spec, device=device, limits=limits)
    clock = StageClock()
    times = RenderTimes()
    by_student = {s.student: s for s in submissions}
    summaries: list[SubmissionResult] = []
    graded = 0
    job_pool: JobProcesses | None = None  # job processes grading (None: threads of this process, or a cluster)
    with Gradebook(out_dir / "gradebook.sqlite") as book, ExitStack() as stack:
        plan = plan_resume(submissions, book.stored(spec.name, summaries=True), fingerprint=fingerprint,
                           root=submissions_dir, force=force, only=students)
        if planned is not None:
            planned(len(plan.to_grade), len(plan.reused))
        if scheduler:
            remote = DaskGrading(scheduler)
            stack.callback(remote.close)
            arriving = ((submission, outcome, None) for submission, outcome in remote.grade(
                plan.to_grade, root=submissions_dir, grading=Grading(spec.name, fingerprint, device, limits,
                                                                     layers.mode)))
        else:
            workers = min(jobs or os.cpu_count() or 1, max(1, len(plan.to_grade)))
            if workers > 1 and (job_processes if job_processes is not None else
                                len(plan.to_grade) >= PROCESSES_FROM):
                assert spec.folder is not None
                job_pool = JobProcesses(workers, JobSettings(spec.name, spec.folder.parent, submissions_dir, device,
                                                             limits, layers.mode, PagesSettings(out_dir, adjust.rule)))
                stack.callback(job_pool.close)
            in_threads = functools.partial(_in_threads, stack, spec=spec, root=submissions_dir, workers=workers,
                                           device=device, limits=limits, layers=layers, clock=clock)
            arriving = in_threads(plan.to_grade) if job_pool is None else \
                _in_processes(job_pool, plan.to_grade, clock=clock, fallback=in_threads)
        for stored in plan.reused:  # reported again while the submissions are graded
            summary, rendered = _report_again(book, stored, spec=spec, out_dir=out_dir, adjust=adjust,
                                              submission=by_student.get(stored.student), fingerprint=fingerprint)
            summaries.append(summary)
            if rendered is not None:
                times = times.add(*rendered)
        def record(submission: Submission, outcome: SubmissionResult | BaseException,
                   rendered: tuple[float, float] | None) -> None:
            nonlocal graded, times
            if isinstance(outcome, SubmissionResult) and rendered is not None:
                result = outcome  # adjusted, its files written, by the job process that graded it
            else:
                result = outcome if isinstance(outcome, SubmissionResult) else \
                    _internal_error(submission, spec, submissions_dir, outcome)
                result = adjust.apply(result, submission)
                rendered = write_student_files(out_dir, result, spec.title, submission, clock)
            times = times.add(*rendered)
            recording = time.perf_counter()
            book.record(result, fingerprint=fingerprint)  # after its files: a row means its pages exist
            clock.add("record", time.perf_counter() - recording)
            summaries.append(result.summary())
            graded += 1
            if progress is not None:
                progress(result, graded, len(plan.to_grade))

        failed: list[Submission] = []  # graded again, once, before their results are recorded
        for submission, outcome, rendered in arriving:
            if grader_failed(outcome):
                failed.append(submission)
            else:
                record(submission, outcome, rendered)
        if failed:
            print(f"note: the grader failed on {len(failed)} submission(s) ({', '.join(s.student for s in failed)}); "
                  "grading them again in a fresh process", file=sys.stderr, flush=True)
            for submission, outcome, rendered in _again(stack, failed, spec=spec, root=submissions_dir,
                                                        device=device, limits=limits, layers=layers, clock=clock,
                                                        pages=PagesSettings(out_dir, adjust.rule)):
                record(submission, outcome, rendered)
    results = sorted(summaries, key=lambda r: r.student)
    # manual.csv written again, marks kept (also of students held back by --student, who have no result here)
    adjusted = adjust.finish(results, missing=(*plan.missing, *plan.held_back))
    write_grades_csv(out_dir / "grades.csv", results, submissions=by_student)
    write_lms_csv(out_dir / "lms.csv", results)
    write_platform_files(out_dir, submissions, results, handback, title=spec.title)
    similar = similarity(out_dir, spec.name, submissions, handback, title=spec.title)
    started = time.perf_counter()
    dashboard = render_dashboard(results, title=spec.title, skipped=skipped, max_score=spec.max_score,
                                 similarity=similar)
    times = dataclasses.replace(times, dashboard_s=time.perf_counter() - started)
    write_text_atomic(out_dir / "index.html", dashboard)
    return ClassRun(spec.name, out_dir, tuple(results), tuple(skipped),
                    unchanged=tuple(sorted(r.student for r in plan.reused)), missing=plan.missing,
                    rendering=times, held_back=plan.held_back, stages=clock.snapshot(graded),
                    adjustments=adjusted, job_processes=job_pool.size if job_pool else 0,
                    job_peak_mib=job_pool.peak_mib if job_pool else 0,
                    regraded=tuple(sorted(s.student for s in failed)))


Arrival = tuple[Submission, SubmissionResult | BaseException, tuple[float, float] | None]  # None: pages not written


def _in_processes(job_pool: JobProcesses, to_grade: Sequence[Submission], *, clock: StageClock,
                  fallback: Callable[[Sequence[Submission]], Iterator[Arrival]]) -> Iterator[Arrival]:
    """The job processes' results (job_processes.py); what a job process that died (or never started) left goes
    to ``fallback``, threads of this process."""
    lost: list[Submission] = []
    for submission, outcome, rendered in job_pool.grade(to_grade, clock):
        if isinstance(outcome, BrokenProcessPool):
            lost.append(submission)
        else:
            yield submission, outcome, rendered
    if lost:
        print(f"warning: the grading processes stopped ({job_pool.failure or 'no reason given'}); grading "
              f"the {len(lost)} submission(s) left in this process", file=sys.stderr, flush=True)
        yield from fallback(lost)


def _again(stack: ExitStack, failed: Sequence[Submission], *, spec: Assignment, root: Path, device: str,
           limits: Limits, layers: Sandbox, clock: StageClock, pages: PagesSettings) -> Iterator[Arrival]:
    """The submissions the grader failed on, graded again by a job process started for them: a fresh interpreter
    and a fresh warm worker, whatever state the first attempt left in this process, its threads or its worker (a
    cluster's included). Its files are written there as in any job process; what a second failure leaves is
    recorded as it is."""
    assert spec.folder is not None
    again = JobProcesses(1, JobSettings(spec.name, spec.folder.parent, root, device, limits, layers.mode, pages))
    stack.callback(again.close)
    fallback = functools.partial(_in_threads, stack, spec=spec, root=root, workers=1, device=device, limits=limits,
                                 layers=layers, clock=clock)
    yield from _in_processes(again, failed, clock=clock, fallback=fallback)


def _in_threads(stack: ExitStack, to_grade: Sequence[Submission], *, spec: Assignment, root: Path, workers: int,
                device: str, limits: Limits, layers: Sandbox, clock: StageClock) -> Iterator[Arrival]:
    """Grade on this machine, ``workers`` at a time, each a thread with a warm worker (grader/execute/workers.py)
    that imports torch once and forks a process per submission; results in the order they finish."""
    warm = stack.enter_context(WorkerPool(size=workers, sandbox=layers, device=device, limits=limits))
    pool = stack.enter_context(ThreadPoolExecutor(max_workers=workers))  # shut down before the workers close

    # Results go through a queue, not the futures: a finished future keeps its result for as long as the future is
    # held, and the whole class's results would stay in memory until the end of the run.
    arrived: queue.Queue[tuple[Submission, SubmissionResult | BaseException]] = queue.Queue()

    def grade(submission: Submission) -> None:
        try:
            with warm.acquire() as worker:
                arrived.put((submission, grade_submission(submission=submission, assignment=spec, root=root,
                                                          device=device, limits=limits, sandbox=layers,
                                                          worker=worker, clock=clock)))
        except Exception as exc:  # a grader bug on one submission must not cost the class its results
            arrived.put((submission, exc))

    for submission in to_grade:
        pool.submit(grade, submission)
    for _ in to_grade:
        submission, outcome = arrived.get()
        yield submission, outcome, None


def _report_again(book: Gradebook, stored: SubmissionResult, *, spec: Assignment, out_dir: Path, adjust: Adjustments,
                  submission: Submission | None,
                  fingerprint: str) -> tuple[SubmissionResult, tuple[float, float] | None]:
    """A reused result, with this run's manual marks and late penalty: its pages are written again only when those
    changed it or a page is missing (the stored one is read whole only then). Its summary, and how long its pages
    took to render if they were."""
    adjusted = adjust.apply(stored, submission)
    folder = out_dir / "students" / stored.student
    if adjusted == stored and all((folder / name).is_file() for name in STUDENT_FILES):
        return adjusted, None
    whole = book.result(spec.name, stored.student)
    result = adjust.apply(whole, submission) if whole is not None else adjusted
    rendered = write_student_files(out_dir, result, spec.title, submission)
    if adjusted != stored:  # new marks or a new deadline: the gradebook's totals follow them
        book.record(result, fingerprint=fingerprint)
    return result.summary(), rendered
