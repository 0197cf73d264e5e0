"""Grade one submission: read it, run it in its own process, apply the checks. Always returns a result."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from datetime import UTC, datetime
from pathlib import Path

from grader.check.runner import SubmissionRunner, not_run
from grader.check.seeds import check_seed
from grader.check.spec import Assignment, CheckSpec
from grader.discover import Program, Submission, read_submission
from grader.errors import CallTimedOut, InvalidSubmission, SubmissionError
from grader.execute import isolation
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits
from grader.execute.process import LoadedUnit
from grader.execute.workers import Worker
from grader.pipeline.resume import source_of
from grader.pipeline.settings import RunSettings
from grader.pipeline.stage_times import StageClock
from grader.results import (
    EXPOSED,
    GRADED,
    INTERNAL,
    INVALID,
    SUBMISSION_CRASHED,
    SUBMISSION_TIMEOUT,
    QuestionResult,
    SubmissionResult,
    UnitResult,
    UnitStatus,
    WrittenAnswer,
)

_NOT_REACHED = LoadedUnit(status=UnitStatus.SKIPPED, stdout="", stderr="", dropped=0, error_type=None,
                          error_message=None, traceback="", notes=())


def _unit_results(program: Program, units: list[LoadedUnit]) -> tuple[UnitResult, ...]:
    results = []
    for unit, loaded in zip(program.units, units):
        error = ""
        if loaded.error_type:
            error = f"{loaded.error_type}: {loaded.error_message}".rstrip(": ")
            if loaded.traceback:
                error = f"{loaded.traceback.rstrip()}\n{error}"
        stdout = loaded.stdout + (f"\n[... {loaded.dropped} more characters not kept]" if loaded.dropped else "")
        results.append(UnitResult(unit.label, loaded.status, stdout, loaded.stderr, error, loaded.notes))
    return tuple(results)


def unrun_questions(assignment: Assignment, student: str, reason: str) -> tuple[QuestionResult, ...]:
    def seed(check: CheckSpec) -> int:
        return check_seed(assignment.name, student, check.id, check.visibility, assignment.seed_key)

    return tuple(QuestionResult(q.id, q.title, tuple(not_run(c, seed(c), reason) for c in assignment.checks_for(q.id)))
                 for q in assignment.questions)


GRADER_FAILED = "the grader itself failed on this submission (not the student's fault)"


def grader_failed_result(submission: Submission, assignment: Assignment, root: Path, *, detail: str,
                         duration_s: float = 0.0) -> SubmissionResult:
    """The result of a submission the grader itself failed on (in a class run or Gradescope's autograder): no
    points lost to a student's fault, every check not run, and the end of ``detail`` (the grader's traceback) kept
    as ``grader_trace``, which only the instructor sees."""
    return SubmissionResult(
        student=submission.student, assignment=assignment.name, source=source_of(submission, root),
        kind=submission.kind, sha256="", status=INTERNAL, reason=GRADER_FAILED,
        questions=unrun_questions(assignment, submission.student, f"not run: {GRADER_FAILED}"), units=(),
        answers=(), notes=(), grader_trace=detail[-2000:],
        submitted_at=submission.submitted_at.isoformat(timespec="seconds"),
        graded_at=datetime.now(UTC).isoformat(timespec="seconds"), duration_s=duration_s)


def keep_output_budget(units: tuple[UnitResult, ...], questions: tuple[QuestionResult, ...],
                       budget: int) -> tuple[tuple[UnitResult, ...], tuple[QuestionResult, ...]]:
    """Keep at most ``budget`` characters of captured output per submission, first come first kept."""
    left = budget

    def keep(text: str) -> str:
        nonlocal left
        if len(text) <= left:
            left -= len(text)
            return text
        kept, left = text[:left], 0
        return kept + f"\n[... {len(text) - len(kept)} more characters not kept: at most {budget} per submission]"

    units = tuple(dataclasses.replace(u, stdout=keep(u.stdout), stderr=keep(u.stderr)) for u in units)
    questions = tuple(dataclasses.replace(q, stdout=keep(q.stdout), stderr=keep(q.stderr)) for q in questions)
    return units, questions


def grade_for_run(submission: Submission, assignment: Assignment, settings: RunSettings, *,
                  worker: Worker | None = None, clock: StageClock | None = None) -> SubmissionResult:
    """Grade one submission of a class run under its settings (on this machine, a job process or a Dask worker)."""
    return grade_submission(submission=submission, assignment=assignment, root=settings.root,
                            device=settings.device, limits=settings.limits,
                            sandbox=None if worker is not None else isolation.detect(settings.sandbox),
                            worker=worker, clock=clock)


def grade_submission(*, submission: Submission, assignment: Assignment, root: Path, limits: Limits | None = None,
                     device: str = "cpu", sandbox: Sandbox | None = None,
                     worker: Worker | None = None, clock: StageClock | None = None) -> SubmissionResult:
    """``worker``: the warm worker (a pool's) that forks the student's process; without one, a worker is started for
    this submission alone (a fresh interpreter: about 1.5 s more). ``clock`` adds up the time of each stage."""
    limits = limits or assignment.limits
    sandbox = worker.sandbox if worker is not None else sandbox if sandbox is not None else isolation.detect()
    own_worker = worker is None
    started = time.monotonic()
    graded_at = datetime.now(UTC).isoformat(timespec="seconds")
    status, reason, notes = GRADED, "", list(submission.notes)
    units: tuple[UnitResult, ...] = ()
    answers: tuple[WrittenAnswer, ...] = ()
    environment: dict[str, str] = {}
    digest = hashlib.sha256()  # of the file's bytes, which are not kept: a notebook's outputs can be large
    clock = clock or StageClock()
    reading = time.perf_counter()
    try:
        program = read_submission(submission, written_ids=[w.id for w in assignment.written], digest=digest)
    except InvalidSubmission as exc:
        program, status, reason = None, INVALID, exc.message
    clock.add("read", time.perf_counter() - reading)
    questions: tuple[QuestionResult, ...]
    if program is None:
        questions = unrun_questions(assignment, submission.student, f"not run: {reason}")
    else:
        notes += program.notes
        given = dict(program.answers)
        answers = tuple(WrittenAnswer(w.id, w.prompt, given.get(w.id, "")) for w in assignment.written)
        if worker is None:
            worker = Worker(sandbox=sandbox, device=device, limits=limits, warm_up=assignment.warm_up)
        runner = SubmissionRunner(assignment=assignment, student=submission.student, program=program, limits=limits,
                                  device=device, sandbox=sandbox, worker=worker)
        grading = time.perf_counter()
        try:
            loaded = runner.load()
            units = _unit_results(program, loaded)
            questions = tuple(runner.grade())
        except SubmissionError as exc:
            status = SUBMISSION_TIMEOUT if isinstance(exc, CallTimedOut) else SUBMISSION_CRASHED
            reason = exc.message
            if runner.units or runner.failed_units:
                units = _unit_results(program, runner.units or [
                    runner.failed_units.get(i, _NOT_REACHED) for i in range(len(program.units))])
            questions = unrun_questions(assignment, submission.student, f"not run: {reason}")
        finally:
            runner.close()
            if own_worker:
                worker.close()
            clock.add("execute", runner.execute_s)
            clock.add("check", time.perf_counter() - grading - runner.execute_s)
        units, questions = keep_output_budget(units, questions, limits.output_bytes)
        raw = runner.raw_output
        environment = {k: str(v) for k, v in runner.hello.items() if k in ("python", "torch", "numpy")}
        environment["rlimits"] = ", ".join(runner.hello.get("rlimits", [])) or "none"
        if runner.sandbox is not None:
            environment["sandbox"] = runner.sandbox.summary()
            environment["sandbox_mode"] = runner.sandbox.mode
            if exposed := runner.sandbox.exposure():
                environment[EXPOSED] = exposed  # the instructor's pages say it; never the student's
        if runner.restarts:
            notes.append(f"your code was started again {runner.restarts} time(s) after it hung or crashed")
        if raw.strip():
            notes.append(f"output outside Python's print (first {len(raw)} characters): {raw[:2000]}")
    return SubmissionResult(
        student=submission.student,
        assignment=assignment.name,
        source=source_of(submission, root),
        kind=submission.kind,
        sha256=digest.hexdigest(),
        status=status,
        reason=reason,
        questions=questions,
        units=units,
        answers=answers,
        notes=tuple(notes),
        submitted_at=submission.submitted_at.isoformat(timespec="seconds"),
        graded_at=graded_at,
        duration_s=round(time.monotonic() - started, 3),
        environment=tuple(sorted(environment.items())),
    )
