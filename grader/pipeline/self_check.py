"""A student's self-check (``grader check SUBMISSION``): the assignment's public checks only, on one file, in the same
sandbox and with the same seeds as the instructor's grading, and the student's report from that result.

Hidden checks are removed from the assignment before anything runs (``public_only``), so they are neither run nor
named nor counted anywhere in what the student sees: the result, the terminal and the page hold public checks only.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.check.load import available_assignments, load_assignment
from grader.check.spec import Assignment
from grader.discover import Submission, read_submission
from grader.discover.assignment_of import infer_assignment
from grader.discover.finder import submission_file
from grader.errors import ConfigurationError, InvalidSubmission
from grader.execute import isolation
from grader.files import write_text_atomic
from grader.names import file_name
from grader.paths import SOLUTIONS_DIR
from grader.pipeline.submission_run import grade_submission
from grader.report import render_student_report
from grader.results import GRADED, PUBLIC, SubmissionResult

SELF_CHECK_NOTE = ("Self-check (grader check): only the assignment's public checks ran. Hidden checks, on other "
                   "inputs, also count towards your grade; your instructor runs them when grading.")


@dataclass(frozen=True)
class SelfCheck:
    result: SubmissionResult  # public checks only
    title: str  # the assignment's
    report: Path  # the student's page, rendered from ``result``
    has_hidden: bool  # whether the instructor's grading runs checks not run here (never which, nor how many)
    unchecked: tuple[tuple[str, str], ...]  # (id, title) of questions without a public check
    out_of: float = 0.0  # the grade's whole: every check's points, hidden ones too, and the written answers'

    @property
    def passed(self) -> bool:
        """Every public check passed (and the file could be run)."""
        return self.result.status == GRADED and all(c.passed for c in self.result.checks)


def public_only(assignment: Assignment) -> Assignment:
    """A copy of ``assignment`` with its public checks only, and only the questions that have one.

    The name stays, so every public check draws the same seed as in the instructor's grading and gives the same
    result; the variants stay, so a failure gets the same diagnosis.
    """
    public = copy.copy(assignment)  # every other setting (limits, provided code, stubs, ...) as it is
    public.checks = [c for c in assignment.checks if c.visibility == PUBLIC]
    asked = {c.question for c in public.checks}
    public.questions = tuple(q for q in assignment.questions if q.id in asked)
    public.variants = list(assignment.variants)
    return public




def _which(submission: Submission, solutions_dir: Path) -> str:
    available = available_assignments(solutions_dir)

    def sources() -> list[str]:
        try:
            return [unit.source for unit in read_submission(submission, written_ids=()).units]
        except InvalidSubmission as exc:
            raise ConfigurationError(f"could not tell which assignment {submission.path.name} is for "
                                     f"({exc.message}); name it with --assignment") from None

    return infer_assignment(submission.path, available=available, sources=sources,
                            asks_for=lambda name: load_assignment(name, solutions_dir=solutions_dir).withheld_names)


def check_submission(*, path: Path, out_dir: Path, assignment: str | None = None,
                     solutions_dir: Path = SOLUTIONS_DIR, device: str = "cpu", sandbox: str = "require",
                     limit_overrides: Sequence[str] = ()) -> SelfCheck:
    """Run the public checks of ``assignment`` (inferred from the file when None) on the file at ``path``, and write
    the student's page to ``out_dir/<student>/report.html``."""
    submission = submission_file(path)
    name = assignment or _which(submission, solutions_dir)
    spec = load_assignment(name, solutions_dir=solutions_dir)
    public = public_only(spec)
    limits = spec.limits.with_overrides(limit_overrides)
    result = grade_submission(submission=submission, assignment=public, root=submission.path.parent,
                              limits=limits, device=device, sandbox=isolation.detect(sandbox))
    unchecked = tuple((q.id, q.title) for q in spec.questions if q not in public.questions)
    notes = [SELF_CHECK_NOTE] if len(public.checks) < len(spec.checks) else []
    notes += [f"{qid} ({title}) has no public check: only your instructor's grading checks it"
              for qid, title in unchecked]
    result = dataclasses.replace(result, notes=(*notes, *result.notes))
    title = f"{spec.title} · self-check"
    report = out_dir / file_name(submission.student) / "report.html"  # a file named "...py" has the stem ".."
    write_text_atomic(report, render_student_report(result, title=title))
    return SelfCheck(result, spec.title, report, len(public.checks) < len(spec.checks), unchecked, spec.max_score)
