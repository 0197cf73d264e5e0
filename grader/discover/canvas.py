"""A Canvas "Download Submissions" zip, unpacked: one file per uploaded file, all at the top of the zip.

Canvas (instructure/canvas-lms, ``lib/content_zipper.rb``: ``get_filename``, ``add_upload_submission``,
``sanitize_user_name``) names each file::

    <lastfirst>[_LATE]_<user id>_<attachment id>_<the file's name as uploaded>
    doejane_LATE_1234_98765_attention.ipynb

``<lastfirst>`` is the student's sortable name ("Doe, Jane") lower-cased, with every character that is not a letter,
digit or ``_`` removed (accented letters stay: "Díaz, José" is ``díazjosé``), and ``_<digits>_`` in it collapsed so
that the ids are the first all-digit parts (what Canvas's own re-upload reads back:
``Assignment#infer_comment_context_from_filename``). ``LATE`` marks a submission Canvas counts late. A file a
student uploaded again under one name is renamed ``name-1.py``, ``name-2.py`` (``Attachment.make_unique_filename``);
attachment ids only grow, so the highest is the newest. Text entries (``<lastfirst>_<user id>_text.html``), links
(``..._link.html``) and anonymous downloads (``anon_<id>_...``, no user id) name no file to grade or no student.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from grader.discover.finder import IGNORED_DIRS, KINDS, Skipped, Submission, choose_submission, modified_at

LATE_NOTE = "Canvas marked this submission late."
EXPECTED = "<lastfirst>[_LATE]_<user id>_<attachment id>_<file name>"
# The first two all-digit parts are the ids, as Canvas reads them; the name before them is never empty.
_FILE = re.compile(r"^(?P<name>.+?)(?:_(?P<late>late))?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$",
                   re.IGNORECASE | re.DOTALL)
_ANONYMOUS = re.compile(r"^(?:late_)?anon_[0-9a-z]+_", re.IGNORECASE)
_ENTRY = re.compile(r"^(?P<name>.+?)(?:_late)?_(?P<user>\d+)_(?P<what>text|link)\.html$", re.IGNORECASE)
# name-1.py: Canvas's rename of a file uploaded again under the same name.
_VERSION = re.compile(r"^(?P<stem>.*?)-(?P<n>\d+)$")


def _entries(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.iterdir()) if not p.name.startswith(".")
            and p.name not in IGNORED_DIRS and p.name.lower() != "readme.md"]


def _fits(name: str) -> bool:
    return bool(_FILE.match(name) or _ENTRY.match(name) or _ANONYMOUS.match(name))


def _looks_like_download(folder: Path) -> bool:
    files = [p for p in _entries(folder) if not p.is_dir()]
    fitting = sum(_fits(p.name) for p in files)
    # A stray file or two (an instructor's notes) do not hide the download; a flat folder's names never fit.
    return fitting > 0 and 2 * fitting >= len(files)


def canvas_download_in(directory: Path) -> Path | None:
    """The unpacked Canvas download in ``directory``: itself, or the only folder in it (the folder the zip was
    unpacked into), recognised by its file names; None when neither looks like one."""
    if _looks_like_download(directory):
        return directory
    folders = [p for p in _entries(directory) if p.is_dir()]
    if len(folders) == 1 and _looks_like_download(folders[0]):
        return folders[0]
    return None


def _version(path: Path, attachment: str, original: str) -> tuple[str, tuple[int, int]]:
    """The file's name without Canvas's ``-N`` (what two versions share), and how new this version is."""
    suffix = Path(original).suffix
    stem = original[: len(original) - len(suffix)] if suffix else original
    match = _VERSION.match(stem)
    base = (match["stem"] if match else stem) + suffix
    return base.lower(), (int(attachment), int(match["n"]) if match else 0)


def discover_canvas(folder: Path, *, directory: Path) -> tuple[list[Submission], list[Skipped]]:
    """One submission per Canvas user in ``folder`` (the download: ``directory`` or the folder inside it; paths are
    relative to ``directory``): the student id is Canvas's user id, so grades go back to the right row."""
    skipped: list[Skipped] = []
    # user id -> [(path, attachment id, name part, late)]
    files: dict[str, list[tuple[Path, str, str, bool]]] = {}
    for path in _entries(folder):
        shown = path.name
        if path.is_dir() and not path.is_symlink():
            skipped.append(Skipped(path, "a folder: Canvas's download holds only files, named "
                                         f"{EXPECTED}"))
            continue
        if _ANONYMOUS.match(shown):
            skipped.append(Skipped(path, "an anonymous-grading download (anon_<id>): Canvas gives no user id, so "
                                         "the grade could not go back; download again once the grades are posted"))
            continue
        if entry := _ENTRY.match(shown):
            what = "text entry" if entry["what"].lower() == "text" else "website URL"
            skipped.append(Skipped(path, f"a {what} submission (user {entry['user']}), not an uploaded file: "
                                         "nothing to grade"))
            continue
        match = _FILE.match(shown)
        if match is None:
            skipped.append(Skipped(path, f"not named as Canvas names a submitted file ({EXPECTED})"))
            continue
        files.setdefault(match["user"], []).append(
            (path, match["attachment"], match["name"], match["late"] is not None))
    submissions = [_student(user, found, directory=directory, skipped=skipped) for user, found in files.items()]
    return sorted(submissions, key=lambda s: (len(s.student), s.student)), skipped


def _student(user: str, found: list[tuple[Path, str, str, bool]], *, directory: Path,
             skipped: list[Skipped]) -> Submission:
    """The one submission graded for Canvas user ``user``: the newest version of each file, then finder's rules."""
    info = {path: (attachment, name, late) for path, attachment, name, late in found}
    latest: dict[str, tuple[tuple[int, int], Path]] = {}
    others: list[Path] = []
    for path, attachment, _name, _late in found:
        if path.suffix.lower() not in KINDS:
            others.append(path)
            continue
        original = _FILE.match(path.name)["file"]  # type: ignore[index]
        base, order = _version(path, attachment, original)
        if base in latest:
            keep, drop = (latest[base], (order, path))
            if order > keep[0]:
                keep, drop = drop, keep
            latest[base] = keep
            skipped.append(Skipped(drop[1], f"an older version of {keep[1].name} (Canvas attachment "
                                            f"{info[drop[1]][0]}; the newer one, {info[keep[1]][0]}, is graded)"))
        else:
            latest[base] = (order, path)
    candidates = [path for _order, path in latest.values()]
    if candidates:
        for path in others:
            skipped.append(Skipped(path, f"not a notebook or Python file ({path.suffix or 'no extension'}); "
                                         f"user {user}'s notebook or .py is graded"))
        chosen = choose_submission(user, sorted(candidates), directory=directory)
    else:
        # Only a PDF, a zip...: the student still gets a page saying what to hand in.
        path = sorted(others)[0]
        found_names = ", ".join(p.name for p in sorted(others))
        chosen = Submission(user, path, "notebook", modified_at(path), problem=(
            f"your Canvas submission holds no notebook (.ipynb) or Python file (.py) (found: {found_names}): "
            "submit your notebook"))
    attachment, name, late = info[chosen.path]
    origin = (("canvas_user", user), ("canvas_submission", attachment), ("canvas_name", name))
    notes = chosen.notes
    if late:  # the graded file's own mark: an older version's does not count
        origin = (*origin, ("canvas_late", "yes"))
        notes = (*notes, LATE_NOTE)
    return replace(chosen, name=name, origin=origin, notes=notes)


def canvas_late(submission: Submission) -> bool:
    """Whether Canvas marked the submission late (its download's ``LATE``), for grades.csv's late column."""
    return ("canvas_late", "yes") in submission.origin
