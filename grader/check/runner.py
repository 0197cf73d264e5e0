"""Run an assignment's checks against one submission: one fork of the loaded code per question.

A check that times out or kills the process costs only that check: the runner starts the submission again and
goes on with the next one. A function of the student's that ran past its time limit is not called again in the same
run: a later check's call of it fails at once, as a timeout that says where it ran away, so one runaway function
costs one time limit, not one per check that calls it. Questions graded with a reference (``graded_with_reference``)
are, when the owning question lost points, also run with the student's own code, so the report can say what the
reference changed.

A check that fails is then looked at, in the same fork: which known mistake its answers show (diagnose.py); whether
the student's parameters are declared in another order than the checks pass them (call_order.py, said once for the
question) or its lengths are used as a mask (lengths_as_mask.py, run again with one); and, when it drew its sizes
with ``ctx.sizes`` and failed on values, the smallest input that still fails the same way (shrink.py).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
import traceback
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field

from grader.check import choices
from grader.check.context import CheckContext
from grader.check.diagnose import diagnose
from grader.check.lengths_as_mask import MaskSearch, lengths_as_mask
from grader.check.seeds import check_seed
from grader.check.shrink import smallest_case
from grader.check.spec import Assignment, CheckSpec, Question
from grader.check.student import KnownSources, StudentCode, hidden_raised_hint, missing_name, without_sizes
from grader.discover.program import CODE_STUB, CodeUnit, Program
from grader.errors import CallTimedOut, ConfigurationError, NotCalledAgain, ProcessDied, StudentRaised, WrongAnswer
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits
from grader.execute.process import LoadedUnit, LoadInterrupted, StudentProcess
from grader.execute.workers import Worker
from grader.results import (
    CRASHED,
    ERROR,
    FAILED,
    INTERNAL,
    NOT_RUN,
    PASSED,
    PUBLIC,
    SHARED_PROBLEM,
    SHARED_PROBLEM_NOTE,
    TIMEOUT,
    CheckResult,
    Choice,
    Diagnosis,
    QuestionResult,
    SmallestCase,
    UnitStatus,
)

# Set while the student kit is recorded from the model solution: the references a question is graded with keep the
# calls the solution's code makes to them (grader/execute/child/provided_calls.py).
RECORDING_PROVIDED: ContextVar[bool] = ContextVar("recording_provided", default=False)
# The check running now, while its code runs: the student kit notes it before each call into the student's code, for
# the next check() to tell where a crash that ended the kernel happened (grader/kit/crash.py).
RUNNING_CHECK: ContextVar[CheckSpec | None] = ContextVar("running_check", default=None)


@dataclass
class _QuestionRun:
    checks: list[CheckResult] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    notes: list[str] = field(default_factory=list)  # what the checks point to (a problem they share)
    choices: list[Choice] = field(default_factory=list)  # what the grader chose for the student (a renaming)


def _failed_unit(label: str, cause: CallTimedOut | ProcessDied) -> LoadedUnit:
    if isinstance(cause, CallTimedOut):
        status, kind = UnitStatus.TIMEOUT, "Timeout"
        message = (f"{label} ran past its time limit and did not stop when interrupted, so its process was "
                   "killed; your code was started again without it")
    else:
        status, kind = UnitStatus.CRASHED, "ProcessDied"
        # The cause ends with how the process ended, e.g. "(exit code 3)" or "(killed by SIGSEGV)".
        how = f" {cause.message[cause.message.rfind('('):]}" if cause.message.endswith(")") else ""
        message = f"{label} ended the process{how}; your code was started again without it"
    return LoadedUnit(status=status, stdout="", stderr="", dropped=0, error_type=kind, error_message=message,
                      traceback="", notes=())


# Deep-learning frameworks other than PyTorch that the textbook's other tabs use, by the module students import.
OTHER_FRAMEWORKS = {"tensorflow": "TensorFlow", "mxnet": "MXNet", "jax": "JAX", "flax": "JAX",
                    "paddle": "PaddlePaddle"}


def _other_framework(unit: LoadedUnit) -> str:
    """'TensorFlow' when the unit failed importing another framework's module (the grader has PyTorch only)."""
    if unit.error_type not in ("ModuleNotFoundError", "ImportError"):
        return ""
    module = re.search(r"No module named '([\w.]+)'", unit.error_message or "")
    return OTHER_FRAMEWORKS.get(module.group(1).split(".")[0], "") if module else ""


def _limit_of(message: str) -> str:
    """'did not answer within the time limit (10 s)', from the timeout's own message."""
    found = re.match(r"no answer within (.+?) while waiting for ", message)
    return f"did not answer within {found[1] if found else 'its time limit'}"


def not_run(check: CheckSpec, seed: int, reason: str) -> CheckResult:
    return CheckResult(check.id, check.question, check.title, check.visibility, NOT_RUN, 0.0, check.points,
                       reason, reason, seed)


# How far a check's run got, for the dependency rule (SubmissionRunner._with_own_answers): PASSED, a failure on
# values (the answer compared), on form (a shape, a type), a raise, the template's stub met, or NOT_RUN (a setup
# failure, a run cut short: nothing of the answer seen).
VALUES, FORM, RAISED, NOT_WRITTEN = "values", "form", "raised", "not written"
_RANK = {PASSED: 4, VALUES: 3, FORM: 2, RAISED: 1, NOT_WRITTEN: 0, NOT_RUN: 0}
_WITH_REFERENCE = {VALUES: "your code's answer had other values", FORM: "your code's answer had another form",
                   RAISED: "your code raised", NOT_RUN: "what the check grades could not be set up"}
_WITH_OWN = {PASSED: "it passes; the better result counts", VALUES: "it runs and its answer is compared, as below",
             FORM: "it runs and returns an answer, of another form, as below"}
_CHOICE_BEFORE = {VALUES: "gave other values", FORM: "gave an answer of another form", RAISED: "raised",
                  NOT_RUN: "could not be set up"}
_CHOICE_AFTER = {PASSED: "it passes", VALUES: "it runs to a comparison of values",
                 FORM: "it runs to an answer, of another form"}


def _is_template_stub(where: Sequence[object]) -> bool:
    """The raise is the template's own line (``CODE_STUB``, which grader/assign/markers.py writes), not one the
    student wrote."""
    text = str(where[-1]).strip() if where else ""
    return text in (CODE_STUB[-1], f"{CODE_STUB[-1]}()")


def _titles(titles: Sequence[str]) -> str:
    quoted = [f'"{t}"' for t in titles]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


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
        self.execute_s = 0.0  # in the student's processes (starting them, waiting for them), summed over restarts
        # Checks that failed because what they grade could not be set up (a name not defined, a class that cannot
        # be constructed, weights with nowhere to go): check id -> (message, hint). A question says it once.
        self._setup_failures: dict[str, tuple[str, str]] = {}
        self._value_failures: set[str] = set()  # checks that failed on values, the answer of the right form
        self._not_written: set[str] = set()  # checks that met the template's stub (NotImplementedError) in the code
        self._mask_searches: dict[str, MaskSearch] = {}  # per question: lengths used as a mask (lengths_as_mask.py)
        # The student's callables that ran past their time limit in a check: callee -> how and where ("did not
        # answer within the time limit (10 s) in q1 \"...\""). A later call of one fails at once, as a timeout
        # (StudentCode.call): one runaway function costs one time limit, not one per check that calls it.
        self.ran_away: dict[str, str] = {}

    # ----- process ---------------------------------------------------------------------------------------------
    def load(self) -> list[LoadedUnit]:
        """Start the student's process and run the program; raises CallTimedOut or ProcessDied.

        A unit that hangs past its limit or ends the process is recorded and skipped on a fresh start, as a
        notebook kernel that died in one cell would be restarted for the next: the rest is still graded.
        """
        while True:
            self.close()
            if self.worker is not None and not self.worker.alive:
                # A worker (re)started for this submission is the grader's overhead: its time is not the student's.
                starting = time.monotonic()
                self.worker.start()
                self.deadline += time.monotonic() - starting
            self.process = StudentProcess(limits=self.limits, deadline=self.deadline, sandbox=self.sandbox,
                                          device=self.device, worker=self.worker)
            self.hello = self.process.start()
            try:
                units = self.process.load(units=self.program.wire_units(), module_name=self.program.module_name,
                                          stop_on_exit=self.program.stop_on_exit,
                                          withheld=self.assignment.answered_by, skip=self.failed_units,
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
            self.execute_s += self.process.waited_s
            raw = self.process.raw_output()
            if raw.strip() and len(self.raw_output) < self.limits.raw_output_bytes:
                self.raw_output += raw[: self.limits.raw_output_bytes - len(self.raw_output)]
            self.process = None

    def _load_hint(self, name: str = "") -> str:
        """Why ``name`` may be missing from the student's namespace: the unit that would have defined it (an import
        of it, its ``def``, an assignment; or one that does not parse, which may) failed while loading. When every
        unit that failed would not have defined it, that is said apart: it is not why. A unit that failed for a
        name another failed unit would have defined (a class on `tf.keras.layers.Layer`, after `import tensorflow
        as tf` failed) is followed to that one."""
        failed = [(program_unit, unit) for program_unit, unit in zip(self.program.units, self.units)
                  if unit.status in (UnitStatus.ERROR, UnitStatus.TIMEOUT, UnitStatus.EXIT, UnitStatus.CRASHED)]
        if not failed:
            return ""
        if not name:
            return self._failure(*failed[0], why=True)
        cause = self._defining_failure(name, failed)
        if cause is None:  # what failed is not why: said apart, and whether anything defines the name at all
            defined = any(unit.binds_anywhere(name) for unit in self.program.units)
            return ("" if defined else f"nothing in your code defines `{name}`; ") + \
                f"separately, {self._failure(*failed[0], why=False)}"
        seen = [cause]
        while seen[-1][1].error_type == "NameError" and len(seen) < 5:
            deeper = self._defining_failure(missing_name(seen[-1][1].error_message or ""), failed)
            if deeper is None or deeper in seen:
                break
            seen.append(deeper)
        if len(seen) == 1:
            return self._failure(*cause, why=True)
        needed = missing_name(seen[-2][1].error_message or "")
        return (f"{self._failure(*cause, why=True)}; `{needed}` was not defined there because "
                f"{self._failure(*seen[-1], why=False)}")

    @staticmethod
    def _defining_failure(name: str, failed: list[tuple[CodeUnit, LoadedUnit]]) -> tuple[CodeUnit, LoadedUnit] | None:
        """The first failed unit that would have defined ``name``; else the first that does not parse (it might)."""
        if not name:
            return None
        return next((p for p in failed if p[0].defines(name)), None) or \
            next((p for p in failed if p[0].defines(name) is None), None)

    @staticmethod
    def _failure(program_unit: CodeUnit, unit: LoadedUnit, *, why: bool) -> str:
        framework = _other_framework(unit)
        if framework:
            return (f"{program_unit.label} could not import {framework}: this assignment is graded in "
                    f"PyTorch, and code written for {framework} cannot run in the grader")
        what = {UnitStatus.TIMEOUT: "timed out", UnitStatus.CRASHED: "ended the process"}.get(unit.status,
                                                                            f"raised {unit.error_type}")
        return f"{program_unit.label} {what} while loading" + (", which may be why" if why else "")

    @functools.cached_property
    def _sources(self) -> KnownSources:
        """The submission's code and the provided harnesses, as the grader holds them (for hidden checks' hints)."""
        sources = KnownSources()
        for unit in self.program.units if self.program is not None else ():  # the student kit has no program
            sources.add(unit.filename, unit.source, unit.first_line)
        for file in self.assignment.provided_files:
            if not file.reference:
                sources.add(file.filename, file.source)
        return sources

    # ----- questions -------------------------------------------------------------------------------------------
    def grade(self) -> list[QuestionResult]:
        results: dict[str, QuestionResult] = {}
        questions = self.assignment.questions
        for index, question in enumerate(questions):
            final = index == len(questions) - 1
            # The loaded submission's last question is answered by it, not by a fork (see StudentProcess.question),
            # unless it is known to run again with the student's own answers (its owners lost points); a check that
            # needs them only for its own failure starts the submission again (rare: a later question written for
            # the student's own earlier answer).
            compared = bool(question.graded_with_reference) and self._owners_lost_points(question, results)
            run = self._run_question(question, self.assignment.checks_for(question.id), question.provided_names,
                                     last=final and not compared)
            checks, notes, chosen = run.checks, list(run.notes), choices.in_question(run.choices, question.id)
            if question.graded_with_reference:
                checks, compared_notes, compared = self._with_own_answers(question, checks, results, last=final)
                notes += compared_notes
                chosen = [*compared[:1], *chosen, *compared[1:]]  # the reference first: it decides the rest
            checks, setup_notes = self._say_setup_once(checks)
            results[question.id] = QuestionResult(question.id, question.title, tuple(checks),
                                                   (*setup_notes, *notes), run.stdout, run.stderr, tuple(chosen))
        return list(results.values())

    def _say_setup_once(self, checks: list[CheckResult]) -> tuple[list[CheckResult], list[str]]:
        """Checks that failed on the same setup problem (a name not defined, weights with nowhere to go): the problem
        said once, as the question's note, and each of those checks pointing to it. The same problem is told with
        each check's own sizes and calls, so it is recognised without them; the note is a public check's message
        (a hidden check's would tell its inputs), or the hint when only hidden checks share it."""
        groups: dict[str, list[CheckResult]] = {}
        for check in checks:
            if check.check_id in self._setup_failures:
                groups.setdefault(without_sizes(self._setup_failures[check.check_id][0]), []).append(check)
        notes: list[str] = []
        pointed: set[str] = set()
        for group in groups.values():
            if len(group) < 2:
                continue
            public = [c for c in group if c.visibility == PUBLIC]
            message, hint = self._setup_failures[(public or group)[0].check_id]
            notes.append(f"{SHARED_PROBLEM_NOTE}{(message if public else hint).rstrip('.')}.")
            pointed.update(c.check_id for c in group)
        changed = [dataclasses.replace(c, message=SHARED_PROBLEM) if c.check_id in pointed else c for c in checks]
        return changed, notes

    def _owners(self, question: Question) -> list[str]:
        """The questions that define what ``question`` is graded with the reference of."""
        return sorted({q.id for n in question.graded_with_reference if (q := self.assignment.owner_of(n))})

    def _owners_lost_points(self, question: Question, done: dict[str, QuestionResult]) -> bool:
        return not all(o in done and done[o].score == done[o].max_score for o in self._owners(question))

    def _with_own_answers(self, question: Question, checks: list[CheckResult], done: dict[str, QuestionResult], *,
                          last: bool) -> tuple[list[CheckResult], list[str], list[Choice]]:
        """One rule for a question graded with the reference of what other questions define (docs/writing-checks.md).

        The question is graded with the reference in place of the student's own answers, so a mistake there costs
        points only where it is made. A check that then fails, whatever the reason (it raised, an answer had another
        form, or other values), may fail only because the student's code was written for their own earlier answer's
        convention (a mask whose True means hidden, read so): it is run again with their own answers, and the better
        result counts, said in its message (not when one of those answers ran past its time limit in an earlier
        check: each check would wait for it again, so the reference's result stands, said in a note). Better is an
        order of outcomes: passing, then a failure on values (it names the mistake), then one on form, then a raise;
        a setup failure or a run cut short is no better than anything. The earlier question has paid for its own
        mistake already, and the later one can pass with it only where the student's two answers together compute
        what the reference does. A failure on values is run again only when an earlier question lost points (else the
        student's answer is the reference's wherever checked). Left as they are: checks marked ``reference_only``
        (about the earlier answer's effect itself), and checks whose code is still the template's stub (nothing of
        the student's ran, so nothing else is to blame). When the owning questions lost points, every check is run
        again that way too, to say what the reference changed. The choices made (the reference; a
        check's own answers) come back as ``Choice``s, the reference's first.
        """
        names = ", ".join(question.graded_with_reference)
        notes: list[str] = []
        chosen = [choices.with_reference(question.id, question.graded_with_reference, self._owners(question))]
        specs = {c.id: c for c in self.assignment.checks_for(question.id)}
        before = {c.check_id: self._outcome(c) for c in checks}
        owners_lost = self._owners_lost_points(question, done)
        # Earlier answers that earned all their points agree with the reference wherever they were checked: a
        # failure on values then has no convention of the student's behind it, and is not worth a second run.
        convention = {c.check_id for c in checks if c.status in (FAILED, ERROR) and before[c.check_id] != NOT_WRITTEN
                      and not specs[c.check_id].reference_only and (owners_lost or before[c.check_id] != VALUES)}
        if not convention and not owners_lost:
            return checks, notes, chosen
        ran_away = next(((name, how) for name in question.graded_with_reference
                         for callee, how in self.ran_away.items()
                         if callee == name or callee.startswith(f"{name}.")), None)
        if ran_away is not None:  # each check would wait for it again: no better result can come of it
            said = "it" if ran_away[0] == names else f"your {ran_away[0]}"
            notes.append(f"Not run with your own {names}: {said} {ran_away[1]}, so it was not called again; the "
                         "result with the reference counts.")
            return checks, notes, chosen
        by_reference = {c.check_id: self._setup_failures.pop(c.check_id) for c in checks
                        if c.check_id in self._setup_failures}
        # When the student's own code hangs or crashes here, it is not restarted for it: the reference's result stays.
        own = self._run_question(question, self.assignment.checks_for(question.id), question.uses_provided,
                                 restart=False, last=last)
        outcomes = [self._outcome(c) for c in own.checks]  # before the setup failures are taken aside
        by_own = {c.check_id: self._setup_failures.pop(c.check_id) for c in own.checks
                  if c.check_id in self._setup_failures}
        changed, counted, worse = [], [], []
        for with_reference, with_own, after in zip(checks, own.checks, outcomes):
            if with_reference.check_id in convention and _RANK[after] > _RANK[before[with_reference.check_id]]:
                note = (f"Graded with your own {names}: with the reference {names} in its place, "
                        f"{_WITH_REFERENCE[before[with_reference.check_id]]} "
                        f"({with_reference.message.rstrip('.')}); with yours {_WITH_OWN[after]}.")
                changed.append(dataclasses.replace(with_own, notes=(*with_own.notes, note)))
                counted.append(with_own.title)
                chosen.append(choices.with_own_answers(question.id, question.graded_with_reference, with_own.title,
                                                       before=_CHOICE_BEFORE[before[with_reference.check_id]],
                                                       after=_CHOICE_AFTER[after]))
                if with_own.check_id in by_own:
                    self._setup_failures[with_own.check_id] = by_own[with_own.check_id]
                continue
            if with_reference.check_id in by_reference:
                self._setup_failures[with_reference.check_id] = by_reference[with_reference.check_id]
            if with_reference.passed and with_own.status not in (PASSED, NOT_RUN):
                note = f"With your own {names}, this check fails: {with_own.message}"
                changed.append(dataclasses.replace(with_reference, notes=(*with_reference.notes, note)))
                worse.append(with_reference.title)
            else:
                changed.append(with_reference)
        # Said in full here: a passing check is not listed where only failures are (the kit's and `grader check`'s
        # summaries), so a note that pointed to the checks would point to nothing.
        if counted:
            notes.append(f"Graded with your own {names} where that did better than the reference's: "
                         f"{_titles(counted)}.")
        if worse:
            notes.append(f"With your own {names} in place of the reference's, {_titles(worse)} would fail; with the "
                         f"reference, {'it passes' if len(worse) == 1 else 'they pass'}, which counts.")
        return changed, notes, chosen

    def _outcome(self, check: CheckResult) -> str:
        """How far a check's run got, the order ``_with_own_answers`` compares (``_RANK``)."""
        if check.status == PASSED:
            return PASSED
        if check.check_id in self._setup_failures or check.status not in (FAILED, ERROR):
            return NOT_RUN  # a setup failure, a run cut short: nothing of the answer was seen
        if check.status == ERROR:
            return NOT_WRITTEN if check.check_id in self._not_written else RAISED
        return VALUES if check.check_id in self._value_failures else FORM

    def _run_question(self, question: Question, checks: Sequence[CheckSpec], provided: Sequence[str], *,
                      restart: bool = True, last: bool = False) -> _QuestionRun:
        run = _QuestionRun()
        pending = list(checks)
        self._mask_searches.pop(question.id, None)
        files = [file.wire() for file in self.assignment.provided_files] if provided else []
        while pending:
            if time.monotonic() >= self.deadline:
                reason = f"not run: the submission used up its time limit ({self.limits.submission_seconds:g} s)"
                run.checks += [not_run(c, self._seed(c), reason) for c in pending]
                break
            if self.process is None or not self.process.alive or self.process.spent:
                if not restart and run.checks:
                    reason = "not run: your code hung or crashed on an earlier check of this comparison"
                    run.checks += [not_run(c, self._seed(c), reason) for c in pending]
                    break
                try:
                    # A process that answered its last question is no failure (code that used the GPU while loading
                    # answers each question in a process of its own): only a hung or crashed one is a restart.
                    if self.process is None or not self.process.spent:
                        self.restarts += 1
                    self.load()
                except (CallTimedOut, ProcessDied) as exc:
                    reason = f"not run: your code could not be started again after an earlier failure ({exc.message})"
                    run.checks += [not_run(c, self._seed(c), reason) for c in pending]
                    break
            process = self.process
            try:
                with process.question(provided_files=files, provided_names=provided, last=last,
                                      record_provided=RECORDING_PROVIDED.get()) as session:
                    code = StudentCode(session, load_hint=self._load_hint, naming=question.naming,
                                       convention=question.convention, asked=self.assignment.withheld_names,
                                       answered_by=self.assignment.answered_by, calls=self.assignment.calls,
                                       sources=self._sources)
                    while pending:
                        result = self._run_check(pending.pop(0), code, shrink=restart)
                        run.checks.append(result)
                        if self.process is not process:
                            # The process is gone: a timeout, a crash, or a run looking for a smaller failing case
                            # that ended it (a call not made again, as it ran away before, leaves it as it is).
                            break
                    run.notes += [note for note in code.notes if note not in run.notes]
                    run.choices += code.choices
                    if process.alive and not session.ended:
                        code.settle(ignore_errors=True)
                        output = session.end()
                        if output is not None:
                            run.stdout, run.stderr = run.stdout + output.stdout, run.stderr + output.stderr
            except (CallTimedOut, ProcessDied):
                self.close()  # the question's bookkeeping failed, not a check: start again for what is left
        return run

    def _failed_calls(self, check: CheckSpec, seed: int, code: StudentCode, result: CheckResult, *, raised: bool,
                      named: bool = False) -> tuple[CheckResult, bool]:
        """What the calls of a failed check show: parameters declared in another order than the checks pass them
        (said once for the question), and lengths used as a mask (the check passes with one in their place: a run
        again, after the result is made, as the result's trace is the failed run's). ``named``: the check named the
        mistake itself. Returns the result, and whether the student's process was lost (it hung or died)."""
        for message in code.misordered.values():
            code.note(message)
        if named:
            return result, False
        search = self._mask_searches.setdefault(check.question, MaskSearch())
        diagnosis, lost = lengths_as_mask(check, seed, code, search, raised=raised, deadline=self.deadline)
        if lost:
            self.close()
        if diagnosis is None:
            return result, lost
        return dataclasses.replace(result, diagnosis=self._placed(diagnosis, check, code)), lost

    def _placed(self, diagnosis: Diagnosis, check: CheckSpec, code: StudentCode) -> Diagnosis:
        """The named mistake with where the student's code that makes it is: the one name the question asks for
        (a question asking for several leaves it unsaid: the mistake may be in any of them)."""
        question = next((q for q in self.assignment.questions if q.id == check.question), None)
        if diagnosis.where or question is None or len(question.defines) != 1:
            return diagnosis
        return dataclasses.replace(diagnosis, where=code.defined_where(question.defines[0]))

    def _diagnose(self, check: CheckSpec, seed: int, code: StudentCode, failed: CheckContext) -> Diagnosis | None:
        return diagnose(self.assignment, check, seed, code, failed)

    def _shrink(self, check: CheckSpec, seed: int, code: StudentCode,
                failed: CheckContext) -> tuple[SmallestCase | None, str | None]:
        # A smaller run that hangs or crashes ends the process: the next check starts the submission again.
        return smallest_case(check, seed, code, failed, deadline=self.deadline, lost=self.close)

    def _seed(self, check: CheckSpec) -> int:
        return check_seed(self.assignment.name, self.student, check.id, check.visibility, self.assignment.seed_key)

    def _run_check(self, check: CheckSpec, code: StudentCode, *, shrink: bool = True) -> CheckResult:
        code.ran_away = self.ran_away
        running = RUNNING_CHECK.set(check)
        try:
            return self._check(check, code, shrink=shrink)
        finally:
            RUNNING_CHECK.reset(running)

    def _check(self, check: CheckSpec, code: StudentCode, *, shrink: bool) -> CheckResult:
        seed = self._seed(check)
        context = CheckContext(student=code, seed=seed)
        self._value_failures.discard(check.id)
        self._not_written.discard(check.id)

        def outcome(status: str, message: str, hint: str, detail: str,
                    diagnosis: Diagnosis | None = None) -> CheckResult:
            score = check.points if status == PASSED else 0.0
            shown = CheckResult.student_message(check.visibility, message, hint)
            return CheckResult(check.id, check.question, check.title, check.visibility, status, score,
                               check.points, shown, detail, seed, notes=tuple(context.notes),
                               heatmaps=tuple(context.heatmaps), diff=context.diff, tables=tuple(context.tables),
                               trace=context.trace, diagnosis=diagnosis)

        try:
            code.settle(ignore_errors=True)  # what an earlier check sent and left unread (it broke off)
            code.seed(seed)
            code.replies.clear()  # a replay starts where the check does
            try:
                check.run(context)
            except WrongAnswer:
                code.settle(ignore_errors=True)  # failed anyway: an error of a request not waited for adds nothing
                raise
            code.settle()  # a request the check did not wait for may have raised: then the check did not pass
        except WrongAnswer as exc:
            if exc.misconception is not None:
                named = self.assignment.variant_named(exc.misconception)
                diagnosis = Diagnosis(named.id, named.name, named.explanation)
            else:
                diagnosis = self._diagnose(check, seed, code, context)
            if diagnosis is not None:
                diagnosis = self._placed(diagnosis, check, code)
            result = outcome(FAILED, exc.message, exc.hint, exc.detail, diagnosis)
            if exc.values:
                self._value_failures.add(check.id)
            if exc.setup:
                self._setup_failures[check.id] = (exc.message, exc.hint)
                return result
            result, lost = self._failed_calls(check, seed, code, result, raised=False,
                                              named=exc.misconception is not None)
            # Only values that differ can differ less on smaller inputs; after the diagnosis, which replays this run.
            if shrink and context.drawn and exc.values and not lost:
                smallest, note = self._shrink(check, seed, code, context)
                result = dataclasses.replace(result, smallest=smallest,
                                             notes=(*result.notes, note) if note else result.notes)
            return result
        except StudentRaised as exc:
            stub = exc.exc_type == "NotImplementedError" and bool(exc.where)
            if stub:
                self._not_written.add(check.id)
            # A hidden check tells the type, the student's own line and the sizes it drew, never the message
            # (hidden_raised_hint says why); a public check tells everything.
            hint = hidden_raised_hint(exc, self._sources, context.drawn) if check.visibility != PUBLIC else \
                f"your code raised {exc.exc_type}"
            if exc.setup:
                self._setup_failures[check.id] = (exc.message, hint)
                return outcome(ERROR, exc.message, hint, exc.detail)
            if stub:  # nothing of the student's ran to an answer: no cause to look for, nothing else to blame
                said = "not written yet: " if _is_template_stub(exc.where) else ""
                return outcome(ERROR, said + exc.message, said + hint, exc.detail)
            return self._failed_calls(check, seed, code, outcome(ERROR, exc.message, hint, exc.detail), raised=True)[0]
        except NotCalledAgain as exc:  # nothing was sent: the process goes on
            return outcome(TIMEOUT, exc.message, exc.message, exc.detail)
        except CallTimedOut as exc:
            self.close()
            if exc.callee:
                self.ran_away.setdefault(exc.callee, f"{_limit_of(exc.message)} in {check.question} \"{check.title}\"")
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

