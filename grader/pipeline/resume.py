"""Which submissions a run must grade, and which stored results it can reuse (resuming a killed or earlier run).

A stored result is reused when all of these hold, and the submission is graded otherwise:

- the gradebook holds the whole result (not only its row: a gradebook from before results were stored holds none);
- it was graded from a file with the same content (SHA-256), path and kind as the submission found now;
- it was graded under the same grading fingerprint (solutions files, grader version, device, torch and NumPy);
- it is not an internal grader error, for the submission or for any check;
- it was not graded with less isolation than this run has: a result graded where a sandbox layer was missing (what
  student code could reach then, ``SubmissionResult.exposed``) is graded again once that layer is there, since
  its code could have read what a protected run hides (the solutions, say).

``force`` reuses nothing. Students with a stored result but no submission now are listed, never deleted.

``only`` (``grader grade --student``) grades those students whatever their stored result, and no one else: every
other student's stored result is reused as it is, even one that no longer holds, and such students, and those with
no stored result at all, are listed as ``held_back`` so that the command can say so.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.discover import MAX_SUBMISSION_BYTES, Submission
from grader.errors import ConfigurationError
from grader.names import readable
from grader.record.gradebook import StoredResult
from grader.results import INTERNAL, SubmissionResult


@dataclass(frozen=True)
class ResumePlan:
    to_grade: tuple[Submission, ...]
    reused: tuple[SubmissionResult, ...]  # stored results reported again (with ``only``, maybe out of date)
    missing: tuple[str, ...]  # students in the gradebook whose submission is no longer found (their rows stay)
    held_back: tuple[str, ...] = ()  # left out by ``only``, though their stored result is out of date or missing


def source_of(submission: Submission, root: Path) -> str:
    """The submission's path as results record it: relative to the submissions folder."""
    path = submission.path
    return readable(str(path.relative_to(root)) if path.is_relative_to(root) else str(path))


def _sha256(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_SUBMISSION_BYTES:
            return None  # refused unread, and so regraded (at no cost)
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None  # graded, and the result says why it could not be read


def reusable(submission: Submission, stored: StoredResult | None, *, fingerprint: str, root: Path,
             exposed: str = "") -> bool:
    """``exposed``: what student code could reach in this run (``Sandbox.exposure``; "" when nothing is missing)."""
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
            and result.exposed in ("", exposed)
            and stored.sha256 == result.sha256 == _sha256(submission.path))


def plan_resume(submissions: Sequence[Submission], stored: Mapping[str, StoredResult], *, fingerprint: str,
                root: Path, force: bool = False, only: Collection[str] = (), exposed: str = "") -> ResumePlan:
    to_grade, reused, held_back = [], [], []
    for submission in submissions:
        previous = stored.get(submission.student)
        kept = previous.result if previous is not None else None
        if only and submission.student not in only:
            if kept is not None:
                reused.append(kept)
            if not reusable(submission, previous, fingerprint=fingerprint, root=root, exposed=exposed):
                held_back.append(submission.student)
        elif only or force or kept is None or not reusable(submission, previous, fingerprint=fingerprint, root=root,
                                                           exposed=exposed):
            to_grade.append(submission)
        else:
            reused.append(kept)
    found = {s.student for s in submissions}
    missing = tuple(sorted(student for student in stored if student not in found))
    return ResumePlan(tuple(to_grade), tuple(reused), missing, tuple(held_back))


def check_students(wanted: Sequence[str], submissions: Sequence[Submission], folder: Path) -> None:
    """Every student named with ``--student`` has a submission; otherwise say which not, with the ids nearest."""
    found = sorted({s.student for s in submissions})
    unknown = []
    for student in dict.fromkeys(wanted):
        if student in found:
            continue
        near = difflib.get_close_matches(student, found, n=5, cutoff=0.6) or [
            f for f in found if student.lower() in f.lower() or f.lower() in student.lower()][:5]
        unknown.append(f"{student!r} (did you mean {' or '.join(near)}?)" if near else repr(student))
    if unknown:
        raise ConfigurationError(f"no submission in {folder} ({len(found)} students) for --student "
                                 f"{', '.join(unknown)}")
