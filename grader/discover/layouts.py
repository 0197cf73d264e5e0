"""Which layout a submissions folder has, and discovery in each: flat, nbgrader, a Gradescope export, a Moodle or
a Canvas download. Each is one row of ``LAYOUT_TYPES`` (how it is recognised, discovered and described): adding a
layout is adding a row.

- ``flat``: ``<student>.ipynb`` / ``<student>.py``, or a folder ``<student>/`` holding one (``finder``);
- ``nbgrader``: a course folder holding ``submitted/``, or ``submitted/`` itself:
  ``submitted/<student>/<assignment>/*.ipynb`` with ``timestamp.txt`` (``nbgrader``);
- ``gradescope``: an unpacked "Download Submissions" export, ``submission_metadata.yml`` beside one folder per
  submission; or the one folder the zip unpacked into (``gradescope_export``).
- ``moodle``: an unpacked Moodle "Download all submissions" zip, ``<full name>_<participant id>_assignsubmission_file``
  folders (or files with that prefix); or the one folder the zip unpacked into (``moodle``).
- ``canvas``: an unpacked Canvas "Download Submissions" zip, files named
  ``<lastfirst>[_LATE]_<user id>_<attachment id>_<file name>``; or the one folder the zip unpacked into (``canvas``).

``auto`` tries them in ``LAYOUT_TYPES``'s order of evidence: the Gradescope export's metadata file; a Moodle
download, by its participants' names; a Canvas download, by its files' names; nbgrader's ``submitted/`` folder or
its ``timestamp.txt`` files; else flat.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.discover.canvas import EXPECTED as CANVAS_EXPECTED
from grader.discover.canvas import canvas_download_in, discover_canvas
from grader.discover.finder import IGNORED_DIRS, Skipped, Submission, discover_flat
from grader.discover.gradescope_export import METADATA, discover_gradescope_export
from grader.discover.inventory import Entry, inventory
from grader.discover.moodle import EXPECTED, discover_moodle, moodle_download_in
from grader.discover.nbgrader import TIMESTAMP, discover_nbgrader
from grader.errors import ConfigurationError
from grader.names import readable, student_id

FLAT, NBGRADER, GRADESCOPE, MOODLE, CANVAS = "flat", "nbgrader", "gradescope", "moodle", "canvas"

Discoverer = Callable[[Path, Path, str | None], tuple[list[Submission], list[Skipped]]]


@dataclass(frozen=True)
class LayoutType:
    """One layout: how ``auto`` recognises it, how its submissions are found, and how the command names it."""

    name: str
    find: Callable[[Path], Path | None]  # where its submissions are in the folder given, or None if it is not this
    discover: Discoverer  # (where they are, the folder given, nbgrader's assignment) -> submissions, skipped
    description: str  # for Layout.describe: {where} (" in <folder>/" or "") and {how} ("detected" or "as asked")
    # Named on the command line but not found: the message; None: take the folder given as this layout anyway.
    not_found: str | None = None


def _subfolders(directory: Path) -> list[Path]:
    return [p for p in sorted(directory.iterdir()) if p.is_dir() and not p.name.startswith(".")
            and p.name not in IGNORED_DIRS]


def _export_in(directory: Path) -> Path | None:
    """The Gradescope export in ``directory``: itself, or the only folder in it (the zip's own top folder)."""
    if (directory / METADATA).is_file():
        return directory
    folders = _subfolders(directory)
    if len(folders) == 1 and (folders[0] / METADATA).is_file():
        return folders[0]
    return None


def _nbgrader_in(directory: Path) -> Path | None:
    """nbgrader's submitted/ folder: inside ``directory`` (a course folder), or ``directory`` itself."""
    if (directory / "submitted").is_dir():
        return directory / "submitted"
    if any(directory.glob(f"*/*/{TIMESTAMP}")):
        return directory
    # Named like nbgrader's folder, with notebooks two levels down and none at the top (a flat folder has those).
    loose = any(p.suffix.lower() in (".ipynb", ".py") for p in directory.iterdir())
    if directory.name == "submitted" and not loose and any(directory.glob("*/*/*.ipynb")):
        return directory
    return None


# In the order ``auto`` tries them (see the module's docstring): flat, last, takes any folder.
LAYOUT_TYPES = (
    LayoutType(
        GRADESCOPE, _export_in,
        lambda folder, directory, _assignment: discover_gradescope_export(folder, directory=directory),
        f"Submissions: a Gradescope export{{where}} ({{how}}: {METADATA}); students by SID (else e-mail), "
        "submission times from its :created_at:",
        f"{{directory}} holds no {METADATA}: unpack Gradescope's \"Download Submissions\" zip and grade the folder "
        "it made"),
    LayoutType(
        MOODLE, moodle_download_in,
        lambda folder, directory, _assignment: discover_moodle(folder, directory=directory),
        f"Submissions: a Moodle download{{where}} ({{how}}: {EXPECTED}); students by participant id; no submission "
        "times (the zip's are the download's): Moodle marks late submissions itself",
        f"{{directory}} holds no Moodle submissions ({EXPECTED}...): unpack Moodle's \"Download all submissions\" "
        "zip and grade the folder it made"),
    LayoutType(
        CANVAS, canvas_download_in,
        lambda folder, directory, _assignment: discover_canvas(folder, directory=directory),
        f"Submissions: a Canvas download{{where}} ({{how}}: {CANVAS_EXPECTED}); students by Canvas user id; "
        "submission times from the files' modification times; Canvas's LATE mark kept as a note",
        f"{{directory}} holds no Canvas submissions ({CANVAS_EXPECTED}): unpack Canvas's \"Download Submissions\" "
        "zip and grade the folder it made"),
    LayoutType(
        NBGRADER, _nbgrader_in,
        lambda folder, directory, assignment: discover_nbgrader(folder, directory=directory, assignment=assignment),
        "Submissions: nbgrader's layout{where} ({how}: submitted/<student>/<assignment>/); submission times from "
        f"{TIMESTAMP}, else the files' modification times"),  # named and not found: submitted/ under another name
    LayoutType(
        FLAT, lambda directory: directory,
        lambda _folder, directory, _assignment: discover_flat(directory),
        "Submissions: one file or folder per student ({how}: <student>.ipynb, <student>.py or <student>/); "
        "submission times from the files' modification times"),
)
_BY_NAME = {kind.name: kind for kind in LAYOUT_TYPES}
LAYOUTS = ("auto", FLAT, NBGRADER, GRADESCOPE, MOODLE, CANVAS)  # as --layout lists them


@dataclass(frozen=True)
class Layout:
    name: str  # one of LAYOUTS but auto
    folder: Path  # where the students' folders are: the submissions folder, its submitted/, or the export inside it
    detected: bool  # recognised by auto, rather than named on the command line

    def describe(self, directory: Path) -> str:
        """One line for the command's output, e.g. 'Submissions: nbgrader layout (submitted/<student>/...) ...'."""
        where = "" if self.folder == directory else f" in {self.folder.relative_to(directory)}/"
        how = "detected" if self.detected else "as asked"
        return _BY_NAME[self.name].description.format(where=where, how=how)


def detect_layout(directory: Path, layout: str = "auto") -> Layout:
    """The layout of ``directory``: the one named (``flat``, ``nbgrader``, ``gradescope``, ``moodle``, ``canvas``)
    or, for ``auto``, the one its files show."""
    if layout not in LAYOUTS:
        raise ConfigurationError(f"unknown layout {layout!r} (one of {', '.join(LAYOUTS)})")
    if not directory.is_dir():
        raise ConfigurationError(f"submissions folder {directory} does not exist")
    detected = layout == "auto"
    for kind in LAYOUT_TYPES:
        if layout not in ("auto", kind.name):
            continue
        if (folder := kind.find(directory)) is not None:
            return Layout(kind.name, folder, detected)
        if layout == kind.name:  # named, and not there
            if kind.not_found is not None:
                raise ConfigurationError(kind.not_found.format(directory=directory))
            return Layout(kind.name, directory, detected)
    raise AssertionError("not reached: flat, the last kind, takes any folder")


@dataclass(frozen=True)
class Discovery:
    """A submissions folder as read: a submission per student, everything not graded with why, and every entry of
    the folder with what became of it (inventory.py)."""

    directory: Path  # the folder given
    layout: Layout
    submissions: list[Submission]
    skipped: list[Skipped]
    entries: list[Entry]

    @functools.cached_property
    def by_student(self) -> dict[str, Submission]:
        return {s.student: s for s in self.submissions}


def _one_per_student(submissions: list[Submission]) -> list[Submission]:
    """Ids in Unicode NFC (``grader.names.student_id``); two submissions whose ids differ only in normalisation (a
    name typed on macOS and on Linux) are one student's, graded on the newer."""
    by_student: dict[str, list[Submission]] = {}
    for submission in submissions:
        normal = student_id(submission.student)
        # what discovery said of it names files, whose names may not be UTF-8: as text, like the id
        by_student.setdefault(normal, []).append(dataclasses.replace(
            submission, student=normal, name=readable(submission.name), problem=readable(submission.problem),
            notes=tuple(readable(n) for n in submission.notes)))
    kept: list[Submission] = []
    for student, theirs in by_student.items():
        theirs.sort(key=lambda s: (not s.problem, s.submitted_at, s.kind == "notebook", str(s.path)))
        chosen, others = theirs[-1], theirs[:-1]
        if others:
            note = (f"{len(theirs)} submissions found for {student} (the same name in other Unicode forms); graded "
                    f"the newest, {chosen.path.name} (not {', '.join(s.path.name for s in others)})")
            chosen = dataclasses.replace(chosen, notes=(*chosen.notes, note),
                                         also=(*chosen.also, *(s.path for s in others)))
        kept.append(chosen)
    return sorted(kept, key=lambda s: s.student)


def discover_all(directory: Path, *, layout: str | Layout = "auto", assignment: str | None = None) -> Discovery:
    """Every submission in ``directory``, one per student, in the given layout (``auto``: detected; a ``Layout``
    that ``detect_layout`` already found is used as it is, so a run looks at the folder once), and the account of
    every entry in it: whatever is not graded is listed with why, never passed over in silence.

    ``assignment`` picks nbgrader's assignment folder (``submitted/<student>/<assignment>/``).
    """
    found = layout if isinstance(layout, Layout) else detect_layout(directory, layout)
    submissions, skipped = _BY_NAME[found.name].discover(found.folder, directory, assignment)
    submissions = _one_per_student(submissions)
    skipped = [dataclasses.replace(s, reason=readable(s.reason)) for s in skipped]
    entries, skipped = inventory(directory, found.folder, found.name, submissions, skipped)
    return Discovery(directory, found, submissions, skipped, entries)


def discover(directory: Path, *, layout: str | Layout = "auto",
             assignment: str | None = None) -> tuple[list[Submission], list[Skipped]]:
    """``discover_all``'s submissions and skipped entries (ignored ones included, marked ``ignored``)."""
    found = discover_all(directory, layout=layout, assignment=assignment)
    return found.submissions, found.skipped
