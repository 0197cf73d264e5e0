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


def _within(path: Path, entry: Path) -> bool:
    return path == entry or path.is_relative_to(entry)


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


def inventory(directory: Path, folder: Path, layout: str, submissions: Sequence[Submission],
              skipped: Sequence[Skipped]) -> tuple[list[Entry], list[Skipped]]:
    """Every entry of ``directory`` (down to the layout's ``folder``) with its fate; and, for the entries no layout
    accounted for, what to add to the skipped list (ignored ones marked so)."""
    entries: list[Entry] = []
    unread: list[Skipped] = []
    for path, outside in _entries(directory, folder):
        shown = readable(str(path.relative_to(directory)))
        graded = sorted({s.student for s in submissions if _within(s.path, path)})
        if graded:
            entries.append(Entry(shown, GRADED, tuple(graded)))
            continue
        theirs = sorted({s.student for s in submissions if any(_within(p, path) for p in s.also)})
        if theirs:
            graded_files = ", ".join(sorted({str(s.path.relative_to(directory)) for s in submissions
                                             if s.student in theirs}))
            entries.append(Entry(shown, OTHER, tuple(theirs), f"not graded: {graded_files} is"))
            continue
        reasons = list(dict.fromkeys(s.reason for s in skipped if _within(s.path, path)))
        if reasons:
            ignored = all(s.ignored for s in skipped if _within(s.path, path))
            entries.append(Entry(shown, IGNORED if ignored else SKIPPED, reason="; ".join(reasons)))
            continue
        if (why := _clutter(path)) is not None or outside:
            reason = why or f"not a submission: {outside}"
            entries.append(Entry(shown, IGNORED, reason=reason))
            unread.append(Skipped(path, reason, ignored=True))
            continue
        reason = (f"not read: the {layout} layout takes no file or folder named like this"
                  + (" (its name starts with a dot, as hidden files' do)" if path.name.startswith(".") else ""))
        entries.append(Entry(shown, SKIPPED, reason=reason))
        unread.append(Skipped(path, reason))
    return entries, unread


def fates(entries: Sequence[Entry]) -> dict[str, list[Entry]]:
    """The entries by fate, in the order GRADED, OTHER, SKIPPED, IGNORED (every fate present, maybe empty)."""
    return {fate: [e for e in entries if e.fate == fate] for fate in (GRADED, OTHER, SKIPPED, IGNORED)}


def as_dict(entry: Entry) -> dict[str, object]:
    return dataclasses.asdict(entry)
