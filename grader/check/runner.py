"""Run an assignment's checks against one submission: one fork of the loaded code per question.

A check that times out or kills the process costs only that check: the runner starts the submission again and
goes on with the next one. Questions graded with a reference (``graded_with_reference``) are, when the owning
question lost points, also run with the student's own code, so the report can say what the reference changed.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from grader.check.context import CheckContext
from grader.check.seeds import check_seed
from grader.check.spec import Assignment, CheckSpec, Question
from grader.check.variants import substituted
from grader.discover.program import Program
from grader.errors import CallTimedOut, ConfigurationError, ProcessDied, StudentRaised, WrongAnswer
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits
from grader.execute.process import LoadedUnit, LoadInterrupted, StudentProcess
from grader.execute.student import ReplayedCode, ReplayExhausted, StudentCode
from grader.execute.workers import Worker
from grader.results import (
    CRASHED,
    ERROR,
    FAILED,
    INTERNAL,
    NOT_RUN,
    PASSED,
    PUBLIC,
    TIMEOUT,
    CheckResult,
    Diagnosis,
    QuestionResult,
)


@dataclass
class _QuestionRun:
    checks: list[CheckResult] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""


def _failed_unit(label: str, cause: CallTimedOut | ProcessDied) -> LoadedUnit:
    if isinstance(cause, CallTimedOut):
        status, kind = "timeout", "Timeout"
        message = (f"{label} ran past its time limit and did not stop when interrupted, so its process was "
                   "killed; your code was started again without it")
    else:
        status, kind = "crashed", "ProcessDied"
        # The cause ends with how the process ended, e.g. "(exit code 3)" or "(killed by SIGSEGV)".
        how = f" {cause.message[cause.message.rfind('('):]}" if cause.message.endswith(")") else ""
        message = f"{label} ended the process{how}; your code was started again without it"
    return LoadedUnit(status=status, stdout="", stderr="", dropped=0, error_type=kind, error_message=message,
                      traceback="", notes=())


def not_run(check: CheckSpec, seed: int, reason: str) -> CheckResult:
    return CheckResult(check.id, check.question, check.title, check.visibility, NOT_RUN, 0.0, check.points,
                       reason, reason, seed)


class SubmissionRunner:
    def __init__(self, *, assignment: Assignment, student: str, program: Program, limits: Limits,
                 device: str = "cpu", sandbox: Sandbox | None = None, worker: Worker | None = None) -> None:
        self.assignment = assignment
        self.student = student
        self.program = program
        self.limits = limits
        self.device = device
        self.sandbox = sandbox
        self.worker = worker  # the warm worker that forks the student's process (each restart too)
        self.deadline = time.monotonic() + limits.submission_seconds
        self.process: StudentProcess | None = None
        self.units: list[LoadedUnit] = []
        self.failed_units: dict[int, LoadedUnit] = {}  # units that hung or killed the process: skipped on restart
        self.hello: dict = {}
        self.restarts = 0
        self.raw_output = ""

    # ----- process ---------------------------------------------------------------------------------------------
    def load(self) -> list[LoadedUnit]:
        """Start the student's process and run the program; raises CallTimedOut or ProcessDied.

        A unit that hangs past its limit or ends the process is recorded and skipped on a fresh start, as a
        notebook kernel that died in one cell would be restarted for the next: the rest is still graded.
        """
        while True:
            self.close()
            self.process = StudentProcess(limits=self.limits, deadline=self.deadline, sandbox=self.sandbox,
                                          device=self.device, worker=self.worker)
            self.hello = self.process.start()
            try:
                units = self.process.load(units=self.program.wire_units(), module_name=self.program.module_name,
                                          stop_on_exit=self.program.stop_on_exit,
                                          withheld=self.assignment.withheld_names, skip=self.failed_units,
                                          stubbed=self.assignment.stubbed_modules)
            except LoadInterrupted as exc:
                if exc.index in self.failed_units or len(self.failed_units) >= self.limits.restarts:
                    raise exc.cause from None
                self.failed_units[exc.index] = _failed_unit(self.program.units[exc.index].label, exc.cause)
                self.restarts += 1
                continue
            units = [self.failed_units.get(i, unit) for i, unit in enumerate(units)]
            if not self.units:
                self.units = units
            return units

    def close(self) -> None:
        if self.process is not None:
            self.process.close()
            raw = self.process.raw_output()
            if raw.strip() and len(self.raw_output) < self.limits.raw_output_bytes:
                self.raw_output += raw[: self.limits.raw_output_bytes - len(self.raw_output)]
            self.process = None

    def _load_hint(self) -> str:
        for program_unit, unit in zip(self.program.units, self.units):
            if unit.status in ("error", "timeout", "exit", "crashed"):
                what = {"timeout": "timed out", "crashed": "ended the process"}.get(unit.status,
                                                                                f"raised {unit.error_type}")
                return f"{program_unit.label} {what} while loading, which may be why"
        return ""

    # ----- questions -------------------------------------------------------------------------------------------
    def grade(self) -> list[QuestionResult]:
        results: dict[str, QuestionResult] = {}
        for question in self.assignment.questions:
            run = self._run_question(question, self.assignment.checks_for(question.id), question.provided_names)
            notes: list[str] = []
            checks = run.checks
            if question.graded_with_reference:
                checks, notes = self._compare_with_own(question, checks, results)
            results[question.id] = QuestionResult(question.id, question.title, tuple(checks), tuple(notes),
                                                  run.stdout, run.stderr)
        return list(results.values())

    def _compare_with_own(self, question: Question, checks: list[CheckResult],
                          done: dict[str, QuestionResult]) -> tuple[list[CheckResult], list[str]]:
        names = ", ".join(question.graded_with_reference)
        owners = sorted({q.id for n in question.graded_with_reference if (q := self.assignment.owner_of(n))})
        notes = [f"Graded with the reference {names} in place of yours, so a mistake there costs points only in "
                 f"{', '.join(owners)}."]
        if all(o in done and done[o].score == done[o].max_score for o in owners):
            return checks, notes
        # Only informative: when the student's own code hangs or crashes here, it is not restarted for it.
        own = self._run_question(question, self.assignment.checks_for(question.id), question.uses_provided,
                                 restart=False)
        changed = []
        for with_reference, with_own in zip(checks, own.checks):
            if with_reference.passed and with_own.status not in (PASSED, NOT_RUN):
                note = f"With your own {names}, this check fails: {with_own.message}"
                changed.append(dataclasses.replace(with_reference, notes=(*with_reference.notes, note)))
            else:
                changed.append(with_reference)
        if any(c.notes for c in changed):
            notes.append(f"Using the reference {names} changed the outcome of some checks (marked below).")
        return changed, notes

    def _run_question(self, question: Question, checks: Sequence[CheckSpec], provided: Sequence[str], *,
                      restart: bool = True) -> _QuestionRun:
        run = _QuestionRun()
        pending = list(checks)
        source = self.assignment.provided_source if provided else None
        while pending:
            if time.monotonic() >= self.deadline:
                reason = f"not run: the submission used up its time limit ({self.limits.submission_seconds:g} s)"
                run.checks += [not_run(c, self._seed(c), reason) for c in pending]
                break
            if self.process is None or not self.process.alive:
                if not restart and run.checks:
                    reason = "not run: your code hung or crashed on an earlier check of this comparison"
                    run.checks += [not_run(c, self._seed(c), reason) for c in pending]
                    break
                try:
                    self.restarts += 1
                    self.load()
                except (CallTimedOut, ProcessDied) as exc:
                    reason = f"not run: your code could not be started again after an earlier failure ({exc.message})"
                    run.checks += [not_run(c, self._seed(c), reason) for c in pending]
                    break
            process = self.process
            try:
                with process.question(provided_source=source, provided_names=provided) as session:
                    code = StudentCode(session, load_hint=self._load_hint())
                    while pending:
                        result = self._run_check(pending.pop(0), code)
                        run.checks.append(result)
                        if result.status in (TIMEOUT, CRASHED):
                            break
                    if process.alive and not session.ended:
                        output = session.end()
                        if output is not None:
                            run.stdout, run.stderr = run.stdout + output.stdout, run.stderr + output.stderr
            except (CallTimedOut, ProcessDied):
                self.close()  # the question's bookkeeping failed, not a check: start again for what is left
        return run

    def _diagnose(self, check: CheckSpec, seed: int, code: StudentCode, failed: CheckContext) -> Diagnosis | None:
        """The first known-wrong variant of this question whose answers agree with the student's where the check
        failed: the check replayed with the variant in place of the reference gets further, or passes."""
        for variant in self.assignment.variants_for(check.question):
            if variant.replaces is None:
                continue
            replay = CheckContext(student=ReplayedCode(code), seed=seed)
            try:
                with substituted(variant):
                    check.run(replay)
            except ReplayExhausted:
                if replay.met <= failed.met:
                    continue
            except Exception:  # a variant that disagrees, or cannot run on these inputs
                continue
            return Diagnosis(variant.id, variant.name, variant.explanation)
        return None

    def _seed(self, check: CheckSpec) -> int:
        return check_seed(self.assignment.name, self.student, check.id)

    def _run_check(self, check: CheckSpec, code: StudentCode) -> CheckResult:
        seed = self._seed(check)
        public = check.visibility == PUBLIC
        context = CheckContext(student=code, seed=seed)

        def outcome(status: str, message: str, hint: str, detail: str,
                    diagnosis: Diagnosis | None = None) -> CheckResult:
            score = check.points if status == PASSED else 0.0
            return CheckResult(check.id, check.question, check.title, check.visibility, status, score,
                               check.points, message if public else hint, detail, seed, notes=tuple(context.notes),
                               heatmaps=tuple(context.heatmaps), diff=context.diff, tables=tuple(context.tables),
                               trace=context.trace, diagnosis=diagnosis)

        try:
            code.seed(seed)
            code.replies.clear()  # a replay starts where the check does
            check.run(context)
        except WrongAnswer as exc:
            if exc.misconception is not None:
                named = self.assignment.variant_named(exc.misconception)
                diagnosis = Diagnosis(named.id, named.name, named.explanation)
            else:
                diagnosis = self._diagnose(check, seed, code, context)
            return outcome(FAILED, exc.message, exc.hint, exc.detail, diagnosis)
        except StudentRaised as exc:
            return outcome(ERROR, exc.message, f"your code raised {exc.exc_type}", exc.detail)
        except CallTimedOut as exc:
            self.close()
            return outcome(TIMEOUT, exc.message, exc.message, exc.detail)
        except ProcessDied as exc:
            self.close()
            return outcome(CRASHED, exc.message, exc.message, exc.detail)
        except ConfigurationError:
            raise
        except Exception:
            message = "the grader failed on this check (not your fault); your instructor has the details"
            return outcome(INTERNAL, message, message, traceback.format_exc())
        return outcome(PASSED, "passed", "passed", "passed")
