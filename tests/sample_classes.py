"""What every assignment's sample class must show, shared by the per-assignment tests.

Correct samples earn full marks; each mistake loses points on its own question only, with a message that names
the difference; the sample folder's README lists every sample.
"""

from __future__ import annotations

from pathlib import Path

from grader.pipeline import ClassRun
from grader.results import SubmissionResult


def by_student(run: ClassRun) -> dict[str, SubmissionResult]:
    return {r.student: r for r in run.results}


def assert_full_marks(result: SubmissionResult, full: dict[str, float]) -> None:
    assert {q.id: q.score for q in result.questions} == full, [c.message for c in result.checks if not c.passed]


def assert_loses_only(result: SubmissionResult, full: dict[str, float], question: str, check_id: str,
                      says: str) -> None:
    """Points lost on ``question`` and nowhere else; ``check_id``'s message contains ``says``."""
    scores = {q.id: q.score for q in result.questions}
    assert scores[question] < full[question]
    assert {q: s for q, s in scores.items() if q != question} == {q: s for q, s in full.items() if q != question}
    assert says in next(c.message for c in result.checks if c.check_id == check_id)


def assert_readme_lists_every_sample(folder: Path) -> None:
    listed = (folder / "README.md").read_text()
    missing = [p.name for p in folder.iterdir() if p.name != "README.md" and f"`{p.name}`" not in listed]
    assert not missing, f"{folder}/README.md does not describe {missing}"


def student_reads(result: SubmissionResult, check_id: str) -> str:
    """A check's message as the student reads it (a problem its question's checks share is said in the note)."""
    check = next(c for c in result.checks if c.check_id == check_id)
    return next(q for q in result.questions if q.id == check.question).said(check)
