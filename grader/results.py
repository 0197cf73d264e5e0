"""Results of grading, as frozen dataclasses with derived totals. Reports and exports read only these."""

from __future__ import annotations

from dataclasses import dataclass

# Outcome of one check.
PASSED, FAILED, ERROR, TIMEOUT, CRASHED, NOT_RUN, INTERNAL = (
    "passed", "failed", "error", "timeout", "crashed", "not_run", "internal_error")
# Outcome of one submission: it ran (whatever the score), or why it could not be graded.
GRADED, INVALID, SUBMISSION_TIMEOUT, SUBMISSION_CRASHED = "graded", "invalid", "timeout", "crashed"

PUBLIC, HIDDEN = "public", "hidden"


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
