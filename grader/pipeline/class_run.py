"""Grade a class: every submission in a folder, in parallel, each result recorded as it arrives.

A run into an output folder that already holds a gradebook resumes: submissions whose stored result still holds
(same content, same grading fingerprint; see ``resume``) are not graded again, and grades.csv, the dashboard and the
students' pages cover the whole class, reused results and new ones alike. ``force`` regrades everyone.

A run, step by step (``_grade_locked``): plan what to grade and what to reuse (resume.py), report the reused results
again, take the results as the back-end hands them over (backends/, recorder.py), grade again once in a fresh process
what the grader failed on, and finish: manual.csv, grades.csv, lms.csv, the platform's files, the dashboard.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from grader.adjust import AdjustmentReport, Adjustments, DeadlineRule, deadline_rule
from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import Discovery, Skipped, Submission, detect_layout, discover_all
from grader.execute import isolation
from grader.files import remove_partial_writes, write_text_atomic
from grader.names import student_id, terminal_text
from grader.pipeline.accounting import pages_placed, read_student_folders, write_student_folders
from grader.pipeline.backends import choose_backend, closing, fresh_process
from grader.pipeline.fingerprint import grading_fingerprint
from grader.pipeline.handback import Handback, check_handback, similarity, write_platform_files
from grader.pipeline.recorder import Progress, Recorder, grader_failed
from grader.pipeline.request import Planned, RunEvents, RunOptions, RunRequest, Started
from grader.pipeline.resume import ResumePlan, check_students, plan_resume
from grader.pipeline.settings import PagesSettings, RunSettings
from grader.pipeline.stage_times import RenderTimes, StageClock, StageTimes
from grader.record import Gradebook, write_grades_csv, write_lms_csv
from grader.record.accounting import Accounting, write_accounting
from grader.record.output import OutputFolder
from grader.record.output_lock import output_lock
from grader.report import render_dashboard
from grader.results import INTERNAL, SubmissionResult

__all__ = ["ClassRun", "Planned", "Progress", "RunEvents", "RunOptions", "RunRequest", "Started", "grade_class",
           "grader_failed"]


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
    rendering: RenderTimes = field(default_factory=RenderTimes)
    stages: StageTimes = field(default_factory=StageTimes)  # where the time went (summed over submissions)
    job_processes: int = 0  # processes that graded in parallel (0: threads of the run's own process, or a cluster)
    job_peak_mib: int = 0  # the largest of their peak memories
    adjustments: AdjustmentReport = field(default_factory=AdjustmentReport)  # manual marks, late penalties
    regraded: tuple[str, ...] = ()  # students the grader failed on once, graded again in a fresh process
    accounting: Accounting | None = None  # what the run found, graded and wrote (accounting.py)

    @functools.cached_property
    def results(self) -> tuple[SubmissionResult, ...]:
        """The class's whole results (heatmaps, traces, output...), read back from the gradebook."""
        with Gradebook(OutputFolder(self.out_dir).gradebook) as book:
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
        return OutputFolder(self.out_dir).dashboard



@dataclass(frozen=True)
class RunChoices:
    """How and whom a run grades, and what it hands back: none of it changes a result."""

    rule: DeadlineRule  # the deadline and late rule (the assignment's, or the run's --deadline and late rule)
    force: bool = False
    students: Sequence[str] = ()  # --student: only these
    jobs: int | None = None
    scheduler: str | None = None
    job_processes: bool | None = None
    handback: Handback = field(default_factory=Handback)
    progress: Progress | None = None
    planned: Planned | None = None


DEFAULT_OPTIONS, NO_EVENTS = RunOptions(), RunEvents()


def grade_class(request: RunRequest, options: RunOptions = DEFAULT_OPTIONS, events: RunEvents = NO_EVENTS) -> ClassRun:
    """Grade every submission in ``request.submissions_dir`` into ``request.out_dir``; with ``request.students``
    (``--student``), grade only theirs and report everyone else's stored result as it is (see ``resume``)."""
    assignment, submissions_dir, out_dir = request.assignment, request.submissions_dir, request.out_dir
    solutions_dir, device = request.solutions_dir, options.device
    spec = load_assignment(assignment, solutions_dir=solutions_dir)
    students = [student_id(s) for s in request.students]  # as discovery keeps ids: typed on a Mac, the same student
    limits = spec.limits.with_overrides(options.limit_overrides)
    rule = deadline_rule(spec.deadline, spec.late, request.late)  # the run's --deadline and late rule
    layers = isolation.detect(options.sandbox)
    found_layout = detect_layout(submissions_dir, request.layout)
    if events.started is not None:
        events.started(layers, found_layout)
    found = discover_all(submissions_dir, layout=found_layout, assignment=spec.name)
    check_students(students, found.submissions, submissions_dir)
    check_handback(request.handback, found.submissions)
    settings = RunSettings(assignment=spec.name, root=submissions_dir,
                           solutions_dir=spec.folder.parent if spec.folder is not None else solutions_dir,
                           device=device, limits=limits, sandbox=layers.mode,
                           fingerprint=grading_fingerprint(spec, device=device, limits=limits),
                           exposed=layers.exposure())
    choices = RunChoices(rule, force=request.force, students=students, jobs=options.jobs,
                         scheduler=options.scheduler, job_processes=options.job_processes, handback=request.handback,
                         progress=events.progress, planned=events.planned)
    with output_lock(out_dir):
        return _grade_locked(spec, settings, found, OutputFolder(out_dir), choices)


def _grade_locked(spec: Assignment, settings: RunSettings, found: Discovery, out: OutputFolder,
                  choices: RunChoices) -> ClassRun:
    remove_partial_writes(out.path)
    # Manual marks and late penalties go on top of every result written, the reused ones included (grader/adjust).
    adjust = Adjustments(out.path, spec, choices.rule)
    pages = PagesSettings(out.path, adjust.rule, adjust.review)
    clock = StageClock()
    with Gradebook(out.gradebook) as book, ExitStack() as stack:
        plan = plan_resume(found.submissions, book.stored(spec.name, summaries=True),
                           fingerprint=settings.fingerprint, root=settings.root, force=choices.force,
                           only=choices.students, exposed=settings.exposed)
        if choices.planned is not None:
            choices.planned(len(plan.to_grade), len(plan.reused))
        backend = choose_backend(spec, settings, pages, to_grade=len(plan.to_grade), jobs=choices.jobs,
                                 scheduler=choices.scheduler, job_processes=choices.job_processes)
        stack.enter_context(closing(backend))  # stopped at once if the run ends early: a signal, a full disk
        recorder = Recorder(book, spec, root=settings.root, fingerprint=settings.fingerprint, out=out,
                            adjust=adjust, clock=clock, submissions=found.by_student, progress=choices.progress,
                            to_grade=len(plan.to_grade), folders=read_student_folders(out))
        stack.enter_context(recorder.refusals(len(plan.to_grade) + len(plan.reused)))
        for stored in plan.reused:  # reported again before the back-end's results are taken
            recorder.report_again(stored)
        failed = recorder.take(backend.grade(plan.to_grade, clock))
        if failed:
            names = ", ".join(terminal_text(s.student) for s in failed)
            print(f"note: the grader failed on {len(failed)} submission(s) ({names}); grading them again in a fresh "
                  "process", file=sys.stderr, flush=True)
            again = fresh_process(spec, settings, pages)
            stack.enter_context(closing(again))
            for submission, outcome, rendered in again.grade(failed, clock):
                recorder.record(submission, outcome, rendered)  # what a second failure leaves, as it is
    with recorder.refusals(len(plan.to_grade) + len(plan.reused)):
        return _finish(spec, found, out, choices, plan, adjust, recorder, clock,
                       processes=(backend.processes, backend.peak_mib), regraded=failed)


def _finish(spec: Assignment, found: Discovery, out: OutputFolder, choices: RunChoices, plan: ResumePlan,
            adjust: Adjustments, recorder: Recorder, clock: StageClock, *, processes: tuple[int, int],
            regraded: Sequence[Submission]) -> ClassRun:
    """The class's files, once every result is in: manual.csv, grades.csv, lms.csv, the platform's, the dashboard."""
    results = sorted(recorder.summaries, key=lambda r: r.student)
    # manual.csv written again, marks kept (also of students held back by --student, who have no result here)
    adjusted = adjust.finish(results, missing=(*plan.missing, *plan.held_back))
    students = tuple(r.student for r in results)
    write_student_folders(out, [*students, *plan.missing, *plan.held_back])
    files = [write_grades_csv(out.grades_csv, results, submissions=found.by_student),
             write_lms_csv(out.lms_csv, results), pages_placed(out, students),
             *write_platform_files(out.path, found.submissions, results, choices.handback, title=spec.title)]
    accounting = Accounting(str(found.directory), found.layout.name, tuple(found.entries), students,
                            reused=len(plan.reused),
                            held_back=plan.held_back, missing=plan.missing, files=tuple(files))
    write_accounting(out, accounting)
    similar = similarity(out.path, spec.name, found.submissions, choices.handback, title=spec.title)
    started = time.perf_counter()
    dashboard = render_dashboard(results, title=spec.title, skipped=found.skipped, max_score=spec.max_score,
                                 similarity=similar, accounting=accounting)
    times = dataclasses.replace(recorder.times, dashboard_s=time.perf_counter() - started)
    write_text_atomic(out.dashboard, dashboard)
    return ClassRun(spec.name, out.path, tuple(results), tuple(found.skipped),
                    unchanged=tuple(sorted(r.student for r in plan.reused)), missing=plan.missing,
                    rendering=times, held_back=plan.held_back, stages=clock.snapshot(recorder.graded),
                    adjustments=adjusted, job_processes=processes[0], job_peak_mib=processes[1],
                    regraded=tuple(sorted(s.student for s in regraded)), accounting=accounting)
