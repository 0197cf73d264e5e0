"""Find submissions: ``<student>.ipynb`` / ``<student>.py`` in the folder, or a folder ``<student>/`` holding one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from grader.errors import ConfigurationError

KINDS = {".ipynb": "notebook", ".py": "python"}
IGNORED_DIRS = {"__pycache__", ".ipynb_checkpoints", ".git"}


@dataclass(frozen=True)
class Submission:
    student: str
    path: Path
    kind: str  # notebook or python
    submitted_at: datetime
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def _candidates(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if any(p in IGNORED_DIRS or p.startswith(".") for p in parts):
            continue
        if path.is_file() and path.suffix in KINDS:
            found.append(path)
    return found


def discover(directory: Path) -> tuple[list[Submission], list[Skipped]]:
    """Every submission in ``directory``, one per student (the newest file when a student has several)."""
    if not directory.is_dir():
        raise ConfigurationError(f"submissions folder {directory} does not exist")
    by_student: dict[str, list[Path]] = {}
    skipped: list[Skipped] = []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith(".") or entry.name in IGNORED_DIRS or entry.name.lower() == "readme.md":
            continue
        if entry.is_dir():
            files = _candidates(entry)
            if files:
                by_student.setdefault(entry.name, []).extend(files)
            else:
                skipped.append(Skipped(entry, "folder holds no .ipynb or .py file"))
        elif entry.suffix in KINDS:
            by_student.setdefault(entry.stem, []).append(entry)
        else:
            skipped.append(Skipped(entry, f"not a notebook or Python file ({entry.suffix or 'no extension'})"))
    submissions = []
    for student, files in sorted(by_student.items()):
        files.sort(key=lambda p: (_mtime(p), p.suffix == ".ipynb", p.name))
        chosen = files[-1]
        notes: tuple[str, ...] = ()
        if len(files) > 1:
            others = ", ".join(str(p.relative_to(directory)) for p in files[:-1])
            notes = (f"{len(files)} files found for {student}; graded the newest, "
                     f"{chosen.relative_to(directory)} (not {others})",)
        submissions.append(Submission(student, chosen, KINDS[chosen.suffix], _mtime(chosen), notes))
    return submissions, skipped
