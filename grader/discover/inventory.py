"""What a submissions folder holds, entry by entry, and what became of each: graded (as whose submission), another
file of a graded student, skipped (with why), or ignored (what every download holds besides submissions).

The layouts decide what to grade; this module only looks at what they left, so that nothing in the folder goes
unmentioned whatever a layout does: an entry no layout accounted for is reported as skipped, with the reason it was
not read. The entries are the folder's own, and, where a layout's submissions sit deeper (nbgrader's ``submitted/``,
the folder an unpacked zip made), the entries of each folder on the way there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.discover.finder import Skipped, Submission
from grader.names import readable

GRADED, OTHER, SKIPPED, IGNORED = "graded", "other file", "skipped", "ignored"

# What folders and downloads carry besides submissions, by name: counted and listed, never graded.
_CLUTTER = {
    ".ds_store": "macOS's folder settings",
    "__macosx": "macOS's resource forks, added by its zip tool",
    "thumbs.db": "Windows's thumbnail cache",
    "desktop.ini": "Windows's folder settings",
    ".ipynb_checkpoints": "Jupyter's autosaved copies",
    "__pycache__": "Python's compiled files",
    ".git": "a git repository's own files",
    ".grader.lock": "the grader's lock",
    "submission_metadata.yml": "Gradescope's list of who submitted what, read for the students' ids and times",
    "timestamp.txt": "nbgrader's submission time, read with the submission",
}


@dataclass(frozen=True)
class Entry:
    path: str  # relative to the submissions folder
    fate: str  # GRADED, OTHER, SKIPPED or IGNORED
    students: tuple[str, ...] = ()  # whose submission (GRADED) or whose other file (OTHER)
    reason: str = ""


def _clutter(path: Path) -> str | None:
    name = path.name
    if name.casefold() in _CLUTTER:
        return _CLUTTER[name.casefold()]
    if name.startswith("._"):
        return "macOS's resource fork of a file (AppleDouble), made when copying to another disk or zipping"
    if name.casefold() in ("readme", "readme.md", "readme.txt"):
        return "a README"
    return None


def _entries(directory: Path, folder: Path) -> list[tuple[Path, str]]:
    """(entry, why it is outside the layout's folder or "") for every entry on the way from ``directory`` to
    ``folder`` and in ``folder``."""
    found: list[tuple[Path, str]] = []
    here = directory
    for part in folder.relative_to(directory).parts:
        found += [(p, f"beside {part}/, where the submissions are") for p in sorted(here.iterdir()) if p.name != part]
        here = here / part
    found += [(p, "") for p in sorted(folder.iterdir())]
    return found


def _entry_of(path: Path, directory: Path, way: tuple[str, ...]) -> Path | None:
    """The entry (as ``_entries`` lists them) that ``path`` is or lies in; None for a path outside ``directory``."""
    try:
        parts = path.relative_to(directory).parts
    except ValueError:
        return None
    for depth, part in enumerate(parts):
        if depth >= len(way) or part != way[depth]:
            return directory.joinpath(*parts[: depth + 1])
    return None  # the layout's folder itself


def inventory(directory: Path, folder: Path, layout: str, submissions: Sequence[Submission],
              skipped: Sequence[Skipped]) -> tuple[list[Entry], list[Skipped]]:
    """Every entry of ``directory`` (down to the layout's ``folder``) with its fate; and the skipped list whole: the
    layout's, what downloads carry besides submissions marked ignored, and every entry no layout accounted for."""
    way = folder.relative_to(directory).parts
    graded: dict[Path, set[str]] = {}
    others: dict[Path, set[str]] = {}
    reasons: dict[Path, list[Skipped]] = {}
    for submission in submissions:
        if (entry := _entry_of(submission.path, directory, way)) is not None:
            graded.setdefault(entry, set()).add(submission.student)
        for path in submission.also:
            if (entry := _entry_of(path, directory, way)) is not None:
                others.setdefault(entry, set()).add(submission.student)
    skipped = [dataclasses.replace(s, reason=why, ignored=True) if (why := _clutter(s.path)) else s for s in skipped]
    for skip in skipped:
        if (entry := _entry_of(skip.path, directory, way)) is not None:
            reasons.setdefault(entry, []).append(skip)
    graded_file = {s.student: readable(str(s.path.relative_to(directory))) for s in submissions
                   if s.path.is_relative_to(directory)}
    entries: list[Entry] = []
    unread: list[Skipped] = []
    for path, outside in _entries(directory, folder):
        shown = readable(str(path.relative_to(directory)))
        if path in graded:
            entries.append(Entry(shown, GRADED, tuple(sorted(graded[path]))))
        elif path in others:
            theirs = tuple(sorted(others[path]))
            files = ", ".join(sorted({graded_file[s] for s in theirs if s in graded_file}))
            entries.append(Entry(shown, OTHER, theirs, f"not graded: {files} is"))
        elif path in reasons:
            said = reasons[path]
            fate = IGNORED if all(s.ignored for s in said) else SKIPPED
            entries.append(Entry(shown, fate, reason="; ".join(dict.fromkeys(s.reason for s in said))))
        elif (why := _clutter(path)) is not None or outside:
            reason = why or f"not a submission: {outside}"
            entries.append(Entry(shown, IGNORED, reason=reason))
            unread.append(Skipped(path, reason, ignored=True))
        else:
            reason = (f"not read: the {layout} layout takes no file or folder named like this"
                      + (" (its name starts with a dot, as hidden files' do)" if path.name.startswith(".") else ""))
            entries.append(Entry(shown, SKIPPED, reason=reason))
            unread.append(Skipped(path, reason))
    return entries, [*skipped, *unread]


def fates(entries: Sequence[Entry]) -> dict[str, list[Entry]]:
    """The entries by fate, in the order GRADED, OTHER, SKIPPED, IGNORED (every fate present, maybe empty)."""
    return {fate: [e for e in entries if e.fate == fate] for fate in (GRADED, OTHER, SKIPPED, IGNORED)}

