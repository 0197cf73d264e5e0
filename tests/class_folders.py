"""Submissions folders as each platform lays them out, built from a list of people, and the Hypothesis strategies
that draw those people: names and ids in any script, case and Unicode form, as real class lists hold them.

Each builder writes the same program for everyone and returns the student ids the grader must find (its oracle):
the file stem, the nbgrader folder, the Gradescope submitter's id, Moodle's participant id or Canvas's user id, in
Unicode NFC (``grader.names.student_id``): the same name in two Unicode forms is one student.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from hypothesis import strategies as st

from grader.discover.gradescope import submitter_id
from grader.names import student_id

# What no file name on Linux may hold, and what the test's own file names need to stay valid.
_NEVER = "/\x00"
# Characters Moodle's clean_filename drops from a name, and the _ it turns into a space.
_MOODLE_DROPS = "&<>\"`|':\\_"
MAX_NAME_BYTES = 200  # a name and the suffix the layout adds stay within 255 bytes


def _fits(text: str, limit: int = MAX_NAME_BYTES) -> bool:
    return 0 < len(text.encode("utf-8")) <= limit


def texts(*, exclude: str = "", min_size: int = 1, max_size: int = 40) -> st.SearchStrategy[str]:
    """Any text a file name may hold (no surrogates, no / or NUL), long ones included."""
    alphabet = st.characters(exclude_categories=("Cs",), exclude_characters=_NEVER + exclude)
    short = st.text(alphabet, min_size=min_size, max_size=max_size)
    long = st.text(alphabet, min_size=60, max_size=120)  # past 100 bytes in most scripts
    return st.one_of(short, short, long).filter(_fits)


def variants(names: list[str]) -> list[str]:
    """The names, each also in the forms a class list brings: another case (Ana and ana are two students) and
    decomposed Unicode (the same student typed on macOS)."""
    out = []
    for name in names:
        out.append(name)
        if name.swapcase() != name and _fits(name.swapcase()):
            out.append(name.swapcase())
        nfd = unicodedata.normalize("NFD", name)
        if nfd != name and _fits(nfd):
            out.append(nfd)
    return out


flat_ids = st.lists(texts().filter(lambda t: not t.startswith(".")), min_size=1, max_size=4).map(variants)
folder_ids = st.lists(texts().filter(lambda t: not t.startswith(".") and t not in ("__pycache__",)),
                      min_size=1, max_size=4).map(variants)
# Names as a zip made with another encoding leaves them (Windows's cp1252, DOS's cp437): bytes that are not UTF-8.
byte_ids = st.lists(st.binary(min_size=1, max_size=60).filter(lambda b: b"/" not in b and b"\0" not in b
                                                              and not b.startswith(b".")),
                    min_size=1, max_size=4, unique=True)
moodle_names = st.lists(texts(exclude=_MOODLE_DROPS).filter(lambda t: t.strip() != ""), min_size=1, max_size=4)
canvas_names = st.lists(st.text(st.characters(categories=("Ll", "Lo", "Nd")), min_size=1, max_size=30)
                        .filter(_fits), min_size=1, max_size=4)
# An SID is typed by the student and never becomes a file name by itself: any length.
_sids = st.one_of(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30),
                  st.text(st.characters(exclude_categories=("Cs",)), min_size=250, max_size=400))
# One submission each: a student in two submissions (graded on the newer) is tested in test_import_layouts.py.
gradescope_people = st.lists(st.tuples(texts(max_size=60), _sids), min_size=1, max_size=4,
                             unique_by=lambda person: submitter_id({"sid": person[1]}) or person[0])


@dataclass(frozen=True)
class Built:
    folder: Path  # what to grade
    students: frozenset[str]  # the ids the grader must find
    names: dict[str, str]  # id -> the person's name, where the platform gives one


def flat(folder: Path, ids: list[str], code: str) -> Built:
    folder.mkdir(parents=True)
    for ident in ids:
        (folder / f"{ident}.py").write_text(code, encoding="utf-8")
    return Built(folder, frozenset(student_id(i) for i in ids), {})


def flat_bytes(folder: Path, ids: list[bytes], code: str) -> Built:
    folder.mkdir(parents=True)
    for ident in ids:
        with open(os.fsencode(folder) + b"/" + ident + b".py", "w", encoding="utf-8") as handle:
            handle.write(code)
    return Built(folder, frozenset(student_id(os.fsdecode(i)) for i in ids), {})


def nbgrader(folder: Path, ids: list[str], code: str, assignment: str = "toy") -> Built:
    for ident in ids:
        work = folder / "submitted" / ident / assignment
        work.mkdir(parents=True, exist_ok=True)
        (work / "work.py").write_text(code, encoding="utf-8")
        (work / "timestamp.txt").write_text("2024-03-01 12:00:00.000000 UTC", encoding="utf-8")
    return Built(folder, frozenset(student_id(i) for i in ids), {})


def gradescope(folder: Path, people: list[tuple[str, str]], code: str) -> Built:
    """``people``: (name, SID); one submission folder each."""
    export = folder / "assignment_1_export"
    export.mkdir(parents=True)
    metadata, students, names = {}, set(), {}
    for number, (name, sid) in enumerate(people, start=101):
        submitter = {":name": name, ":sid": sid, ":email": f"s{number}@example.edu"}
        metadata[f"submission_{number}"] = {":submitters": [submitter],
                                            ":created_at": f"2024-03-01 12:00:{number % 60:02d}.0 +00:00"}
        (export / f"submission_{number}").mkdir()
        (export / f"submission_{number}" / "work.py").write_text(code, encoding="utf-8")
        ident = submitter_id({"name": name, "sid": sid, "email": f"s{number}@example.edu"})
        students.add(ident)
        names[ident] = name
    (export / "submission_metadata.yml").write_text(yaml.safe_dump(metadata, allow_unicode=True), encoding="utf-8")
    return Built(folder, frozenset(students), names)


def moodle(folder: Path, names: list[str], code: str) -> Built:
    folder.mkdir(parents=True)
    for number, name in enumerate(names, start=101):
        participant = folder / f"{name}_{number}_assignsubmission_file"
        participant.mkdir()
        (participant / "work.py").write_text(code, encoding="utf-8")
    return Built(folder, frozenset(str(n) for n in range(101, 101 + len(names))),
                 {str(n): name.strip() for n, name in enumerate(names, start=101)})


def canvas(folder: Path, names: list[str], code: str) -> Built:
    folder.mkdir(parents=True)
    for number, name in enumerate(names, start=3001):
        (folder / f"{name}_{number}_{number + 50000}_work.py").write_text(code, encoding="utf-8")
    return Built(folder, frozenset(str(n) for n in range(3001, 3001 + len(names))),
                 {str(n): name for n, name in enumerate(names, start=3001)})


# Each kind of class folder the tests draw: (the layout the grader must find, the people, how to build the folder).
CLASSES: dict[str, tuple[str, st.SearchStrategy, Callable[[Path, list, str], Built]]] = {
    "flat": ("flat", flat_ids, flat),
    "flat, names not UTF-8": ("flat", byte_ids, flat_bytes),
    "nbgrader": ("nbgrader", folder_ids, nbgrader),
    "gradescope": ("gradescope", gradescope_people, gradescope),
    "moodle": ("moodle", moodle_names, moodle),
    "canvas": ("canvas", canvas_names, canvas),
}
