"""nbgrader's layout: ``submitted/<student>/<assignment>/*.ipynb``, with ``timestamp.txt`` for the submission time.

nbgrader collects every assignment of a course under ``submitted/``, so each student folder may hold several
assignment folders; the grader reads the one named like the assignment it grades, or a student's only one (nbgrader
names assignments freely, ``ps1`` or ``week10``). A student with neither is listed as skipped, with the folders found.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from grader.discover.finder import (
    IGNORED_DIRS,
    Skipped,
    Submission,
    candidates,
    choose_submission,
    link_problem,
    modified_at,
)
from grader.times import parse_submission_time

TIMESTAMP = "timestamp.txt"


def _folders(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir()
                  if p.is_dir() and not p.name.startswith(".") and p.name not in IGNORED_DIRS)


def _assignment_folder(student_dir: Path, assignment: str | None) -> tuple[Path | None, str]:
    """The folder of ``student_dir`` to grade and a note on how it was chosen, or None and why none was."""
    folders = _folders(student_dir)
    if assignment and (student_dir / assignment).is_dir():
        return student_dir / assignment, ""
    if len(folders) == 1:
        unnamed = f" (none is named {assignment})" if assignment else ""
        return folders[0], f"graded the student's only nbgrader assignment folder, {folders[0].name}{unnamed}"
    if not folders:
        return None, "holds no assignment folder (nbgrader: submitted/<student>/<assignment>/)"
    return None, (f"holds several assignment folders ({', '.join(p.name for p in folders)}) and none is named "
                  f"{assignment}: grade submitted/ with the grader's assignment of that name")


def _timestamp(folder: Path) -> tuple[datetime | None, tuple[str, ...]]:
    """nbgrader's submission time for ``folder``, and a note when its timestamp.txt cannot be read."""
    stamp = folder / TIMESTAMP
    if not stamp.is_file():
        return None, ()
    text = stamp.read_text(encoding="utf-8", errors="replace").strip()
    when = parse_submission_time(text)
    if when is None:
        return None, (f"{TIMESTAMP} holds {text[:60]!r}, not a time the grader can read: the file's time is used",)
    return when, ()


def discover_nbgrader(submitted: Path, *, directory: Path,
                      assignment: str | None) -> tuple[list[Submission], list[Skipped]]:
    """Every student's submission under ``submitted`` (nbgrader's ``submitted/`` folder, ``directory`` or inside
    it: paths in results are relative to ``directory``)."""
    root = directory.resolve()
    submissions: list[Submission] = []
    skipped: list[Skipped] = []
    for student_dir in sorted(submitted.iterdir()):
        if student_dir.name.startswith(".") or student_dir.name in IGNORED_DIRS:
            continue
        if outside := link_problem(student_dir, student_dir.name, root):
            skipped.append(Skipped(student_dir, outside))
            continue
        if not student_dir.is_dir():
            skipped.append(Skipped(student_dir, "not a student folder (nbgrader: submitted/<student>/<assignment>/)"))
            continue
        folder, chosen = _assignment_folder(student_dir, assignment)
        if folder is None:
            skipped.append(Skipped(student_dir, chosen))
            continue
        shown = str(folder.relative_to(directory))
        when, notes = _timestamp(folder)
        notes = (chosen, *notes) if chosen else notes
        problem = link_problem(folder, shown, root)
        files = [] if problem else candidates(folder)
        if not problem and not files:
            # nbgrader collected a folder, so the student did submit: their result says what was missing.
            found = ", ".join(p.name for p in sorted(folder.iterdir()) if p.name != TIMESTAMP) or "nothing else"
            problem = f"{shown} holds no notebook (.ipynb) or Python file (.py) (found: {found}): submit your notebook"
        if problem:
            submissions.append(Submission(student_dir.name, folder, "notebook", when or modified_at(folder), notes,
                                          problem))
        else:
            submissions.append(choose_submission(student_dir.name, files, directory=directory, submitted_at=when,
                                                 notes=notes))
    return submissions, skipped
