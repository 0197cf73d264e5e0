"""Which submissions a run must grade, and which stored results it can reuse (resuming a killed or earlier run).

A stored result is reused when all of these hold, and the submission is graded otherwise:

- the gradebook holds the whole result (not only its row: a gradebook from before results were stored holds none);
- it was graded from a file with the same content (SHA-256), path and kind as the submission found now;
- it was graded under the same grading fingerprint (solutions files, grader version, device, torch and NumPy);
- it is not an internal grader error, for the submission or for any check.

``force`` reuses nothing. Students with a stored result but no submission now are listed, never deleted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.discover import MAX_SUBMISSION_BYTES, Submission
from grader.record.gradebook import StoredResult
from grader.results import INTERNAL, SubmissionResult


@dataclass(frozen=True)
class ResumePlan:
    to_grade: tuple[Submission, ...]
    reused: tuple[SubmissionResult, ...]  # unchanged since the run that graded them
    missing: tuple[str, ...]  # students in the gradebook whose submission is no longer found (their rows stay)


def source_of(submission: Submission, root: Path) -> str:
    """The submission's path as results record it: relative to the submissions folder."""
    path = submission.path
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _sha256(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SUBMISSION_BYTES:
            return None  # refused unread, and so regraded (at no cost)
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None  # graded, and the result says why it could not be read


def reusable(submission: Submission, stored: StoredResult | None, *, fingerprint: str, root: Path) -> bool:
    if stored is None or stored.result is None:
        return False
    result = stored.result
    return (stored.fingerprint == fingerprint
            and result.status != INTERNAL
            and not any(c.status == INTERNAL for c in result.checks)
            and result.source == source_of(submission, root)
            and result.kind == submission.kind
            and result.student == submission.student
            and not submission.problem  # a link out of the folder or a named pipe: never read (a pipe would hang)
            and stored.sha256 == result.sha256 == _sha256(submission.path))


def plan_resume(submissions: Sequence[Submission], stored: Mapping[str, StoredResult], *, fingerprint: str,
                root: Path, force: bool = False) -> ResumePlan:
    to_grade, reused = [], []
    for submission in submissions:
        previous = stored.get(submission.student)
        if not force and previous is not None and previous.result is not None \
                and reusable(submission, previous, fingerprint=fingerprint, root=root):
            reused.append(previous.result)
        else:
            to_grade.append(submission)
    found = {s.student for s in submissions}
    missing = tuple(sorted(student for student in stored if student not in found))
    return ResumePlan(tuple(to_grade), tuple(reused), missing)
