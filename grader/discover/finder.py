"""Find submissions in a flat folder: ``<student>.ipynb`` / ``<student>.py``, or a folder ``<student>/`` holding one;
or one student's file given by itself (``submission_file``).

``choose_submission`` (one student's files to the one graded) and ``candidates`` are shared with the other layouts
(nbgrader, Gradescope export: see ``layouts``).
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader.errors import ConfigurationError

KINDS = {".ipynb": "notebook", ".py": "python"}
WHAT = {"notebook": "notebook (.ipynb)", "python": "Python file (.py)"}  # as messages name the file to submit
IGNORED_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git", "__MACOSX"}  # never a student's (inventory.py lists them)


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path
    kind: str  # notebook or python
    submitted_at: datetime
    notes: tuple[str, ...] = ()
    # Why the file must not or cannot be read (a link out of the folder, a folder named like a file, ...), found
    # while discovering; reading the submission then refuses it with this message.
    problem: str = ""
    # Who it is, as a course platform's download names them (Moodle's full name), for the pages: the student id
    # stays the platform's own number. And what the platform's import needs to find the student again: (key,
    # value) pairs such as ("moodle_folder", "Ana Díaz_1234_assignsubmission_file_") or ("canvas_user", "5678").
    name: str = ""
    origin: tuple[tuple[str, str], ...] = ()
    # The student's other files found beside the one graded (older ones, a PDF beside the notebook): not graded, and
    # accounted for as theirs (pipeline/accounting.py).
    also: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Skipped:
    """Something found in the submissions folder and not graded, with why. ``ignored``: what every download or
    folder holds besides submissions (macOS's ``__MACOSX``, ``.DS_Store``, a README), counted and listed apart."""

    path: Path
    reason: str
    ignored: bool = False


def _kind(path: Path) -> str | None:
    return KINDS.get(path.suffix.lower())


def modified_at(path: Path) -> datetime:
    try:
        seconds = path.stat().st_mtime
    except OSError:  # a broken link: its own time
        seconds = path.lstat().st_mtime
    return datetime.fromtimestamp(seconds, tz=UTC)


def link_problem(path: Path, shown: str, root: Path) -> str:
    """Why the grader will not follow ``path`` (a broken link, a loop, a link out of ``root``), or ""."""
    kind = _kind(path)
    submit = f"submit your {WHAT[kind]} itself" if kind else "submit your files themselves"
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        return f"{shown} is a link to a file that does not exist: {submit}"
    except (OSError, RuntimeError):  # a link loop (RuntimeError before Python 3.13)
        return f"{shown} is a link that leads nowhere (a loop): {submit}"
    if not resolved.is_relative_to(root):
        # A student could otherwise hand in a link to the solutions and have them graded as their code.
        target = "folder" if resolved.is_dir() else "file"
        return (f"{shown} is a link to a {target} outside the submissions folder, which the grader does not "
                f"follow: {submit}")
    return ""


def _problem(path: Path, shown: str, root: Path) -> str:
    """Why ``path`` is not a plain file inside ``root`` that the grader may read, or ""; ``shown`` names it."""
    if problem := link_problem(path, shown, root):
        return problem
    what = WHAT[_kind(path) or "python"]
    try:
        mode = path.stat().st_mode
    except OSError:
        return ""  # reading it will say what is wrong
    if stat.S_ISDIR(mode):
        return f"{shown} is a folder, not a {what}: submit the file itself"
    if not stat.S_ISREG(mode):  # a named pipe would block the grader forever
        return f"{shown} is not a regular file: submit your {what} itself"
    return ""


def candidates(folder: Path) -> list[Path]:
    """The notebooks and .py files anywhere under ``folder`` (checkpoints, caches and hidden files left out)."""
    found = []
    for path in sorted(folder.rglob("*")):  # rglob does not descend into linked folders
        parts = path.relative_to(folder).parts
        if any(p in IGNORED_DIRS or p.startswith(".") for p in parts):
            continue
        if _kind(path) and (path.is_symlink() or path.is_file()):  # a broken link is reported, not passed over
            found.append(path)
    return found


def submission_file(path: Path) -> Submission:
    """One student's file, given by itself (``grader check FILE``, the kit's recording); the student id is the file's
    stem."""
    if not path.exists():
        raise ConfigurationError(f"{path} does not exist")
    if path.is_dir():
        raise ConfigurationError(f"{path} is a folder: check the notebook (.ipynb) or Python file (.py) in it")
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise ConfigurationError(f"{path} is not a notebook (.ipynb) or a Python file (.py)")
    return Submission(student=path.stem, path=path.resolve(), kind=kind, submitted_at=modified_at(path))


def discover_flat(directory: Path) -> tuple[list[Submission], list[Skipped]]:
    """Every submission in ``directory``, one per student (the newest readable file when a student has several)."""
    if not directory.is_dir():
        raise ConfigurationError(f"submissions folder {directory} does not exist")
    root = directory.resolve()
    by_student: dict[str, list[Path]] = {}
    skipped: list[Skipped] = []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith(".") or entry.name in IGNORED_DIRS or entry.name.lower() == "readme.md":
            continue
        if entry.is_dir() and not link_problem(entry, entry.name, root):
            # A folder named like a file (bob.ipynb/) belongs to its stem; empty, it is that student's broken file.
            student = entry.stem if _kind(entry) else entry.name
            files = candidates(entry)
            if files:
                by_student.setdefault(student, []).extend(files)
            elif _kind(entry):
                by_student.setdefault(student, []).append(entry)
            else:
                skipped.append(Skipped(entry, "folder holds no .ipynb or .py file"))
        elif _kind(entry) or entry.is_dir():  # a file, a broken link, or a link to a folder outside
            by_student.setdefault(entry.stem if _kind(entry) else entry.name, []).append(entry)
        else:
            skipped.append(Skipped(entry, f"not a notebook or Python file ({entry.suffix or 'no extension'})"))
    submissions = [choose_submission(student, files, directory=directory)
                   for student, files in sorted(by_student.items())]
    return submissions, skipped


def choose_submission(student: str, files: list[Path], *, directory: Path, submitted_at: datetime | None = None,
                      notes: tuple[str, ...] = ()) -> Submission:
    """The one of ``files`` (a student's, under ``directory``) that is graded, with a note when there were several.

    ``submitted_at`` is the time an export's metadata gives; without one, the chosen file's modification time.
    """
    root = directory.resolve()
    problems = {p: _problem(p, str(p.relative_to(directory)), root) for p in files}
    # Readable files first, then the newest; a notebook wins a tie with a .py.
    files = sorted(files, key=lambda p: (not problems[p], modified_at(p), _kind(p) == "notebook", p.name))
    chosen = files[-1]
    if len(files) > 1:
        others = ", ".join(str(p.relative_to(directory)) for p in files[:-1])
        newest = modified_at(chosen) == max(modified_at(p) for p in files)
        which = "the newest" if newest else "the newest one that can be read"
        notes = (*notes, f"{len(files)} files found for {student}; graded {which}, "
                         f"{chosen.relative_to(directory)} (not {others})")
    return Submission(student, chosen, _kind(chosen) or "python", submitted_at or modified_at(chosen), notes,
                      problems[chosen], also=tuple(files[:-1]))
