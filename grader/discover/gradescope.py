"""Gradescope's submitters: the one rule for a submitter's student id, and the autograder's submission.

Gradescope describes a submitter in two places, in two formats: an instructor's submissions export
(``submission_metadata.yml``, read by gradescope_export.py) and the autograder's tree, one submission at a time
(``/autograder/submission_metadata.json``, read here by ``read_submission_metadata``). Both give each submitter's
name, SID and e-mail; only the autograder's gives Gradescope's own user id. ``submitter_id`` uses what both carry, so
that a student has the same id, and so draws the same random cases (grader.check.seeds), whichever way the class is
graded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.discover.finder import Submission, candidates, choose_submission, modified_at
from grader.names import student_id
from grader.times import parse_submission_time

SUBMISSION_METADATA = "submission_metadata.json"  # in the autograder's root, beside submission/
# Characters a Gradescope id does not keep: anything but letters, digits, @ . + - (the folder name is grader.names')
_UNSAFE = re.compile(r"[^\w@.+-]")
# The SID matches the course roster and the LMS; else the e-mail, which Gradescope accounts always have; else the
# name. Not Gradescope's user id: the export does not carry it, and a student graded from the export would then get
# another id, and other random cases, than the autograder gave them.
ID_KEYS = ("sid", "email", "name")


def safe_student_id(raw: str) -> str:
    """``raw`` as a student id: in NFC (``grader.names.student_id``, as every layout's ids are, so that the export and
    the autograder give a student one id, and one set of random cases), characters other than letters, digits and
    ``@ . + -`` made _ (the rule ids from Gradescope have always followed)."""
    return _UNSAFE.sub("_", student_id(raw).strip()).lstrip(".")


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def submitter_id(submitter: Mapping[str, Any]) -> str:
    """The id a submitter is graded under, from the export or the autograder: their SID, else e-mail, else name;
    "" when they have none of these."""
    return safe_student_id(next((_text(submitter.get(k)) for k in ID_KEYS if _text(submitter.get(k))), ""))


def read_submission_metadata(root: Path) -> dict[str, Any]:
    """The autograder's submission_metadata.json, or {} when it is missing or unreadable (a local test run)."""
    try:
        data = json.loads((root / SUBMISSION_METADATA).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _users(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in metadata.get("users") or [] if isinstance(u, dict)]


def student_of(metadata: dict[str, Any]) -> str:
    """The autograder's submitter's id (the first one of a group, by ``submitter_id``); 'student' without one. It
    seeds the random checks, as a student id does in a class run."""
    for user in _users(metadata):
        if ident := submitter_id(user):
            return ident
    return "student"


def find_submission(folder: Path, metadata: dict[str, Any]) -> Submission:
    """The file to grade among those the student uploaded (the newest readable notebook or .py, whatever its name)."""
    student = student_of(metadata)
    submitted_at = parse_submission_time(metadata.get("created_at"))
    users = _users(metadata)
    notes = (f"group submission by {', '.join(str(u.get('name') or u.get('email')) for u in users)}",) \
        if len(users) > 1 else ()
    files = candidates(folder) if folder.is_dir() else []
    if not files:
        found = ", ".join(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else ""
        problem = (f"your submission holds no notebook (.ipynb) or Python file (.py) (found: {found or 'nothing'}): "
                   "upload your notebook or .py file")
        when = submitted_at or (modified_at(folder) if folder.exists() else datetime.now(UTC))
        return Submission(student, folder, "notebook", when, notes, problem)
    return choose_submission(student, files, directory=folder, submitted_at=submitted_at, notes=notes)
