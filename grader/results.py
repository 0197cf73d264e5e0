"""Results of grading, as frozen dataclasses with derived totals. Reports and exports read only these."""

from __future__ import annotations

from dataclasses import dataclass

# Outcome of one check.
PASSED, FAILED, ERROR, TIMEOUT, CRASHED, NOT_RUN, INTERNAL = (
    "passed", "failed", "error", "timeout", "crashed", "not_run", "internal_error")
# Outcome of one submission: it ran (whatever the score), or why it could not be graded.
GRADED, INVALID, SUBMISSION_TIMEOUT, SUBMISSION_CRASHED = "graded", "invalid", "timeout", "crashed"

PUBLIC, HIDDEN = "public", "hidden"


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


@dataclass(frozen=True)
class CheckResult:
    check_id: str
    question: str
    title: str
    visibility: str
    status: str
    score: float
    max_score: float
    message: str  # for the student: for hidden checks, never the inputs or expected values
    detail: str  # for the instructor: the full story
    seed: int
    notes: tuple[str, ...] = ()
    heatmaps: tuple[Heatmap, ...] = ()  # hidden checks: for the instructor's view only
    diff: TensorDiff | None = None  # hidden checks: for the instructor's view only
    tables: tuple[TensorDiff, ...] = ()  # answers shown beside the reference's, passed or not; hidden: instructor
    diagnosis: Diagnosis | None = None  # the misconception a failure matches, when a known one does
    trace: tuple[str, ...] = ()  # the calls the check made and the values it expected: instructor only

    @property
    def passed(self) -> bool:
        return self.status == PASSED


@dataclass(frozen=True)
class QuestionResult:
    id: str
    title: str
    checks: tuple[CheckResult, ...]
    notes: tuple[str, ...] = ()
    stdout: str = ""  # what the student's code printed while this question was graded
    stderr: str = ""

    @property
    def score(self) -> float:
        return sum(c.score for c in self.checks)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.checks)


@dataclass(frozen=True)
class UnitResult:
    label: str
    status: str  # ok, error, timeout, exit, skipped
    stdout: str
    stderr: str
    error: str  # "ValueError: ..." with the student's part of the traceback, or ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class WrittenAnswer:
    id: str
    prompt: str
    text: str


@dataclass(frozen=True)
class SubmissionResult:
    student: str
    assignment: str
    source: str  # the file graded, relative to the submissions folder
    kind: str
    sha256: str
    status: str
    reason: str  # why it could not be graded, or ""
    questions: tuple[QuestionResult, ...]
    units: tuple[UnitResult, ...]
    answers: tuple[WrittenAnswer, ...]
    notes: tuple[str, ...]
    submitted_at: str
    graded_at: str
    duration_s: float
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def score(self) -> float:
        return sum(q.score for q in self.questions)

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions)

    @property
    def checks(self) -> tuple[CheckResult, ...]:
        return tuple(c for q in self.questions for c in q.checks)
