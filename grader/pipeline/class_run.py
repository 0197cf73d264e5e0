"""Grade a class: every submission in a folder, in parallel, each result recorded as it arrives.

A run into an output folder that already holds a gradebook resumes: submissions whose stored result still holds
(same content, same grading fingerprint; see ``resume``) are not graded again, and grades.csv, the dashboard and the
students' pages cover the whole class, reused results and new ones alike. ``force`` regrades everyone.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
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
from grader.pipeline.fingerprint import grading_fingerprint
from grader.pipeline.resume import check_students, plan_resume
from grader.pipeline.stage_times import StageClock, StageTimes
from grader.pipeline.submission_run import grade_submission, unrun_questions
from grader.record import Gradebook, gradescope_results, write_grades_csv, write_lms_csv, write_text_atomic
from grader.record.atomic import remove_partial_writes
from grader.record.output_lock import output_lock
from grader.report import render_dashboard, render_instructor_report, render_student_report
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
        return RenderTimes(self.pages + 1, self.student_s + student_s, self.instructor_s + instructor_s,
                           self.dashboard_s)

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
    results: tuple[SubmissionResult, ...]  # the whole class: graded now and reused
    skipped: tuple[Skipped, ...]
    unchanged: tuple[str, ...] = ()  # students whose stored result was reused, not regraded
    missing: tuple[str, ...] = ()  # students in the gradebook with no submission now (kept there)
    held_back: tuple[str, ...] = ()  # not graded for --student, though new or changed since their stored result
    rendering: RenderTimes = RenderTimes()
    stages: StageTimes = field(default_factory=StageTimes)  # where the time went (summed over submissions)
    adjustments: AdjustmentReport = field(default_factory=AdjustmentReport)  # manual marks, late penalties

    @property
    def graded_now(self) -> int:
        return len(self.results) - len(self.unchanged)

    @property
    def internal_errors(self) -> int:
        """Checks or submissions the grader itself failed on: the only reason for a non-zero exit."""
        return sum(1 for r in self.results if r.status == INTERNAL) + sum(
            1 for r in self.results for c in r.checks if c.status == INTERNAL)

    @property
    def dashboard(self) -> Path:
        return self.out_dir / "index.html"


def _internal_error(submission: Submission, assignment: Assignment, root: Path) -> SubmissionResult:
    detail = traceback.format_exc()
    reason = "the grader itself failed on this submission (not the student's fault)"
    return SubmissionResult(
        student=submission.student, assignment=assignment.name, source=str(submission.path.relative_to(root)),
        kind=submission.kind, sha256="", status=INTERNAL, reason=reason,
        questions=unrun_questions(assignment, submission.student, f"not run: {reason}"), units=(), answers=(),
        notes=(detail[-2000:],), submitted_at=submission.submitted_at.isoformat(timespec="seconds"),
        graded_at=datetime.now(UTC).isoformat(timespec="seconds"), duration_s=0.0)


def _write_student(out_dir: Path, result: SubmissionResult, title: str, submission: Submission | None,
                   clock: StageClock | None = None) -> tuple[float, float]:
    """Write a student's files; return how long rendering their page and their instructor page took."""
    folder = out_dir / "students" / result.student
    recording = time.perf_counter()
    write_text_atomic(folder / "results.json", json.dumps(gradescope_results(result), indent=2) + "\n")
    started = time.perf_counter()
    if clock is not None:
        clock.add("record", started - recording)
    page = render_student_report(result, title=title)
    rendered = time.perf_counter()
    instructor_page = render_instructor_report(result, title=title, submission=submission)
    done = time.perf_counter()
    write_text_atomic(folder / "instructor.html", instructor_page)
    write_text_atomic(folder / "report.html", page)
    if clock is not None:
        clock.add("report", time.perf_counter() - started)
    return rendered - started, done - rendered


def grade_class(*, assignment: str, submissions_dir: Path, out_dir: Path, jobs: int | None = None,
                solutions_dir: Path = SOLUTIONS_DIR, device: str = "cpu", force: bool = False,
                limit_overrides: Sequence[str] = (), sandbox: str = "auto", layout: str = "auto",
                progress: Progress | None = None, planned: Planned | None = None,
                late: LateOverride | None = None, students: Sequence[str] = ()) -> ClassRun:
    """Grade every submission in ``submissions_dir`` into ``out_dir``; with ``students`` (``--student``), grade only
    theirs and report everyone else's stored result as it is (see ``resume``).

    ``limit_overrides`` are ``name=value`` pairs applied over the assignment's limits; ``sandbox`` is the
    isolation mode (auto, require, off; see grader.execute.isolation); ``layout`` the submissions folder's (auto,
    flat, nbgrader, gradescope; see grader.discover.layouts).
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
                             planned=planned, rule=rule, students=students)


def _grade_locked(spec: Assignment, submissions: list[Submission], skipped: list[Skipped], *, submissions_dir: Path,
                  out_dir: Path, jobs: int | None, device: str, force: bool, limits: Limits, layers: Sandbox,
                  progress: Progress | None, planned: Planned | None,
                  rule: DeadlineRule | None = None, students: Sequence[str] = ()) -> ClassRun:
    remove_partial_writes(out_dir)
    # Manual marks and late penalties go on top of every result written, the reused ones included (grader/adjust).
    adjust = Adjustments(out_dir, spec, rule or deadline_rule(spec.deadline, spec.late, None))
    fingerprint = grading_fingerprint(spec, device=device, limits=limits)

    workers = jobs or os.cpu_count() or 1
    # One warm worker per job: each imports torch once and forks a process per submission (grader/execute/workers.py).
    warm = WorkerPool(size=workers, sandbox=layers, device=device, limits=limits)

    def grade(submission: Submission) -> SubmissionResult:
        try:
            with warm.acquire() as worker:
                return grade_submission(submission=submission, assignment=spec, root=submissions_dir, device=device,
                                        limits=limits, sandbox=layers, worker=worker, clock=clock)
        except Exception:  # a grader bug on one submission must not cost the class its results
            return _internal_error(submission, spec, submissions_dir)

    graded: list[SubmissionResult] = []
    clock = StageClock()
    by_student = {s.student: s for s in submissions}
    times = RenderTimes()
    with Gradebook(out_dir / "gradebook.sqlite") as book:
        plan = plan_resume(submissions, book.stored(spec.name), fingerprint=fingerprint, root=submissions_dir,
                           force=force, only=students)
        if planned is not None:
            planned(len(plan.to_grade), len(plan.reused))
        with warm, ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(grade, s) for s in plan.to_grade]
            reused_now = []
            for stored in plan.reused:  # rendered again from the stored result while the workers grade
                reused = adjust.apply(stored, by_student.get(stored.student))
                times = times.add(*_write_student(out_dir, reused, spec.title, by_student.get(reused.student)))
                if reused != stored:  # new marks or a new deadline: the gradebook's totals follow them
                    book.record(reused, fingerprint=fingerprint)
                reused_now.append(reused)
            for future in as_completed(futures):
                result = adjust.apply(future.result(), by_student.get(future.result().student))
                times = times.add(*_write_student(out_dir, result, spec.title, by_student.get(result.student),
                                                  clock))
                recording = time.perf_counter()
                book.record(result, fingerprint=fingerprint)  # after its files: a row means its pages exist
                clock.add("record", time.perf_counter() - recording)
                graded.append(result)
                if progress is not None:
                    progress(result, len(graded), len(plan.to_grade))
    results = sorted([*graded, *reused_now], key=lambda r: r.student)
    adjusted = adjust.finish(results, missing=plan.missing)  # manual.csv written again, marks kept
    write_grades_csv(out_dir / "grades.csv", results)
    write_lms_csv(out_dir / "lms.csv", results)
    max_score = spec.max_score
    started = time.perf_counter()
    dashboard = render_dashboard(results, title=spec.title, skipped=skipped, max_score=max_score)
    times = dataclasses.replace(times, dashboard_s=time.perf_counter() - started)
    write_text_atomic(out_dir / "index.html", dashboard)
    return ClassRun(spec.name, out_dir, tuple(results), tuple(skipped),
                    unchanged=tuple(sorted(r.student for r in plan.reused)), missing=plan.missing, rendering=times,
                    held_back=plan.held_back,
                    stages=clock.snapshot(len(graded)),
                    adjustments=adjusted)
