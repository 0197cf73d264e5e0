"""Which layout a submissions folder has, and discovery in each: flat, nbgrader, or a Gradescope export.

- ``flat``: ``<student>.ipynb`` / ``<student>.py``, or a folder ``<student>/`` holding one (``finder``);
- ``nbgrader``: a course folder holding ``submitted/``, or ``submitted/`` itself:
  ``submitted/<student>/<assignment>/*.ipynb`` with ``timestamp.txt`` (``nbgrader``);
- ``gradescope``: an unpacked "Download Submissions" export, ``submission_metadata.yml`` beside one folder per
  submission; or the one folder the zip unpacked into (``gradescope_export``).
- ``moodle``: an unpacked Moodle "Download all submissions" zip, ``<full name>_<participant id>_assignsubmission_file``
  folders (or files with that prefix); or the one folder the zip unpacked into (``moodle``).
- ``canvas``: an unpacked Canvas "Download Submissions" zip, files named
  ``<lastfirst>[_LATE]_<user id>_<attachment id>_<file name>``; or the one folder the zip unpacked into (``canvas``).

``auto`` recognises them in that order of evidence: the export's metadata file, nbgrader's ``submitted/`` folder or
its ``timestamp.txt`` files, else flat.
A Moodle download is recognised after Gradescope's metadata file and before nbgrader, by its participants' names.
A Canvas download is recognised after Moodle's and before nbgrader, by its files' names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.discover.canvas import EXPECTED as CANVAS_EXPECTED
from grader.discover.canvas import canvas_download_in, discover_canvas
from grader.discover.finder import IGNORED_DIRS, Skipped, Submission, discover_flat
from grader.discover.gradescope_export import METADATA, discover_gradescope_export
from grader.discover.moodle import EXPECTED, discover_moodle, moodle_download_in
from grader.discover.nbgrader import TIMESTAMP, discover_nbgrader
from grader.errors import ConfigurationError

FLAT, NBGRADER, GRADESCOPE = "flat", "nbgrader", "gradescope"
LAYOUTS = ("auto", FLAT, NBGRADER, GRADESCOPE)
MOODLE = "moodle"
LAYOUTS = (*LAYOUTS, MOODLE)
CANVAS = "canvas"
LAYOUTS = (*LAYOUTS, CANVAS)
# Folders an unpacked zip may hold beside what it carries (macOS's resource forks).
_CLUTTER = {"__MACOSX"}


@dataclass(frozen=True)
class Layout:
    name: str  # flat, nbgrader or gradescope
    folder: Path  # where the students' folders are: the submissions folder, its submitted/, or the export inside it
    detected: bool  # recognised by auto, rather than named on the command line

    def describe(self, directory: Path) -> str:
        """One line for the command's output, e.g. 'Submissions: nbgrader layout (submitted/<student>/...) ...'."""
        where = "" if self.folder == directory else f" in {self.folder.relative_to(directory)}/"
        how = "detected" if self.detected else "as asked"
        if self.name == MOODLE:
            return (f"Submissions: a Moodle download{where} ({how}: {EXPECTED}); students by participant id; "
                    "no submission times (the zip's are the download's): Moodle marks late submissions itself")
        if self.name == CANVAS:
            return (f"Submissions: a Canvas download{where} ({how}: {CANVAS_EXPECTED}); students by Canvas user "
                    "id; submission times from the files' modification times; Canvas's LATE mark kept as a note")
        if self.name == GRADESCOPE:
            return (f"Submissions: a Gradescope export{where} ({how}: {METADATA}); students by SID (else e-mail), "
                    f"submission times from its :created_at:")
        if self.name == NBGRADER:
            return (f"Submissions: nbgrader's layout{where} ({how}: submitted/<student>/<assignment>/); submission "
                    f"times from {TIMESTAMP}, else the files' modification times")
        return (f"Submissions: one file or folder per student ({how}: <student>.ipynb, <student>.py or "
                f"<student>/); submission times from the files' modification times")


def _subfolders(directory: Path) -> list[Path]:
    return [p for p in sorted(directory.iterdir()) if p.is_dir() and not p.name.startswith(".")
            and p.name not in IGNORED_DIRS | _CLUTTER]


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


def detect_layout(directory: Path, layout: str = "auto") -> Layout:
    """The layout of ``directory``: the one named (``flat``, ``nbgrader``, ``gradescope``) or, for ``auto``, the one
    its files show."""
    if layout not in LAYOUTS:
        raise ConfigurationError(f"unknown layout {layout!r} (one of {', '.join(LAYOUTS)})")
    if not directory.is_dir():
        raise ConfigurationError(f"submissions folder {directory} does not exist")
    detected = layout == "auto"
    if layout in ("auto", GRADESCOPE):
        if (export := _export_in(directory)) is not None:
            return Layout(GRADESCOPE, export, detected)
        if layout == GRADESCOPE:
            raise ConfigurationError(f"{directory} holds no {METADATA}: unpack Gradescope's \"Download Submissions\" "
                                     "zip and grade the folder it made")
    if layout in ("auto", MOODLE):
        if (download := moodle_download_in(directory)) is not None:
            return Layout(MOODLE, download, detected)
        if layout == MOODLE:
            raise ConfigurationError(f"{directory} holds no Moodle submissions ({EXPECTED}...): unpack Moodle's "
                                     "\"Download all submissions\" zip and grade the folder it made")
    if layout in ("auto", CANVAS):
        if (canvas := canvas_download_in(directory)) is not None:
            return Layout(CANVAS, canvas, detected)
        if layout == CANVAS:
            raise ConfigurationError(f"{directory} holds no Canvas submissions ({CANVAS_EXPECTED}): unpack "
                                     "Canvas's \"Download Submissions\" zip and grade the folder it made")
    if layout in ("auto", NBGRADER):
        if (submitted := _nbgrader_in(directory)) is not None:
            return Layout(NBGRADER, submitted, detected)
        if layout == NBGRADER:
            return Layout(NBGRADER, directory, detected)  # asked for: a submitted/ folder under another name
    return Layout(FLAT, directory, detected)


def discover(directory: Path, *, layout: str = "auto",
             assignment: str | None = None) -> tuple[list[Submission], list[Skipped]]:
    """Every submission in ``directory``, one per student, in the given layout (``auto``: detected).

    ``assignment`` picks nbgrader's assignment folder (``submitted/<student>/<assignment>/``).
    """
    found = detect_layout(directory, layout)
    if found.name == GRADESCOPE:
        return discover_gradescope_export(found.folder, directory=directory)
    if found.name == MOODLE:
        return discover_moodle(found.folder, directory=directory)
    if found.name == CANVAS:
        return discover_canvas(found.folder, directory=directory)
    if found.name == NBGRADER:
        return discover_nbgrader(found.folder, directory=directory, assignment=assignment)
    return discover_flat(directory)
