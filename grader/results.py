"""Results of grading, as frozen dataclasses with derived totals. Reports and exports read only these.

The status vocabularies are ``StrEnum``s: a member is the plain string JSON, SQLite and the templates have always
written ("passed"), with a ``label`` for people ("not run"). What a student may see of a result is decided here too,
by the ``for_student()`` method of each dataclass that holds something they may not (their fields' comments say
which), so a field added later is redacted where it is declared.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from typing import Self

from grader.execute.child.wire import UnitStatus


class _Labelled(enum.StrEnum):
    """A status as stored (its value), with how people read it (its label; the value unless said otherwise)."""

    label: str

    def __new__(cls, value: str, label: str = "") -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label or value
        return member


class CheckStatus(_Labelled):
    """Outcome of one check."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the student's code raised
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # the student's process died
    NOT_RUN = "not_run", "not run"
    INTERNAL = "internal_error", "grader error"  # the grader itself failed, never the student's doing


class SubmissionStatus(_Labelled):
    """Outcome of one submission: it ran (whatever the score), or why it could not be graded."""

    GRADED = "graded"
    INVALID = "invalid"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    INTERNAL = "internal_error", "grader error"


class Visibility(_Labelled):
    """Who sees a check's inputs and expected values: everyone, or only the instructor (the student sees that it
    ran, its result and a message naming no input)."""

    PUBLIC = "public"
    HIDDEN = "hidden"


PASSED, FAILED, ERROR, TIMEOUT, CRASHED, NOT_RUN, INTERNAL = (
    CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.ERROR, CheckStatus.TIMEOUT, CheckStatus.CRASHED,
    CheckStatus.NOT_RUN, CheckStatus.INTERNAL)
GRADED, INVALID, SUBMISSION_TIMEOUT, SUBMISSION_CRASHED = (
    SubmissionStatus.GRADED, SubmissionStatus.INVALID, SubmissionStatus.TIMEOUT, SubmissionStatus.CRASHED)
PUBLIC, HIDDEN = Visibility.PUBLIC, Visibility.HIDDEN

# Labels by value, for a status held as a plain string (a result built by hand); the vocabularies agree on the
# values they share ("timeout", "crashed", "internal_error").
_LABELS = {member.value: member.label for kind in (CheckStatus, SubmissionStatus, UnitStatus) for member in kind}


def status_label(status: str) -> str:
    """How people read a check's, a submission's or a unit's status: "not run" for "not_run"."""
    return getattr(status, "label", None) or _LABELS.get(status, status)


# A problem every check of a question shares (a name not defined, weights with nowhere to go) is said once, as a note of
# the question starting with SHARED_PROBLEM_NOTE, and each of those checks' message is SHARED_PROBLEM.
SHARED_PROBLEM = "not graded: the problem in the note above"
SHARED_PROBLEM_NOTE = "Not graded: "


Rows = tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Heatmap:
    """One matrix of attention weights (queries x keys), the student's beside the reference's."""

    title: str  # e.g. "masked_softmax(X, valid_lens), batch 0"
    xlabel: str  # "Keys"
    ylabel: str  # "Queries"
    reference: Rows
    student: Rows | None  # None when the student's tensor was missing or of another shape
    reference_title: str = "Reference"  # e.g. "Ideal" when the reference panel is a pattern, not computed weights
    xticks: tuple[str, ...] = ()  # a label per key (say, the source string's characters) instead of indices
    yticks: tuple[str, ...] = ()
    # A matrix larger than the report draws is drawn in part: the window's first row and column, and the whole
    # matrix's (rows, columns); () when it is drawn whole. ``focus``: the [row, column] of the largest error, which
    # the window was placed around, when there was one.
    row_start: int = 0
    col_start: int = 0
    full_shape: tuple[int, ...] = ()
    focus: tuple[int, ...] = ()

    @property
    def window_text(self) -> str:
        """What a cut matrix's picture shows, for its caption: "rows 28-59 of 60, columns 0-31 of 32, around the
        largest error at [55, 3]"; "" when the whole matrix is drawn."""
        if not self.full_shape:
            return ""
        n_rows, n_cols = self.full_shape
        shown_cols = max((len(row) for row in self.reference), default=0)

        def span(word: str, start: int, count: int, total: int) -> str:
            if count == 1:
                return f"{word} {start} of {total}"
            return f"{word}s {start}-{start + count - 1} of {total}"

        text = f"{span('row', self.row_start, len(self.reference), n_rows)}, " \
               f"{span('column', self.col_start, shown_cols, n_cols)}"
        if self.focus:
            text += f", around the largest error at [{', '.join(map(str, self.focus))}]"
        return text


@dataclass(frozen=True)
class TensorDiff:
    """A small tensor beside the reference, entry by entry (row-major), for a table in the report: one that
    differs, or a hand-computed answer shown whatever the outcome."""

    label: str
    shape: tuple[int, ...]
    expected: tuple[float, ...]
    got: tuple[float, ...]
    bad: tuple[int, ...]  # flat indices of the entries outside the tolerance


@dataclass(frozen=True)
class Diagnosis:
    """A known misconception the student's answers match (a variant of the reference, grader/check/variants.py)."""

    variant: str  # "q1.softmax_queries_axis"
    name: str  # "softmax over the queries axis", for the dashboard
    explanation: str  # what the code does, and the fix
    where: str = ""  # where the student's code that does it is: "your masked_softmax, cell [2], line 5"

    @property
    def said(self) -> str:
        """The explanation as a student reads it, with where their code is."""
        return f"{self.explanation} Where: {self.where}." if self.where else self.explanation


@dataclass(frozen=True)
class SmallestCase:
    """The smallest sizes at which a failing random check still fails the same way (the runner shrinks them), so a
    student can reproduce the failure by hand. It never changes the score."""

    sizes: tuple[tuple[str, int], ...]  # (name, size) in the order the check draws them: ("keys", 2)
    original: tuple[tuple[str, int], ...]  # the sizes the check was graded at; hidden checks: instructor only
    message: str  # the failure at these sizes; for a hidden check only its safe hint
    detail: str = ""  # the full failure message: instructor only
    trace: tuple[str, ...] = ()  # the calls with their inputs and the values expected; hidden: instructor only
    diff: TensorDiff | None = None  # the student's answer beside the reference's; hidden: instructor only
    attempts: int = 0  # how many smaller runs the search made

    @staticmethod
    def describe(sizes: tuple[tuple[str, int], ...]) -> str:
        """'batch 1, queries 1, keys 2'."""
        return ", ".join(f"{name.replace('_', ' ')} {size}" for name, size in sizes)

    @property
    def text(self) -> str:
        return self.describe(self.sizes)

    def for_student(self, visibility: Visibility) -> SmallestCase:
        """What the student may see: of a public check's case its inputs, answers and expected values too (small
        enough to work through by hand); of a hidden one's only its sizes and safe hint."""
        if visibility == PUBLIC:
            return dataclasses.replace(self, detail="")
        return dataclasses.replace(self, original=(), detail="", trace=(), diff=None)


@dataclass(frozen=True)
class CheckOverride:
    """A person's points for a check in place of the check's own (a regrade request), with the reason: given in the
    review app (`grader review`) and put on top of the stored result at every run (grader/adjust), never a fact
    about the code."""

    original: float  # the points the check gave
    reason: str
    author: str  # instructor only
    saved_at: str


@dataclass(frozen=True)
class CheckResult:
    check_id: str
    question: str
    title: str
    visibility: Visibility
    status: CheckStatus
    score: float
    max_score: float
    message: str  # for the student: for hidden checks only the safe hint (stored so, see student_message)
    detail: str  # for the instructor: the full story
    seed: int  # hidden checks: instructor only
    notes: tuple[str, ...] = ()
    heatmaps: tuple[Heatmap, ...] = ()  # hidden checks: for the instructor's view only
    diff: TensorDiff | None = None  # hidden checks: for the instructor's view only
    tables: tuple[TensorDiff, ...] = ()  # answers shown beside the reference's, passed or not; hidden: instructor
    diagnosis: Diagnosis | None = None  # the misconception a failure matches, when a known one does
    trace: tuple[str, ...] = ()  # the calls the check made and the values it expected: instructor only
    smallest: SmallestCase | None = None  # a failing random check's smallest failing sizes, when smaller ones fail
    override: CheckOverride | None = None  # set by a person: ``score`` is then theirs, the check's is ``original``

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @staticmethod
    def student_message(visibility: Visibility, message: str, hint: str) -> str:
        """The message a check stores: a hidden check's is only its hint, which names no input or value. Its full
        message is never stored (``detail`` tells the instructor the full story), so no page can show it."""
        return message if visibility == PUBLIC else hint

    def for_student(self) -> CheckResult:
        """What the student may see (the fields' comments say what is the instructor's)."""
        smallest = self.smallest.for_student(self.visibility) if self.smallest is not None else None
        override = dataclasses.replace(self.override, author="") if self.override is not None else None
        if self.visibility == PUBLIC:
            return dataclasses.replace(self, detail="", trace=(), smallest=smallest, override=override)
        return dataclasses.replace(self, detail="", trace=(), seed=0, heatmaps=(), diff=None, tables=(),
                                   smallest=smallest, override=override)


class ChoiceKind(_Labelled):
    """Where the student's code left the grader a choice (grader/check/choices.py words each)."""

    ARGUMENTS = "arguments", "constructor arguments matched by their names"
    PARAMETERS = "parameters", "weights set in parameters named otherwise"
    NEAR_NAME = "near_name", "a near name not graded in place of the asked one"
    REFERENCE = "reference", "graded with the reference's earlier answer"
    OWN_ANSWER = "own_answer", "graded with the student's own earlier answer"


@dataclass(frozen=True)
class Choice:
    """A choice the grader made for the student, and why: a line each under "How your code was read". It names no
    input or value, so a hidden check's choice is the student's to see."""

    kind: ChoiceKind
    question: str  # the question it was made in: "q2"
    chosen: str  # "AdditiveAttention given num_hiddens as `d_hid`"
    why: str  # "its constructor names its arguments differently from the assignment, ..."

    @property
    def line(self) -> str:
        return f"{self.question}: {self.chosen}, because {self.why}."


@dataclass(frozen=True)
class QuestionResult:
    id: str
    title: str
    checks: tuple[CheckResult, ...]
    notes: tuple[str, ...] = ()
    stdout: str = ""  # what the student's code printed while this question was graded: instructor only (it could
    stderr: str = ""  # print a hidden check's inputs)
    choices: tuple[Choice, ...] = ()  # empty in results stored before choices were recorded

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    def said(self, check: CheckResult) -> str:
        """A check's message as the student reads it: a problem its question's checks share comes from the note."""
        if check.message != SHARED_PROBLEM:
            return check.message
        return next((n.removeprefix(SHARED_PROBLEM_NOTE) for n in self.notes if n.startswith(SHARED_PROBLEM_NOTE)),
                    check.message)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.checks)


@dataclass(frozen=True)
class UnitResult:
    label: str
    status: UnitStatus  # ok, error, timeout, exit, skipped, crashed (grader/execute/child/wire.py)
    stdout: str
    stderr: str
    error: str  # "ValueError: ..." with the student's part of the traceback, or ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class WrittenAnswer:
    id: str
    prompt: str
    text: str


# How an instructor's marks for a written answer stand (OUT/manual.csv, grader/adjust/manual.py).
MARKED, UNMARKED, CHANGED, REJECTED = "marked", "unmarked", "changed", "rejected"


@dataclass(frozen=True)
class ManualMark:
    """An instructor's points and comment for one written answer, merged from OUT/manual.csv at every run (never a
    fact about the code: grader/adjust applies it on top of the stored result)."""

    question: str  # the written question's id
    max_score: float  # its points in checks.py (0: comments only)
    points: float | None  # counted points; None when not marked, or when the marks are set aside (see state)
    comment: str
    state: str  # MARKED; UNMARKED; CHANGED: the answer changed since it was marked; REJECTED: the row is malformed
    problem: str = ""  # for the instructor: why the marks in manual.csv are not counted

    @property
    def score(self) -> float:
        return self.points or 0.0

    def for_student(self) -> ManualMark:
        """What the student may see: marks set aside (a changed answer, a malformed row) are not theirs yet."""
        if self.state in (CHANGED, REJECTED):
            return dataclasses.replace(self, points=None, comment="", problem="")
        return self


@dataclass(frozen=True)
class LatePenalty:
    """When a submission came against its deadline, and the fraction of its score the late rule takes
    (grader/adjust/late.py). Times are ISO 8601 in UTC."""

    deadline: str  # the deadline that applied to this student (an extension included)
    submitted_at: str
    late_s: float  # seconds after the deadline; 0 when on time
    fraction: float  # of the score after manual points, 0 to 1
    rule: str  # the late rule in words
    deadline_offset: str = ""  # the UTC offset the deadline was set in ("+01:00"), to show it as the course sees it
    extended: bool = False  # this student's deadline was extended
    extension_reason: str = ""  # instructor only
    note: str = ""  # instructor only: e.g. why no penalty was applied

    @property
    def is_late(self) -> bool:
        return self.late_s > 0

    @property
    def started_days(self) -> int:
        return math.ceil(self.late_s / 86400)

    def for_student(self) -> LatePenalty:
        return dataclasses.replace(self, extension_reason="", note="")


# The environment entry naming what student code could reach where a layer of the sandbox was missing
# (grader/execute/isolation.py, Sandbox.exposure): the instructor's to read, not a student's.
EXPOSED = "exposed"


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    assignment: str
    source: str  # the file graded, relative to the submissions folder
    kind: str
    sha256: str
    status: SubmissionStatus
    reason: str  # why it could not be graded, or ""
    questions: tuple[QuestionResult, ...]
    units: tuple[UnitResult, ...]
    answers: tuple[WrittenAnswer, ...]
    notes: tuple[str, ...]  # for the student too: what the grader says of the submission (never its own trace)
    submitted_at: str
    graded_at: str
    duration_s: float
    environment: tuple[tuple[str, str], ...] = ()
    grader_trace: str = ""  # the grader's own traceback when it failed on the submission: instructor only (it may
    # quote the checks' code)
    # Adjustments applied on top of the code's grade at every run (grader/adjust), not facts about the code.
    manual: tuple[ManualMark, ...] = ()  # one per written question of the assignment
    late: LatePenalty | None = None  # None: no deadline applies

    @property
    def code_score(self) -> float:
        return sum(q.score for q in self.questions)

    @property
    def exposed(self) -> str:
        """What student code could reach when this was graded, where a sandbox layer was missing; else ""."""
        return dict(self.environment).get(EXPOSED, "")

    @property
    def student_environment(self) -> tuple[tuple[str, str], ...]:
        """What protected the run, as the student may see it: not what it lacked (EXPOSED, an invitation)."""
        return tuple((k, v) for k, v in self.environment if k != EXPOSED)

    @property
    def manual_score(self) -> float:
        return sum(m.score for m in self.manual)

    @property
    def late_points(self) -> float:
        """Points the late rule deducts: its fraction of the score after manual points."""
        before = self.code_score + self.manual_score
        if self.late is None or self.late.fraction <= 0 or before <= 0:
            return 0.0
        return before if self.late.fraction >= 1 else round(before * self.late.fraction, 4)

    @property
    def score(self) -> float:
        return self.code_score + self.manual_score - self.late_points

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions) + sum(m.max_score for m in self.manual)

    @property
    def checks(self) -> tuple[CheckResult, ...]:
        return tuple(c for q in self.questions for c in q.checks)

    @property
    def choices(self) -> tuple[Choice, ...]:
        """The choices the grader made for the student, question by question: one list for every page."""
        return tuple(c for q in self.questions for c in q.choices)

    @property
    def grader_failed(self) -> bool:
        """Whether the grader itself failed on the submission or one of its checks (never the student's doing): a
        run grades it again once, in a fresh process, before recording it."""
        return self.status == INTERNAL or any(c.status == INTERNAL for c in self.checks)

    def summary(self) -> SubmissionResult:
        """The result without what only its own pages show (heatmaps, tables, traces, details, smallest cases, the
        output of every cell): what grades.csv, the dashboard and the exports need of each student. A class run keeps
        these, not whole results, so its memory does not grow with the class (the gradebook keeps the rest)."""
        questions = tuple(dataclasses.replace(
            q, stdout="", stderr="", checks=tuple(dataclasses.replace(
                c, detail="", heatmaps=(), diff=None, tables=(), trace=(), smallest=None) for c in q.checks))
            for q in self.questions)
        return dataclasses.replace(self, questions=questions, units=())

    def for_student(self) -> SubmissionResult:
        """The result as the student may see it: each check's ``for_student()``; not what their code printed while
        the checks ran (it could print a hidden check's inputs), the grader's own trace, marks set aside (a changed
        answer, a malformed row), an extension's reason, or what student code could have reached where the sandbox
        lacked a layer (an invitation, for a student)."""
        questions = tuple(dataclasses.replace(q, stdout="", stderr="", checks=tuple(c.for_student() for c in q.checks))
                          for q in self.questions)
        manual = tuple(m.for_student() for m in self.manual)
        late = self.late.for_student() if self.late is not None else None
        return dataclasses.replace(self, questions=questions, manual=manual, late=late, grader_trace="",
                                   environment=self.student_environment)
