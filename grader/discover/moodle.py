"""A Moodle assignment's "Download all submissions" zip, unpacked.

Moodle names every participant's files ``<full name>_<participant id>_assignsubmission_<plugin>``
(mod/assign/classes/downloader.php, Moodle 4.1+; locallib.php ``download_submissions`` before):

- folder form ("Download submissions in folders", the default since Moodle 3.1): a folder per participant and
  submission plugin, ``Ana Díaz_1234_assignsubmission_file/attention.ipynb`` (Moodle 3.1-4.0 end the folder's name
  with one more ``_``);
- flat form (that preference off, and every Moodle before 3.1): one file per upload,
  ``Ana Díaz_1234_assignsubmission_file_attention.ipynb``.

The participant id is the assignment's own number for the student (the worksheet's "Participant 1234"), not the
Moodle user id. Moodle replaces ``_`` in a name with a space and drops ``& < > " ` | ' : \\ /`` (``clean_filename``),
so "Zoë O'Brien" arrives as "Zoë OBrien": names here are the download's, the worksheet holds the real ones. The
download holds only each participant's latest submission, says nothing of lateness, and its zip entries carry the
time of the download, not of the submission.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from grader.discover.finder import IGNORED_DIRS, Skipped, Submission, candidates, choose_submission, link_problem

PARTICIPANT, FOLDER, NAME = "moodle_participant", "moodle_folder", "moodle_name"
# Read as Moodle's own feedback-zip importer reads a path part (assignfeedback_file importziplib.php): split at the
# first four underscores, the second piece a number. Names hold no _ (Moodle made them spaces), so this is exact.
_PATTERN = re.compile(r"^(?P<name>[^_]+)_(?P<id>\d+)_(?P<plugin>assignsubmission_[^_]+)(?:_(?P<rest>.*))?$")
EXPECTED = "<full name>_<participant id>_assignsubmission_<plugin>"


def _named(name: str) -> re.Match[str] | None:
    return _PATTERN.match(name)


def _entries(directory: Path) -> list[Path]:
    # A participant's full name may begin with a dot (Moodle keeps it): their files are named, not hidden.
    return [p for p in sorted(directory.iterdir()) if (_named(p.name) or not p.name.startswith("."))
            and p.name not in IGNORED_DIRS]


def moodle_download_in(directory: Path) -> Path | None:
    """The unpacked download in ``directory``: itself, or the only folder in it (unzipping
    ``COURSE-Assignment-42.zip`` by double-click makes one), recognised by Moodle's names for participants' files."""
    def looks_like(folder: Path) -> bool:
        entries = _entries(folder)
        return any(_named(p.name) for p in entries)

    if looks_like(directory):
        return directory
    entries = [p for p in _entries(directory) if p.is_dir()]
    if len(entries) == 1 and looks_like(entries[0]):
        return entries[0]
    return None


@dataclasses.dataclass
class _Participant:
    name: str
    gradable: list[Path] = dataclasses.field(default_factory=list)
    others: list[Path] = dataclasses.field(default_factory=list)  # files no layout grades (onlinetext.html, a PDF)
    where: dict[Path, str] = dataclasses.field(default_factory=dict)  # each gradable file -> its folder or prefix
    entries: list[Path] = dataclasses.field(default_factory=list)  # their folders or files in the download


def discover_moodle(folder: Path, *, directory: Path) -> tuple[list[Submission], list[Skipped]]:
    """One submission per participant in ``folder`` (the unpacked download: ``directory`` or inside it; paths in
    results are relative to ``directory``). A participant with several notebooks or .py files is graded on one as
    a flat folder's student is (``choose_submission``), the others named in its notes."""
    root = directory.resolve()
    participants: dict[str, _Participant] = {}
    skipped: list[Skipped] = []
    for entry in _entries(folder):
        match = _named(entry.name)
        if match is None:
            skipped.append(Skipped(entry, f"not named as Moodle names a participant's files ({EXPECTED}...)"))
            continue
        who = participants.setdefault(match["id"], _Participant(match["name"].strip()))
        who.entries.append(entry)
        if entry.is_dir() and not link_problem(entry, entry.name, root):
            found = candidates(entry)
            who.gradable.extend(found)
            who.where.update(dict.fromkeys(found, entry.name))
            who.others.extend(p for p in sorted(entry.rglob("*")) if p.is_file() and p not in found)
        elif match["rest"] and Path(match["rest"]).suffix.lower() in (".ipynb", ".py"):
            who.gradable.append(entry)
            # The prefix Moodle put before the uploaded file's name: what its feedback importer matches.
            who.where[entry] = entry.name[: len(entry.name) - len(match["rest"])]
        else:
            who.others.append(entry)
    submissions = []
    for ident, who in sorted(participants.items(), key=lambda item: int(item[0])):
        if not who.gradable:
            found = ", ".join(str(p.relative_to(folder)) for p in who.others) or "nothing"
            skipped += [Skipped(entry, f"participant {ident} ({who.name}) submitted no notebook (.ipynb) or Python "
                                       f"file (.py) (found: {found})") for entry in who.entries]
            continue
        chosen = choose_submission(ident, who.gradable, directory=directory)
        origin = ((PARTICIPANT, ident), (FOLDER, who.where[chosen.path]), (NAME, who.name))
        submissions.append(dataclasses.replace(chosen, name=who.name, origin=origin,
                                               also=(*chosen.also, *who.others)))
    return submissions, skipped
