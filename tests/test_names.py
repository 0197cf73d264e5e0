"""Names are data, never paths: arbitrary Unicode names and ids, in every case and Unicode form, pushed through every
layout (flat, nbgrader, Gradescope, Moodle, Canvas) and every writer (the students' pages, grades.csv, lms.csv, the
platforms' files, the similar-submissions pages, the dashboard, the run's accounting). Whatever the names, everyone
found is accounted for, every page is written, and no two students share a file name on a case-insensitive disk."""

from __future__ import annotations

import html
import os
import re
import tempfile
import unicodedata
import zipfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.csv_cells import from_cell
from grader.discover import discover_all
from grader.discover.inventory import GRADED, IGNORED, OTHER
from grader.export.canvas import write_canvas_exports
from grader.export.moodle import write_moodle_exports
from grader.names import MAX_BYTES, file_name, readable, student_id
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.pipeline.accounting import pages_placed
from grader.pipeline.self_check import check_submission
from grader.pipeline.student_files import write_student_files
from grader.record import write_grades_csv, write_lms_csv
from grader.record.accounting import Accounting
from grader.record.output import OutputFolder
from grader.report import render_dashboard
from grader.report.similar_pages import write_similarity
from grader.results import CheckResult, QuestionResult, SubmissionResult

from . import class_folders
from .class_folders import Built
from .conftest import FIXTURE_SOLUTIONS, TOY_CORRECT
from .test_csv_cells import no_formula, parse

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

CODE = "def scale(x):\n    return 2 * x\n\n\ndef twice_scaled(x):\n    return scale(scale(x))\n" * 3
WINDOWS_DEVICES = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(10)), *(f"lpt{n}" for n in range(10))}


def on_any_disk(name: str) -> str:
    """What a case-insensitive, normalisation-insensitive disk (macOS, Windows, exFAT) takes a name to be."""
    return unicodedata.normalize("NFC", name).casefold().upper().casefold()


# ----- one function turns an id into a file name ---------------------------------------------------------------------
ids = st.lists(class_folders.texts(max_size=120), min_size=1, max_size=8).map(class_folders.variants)


@given(ids)
def test_file_names_are_safe_bounded_stable_and_distinct_on_any_disk(students: list[str]) -> None:
    names = {student_id(s): file_name(s) for s in students}
    for student, name in names.items():
        assert 0 < len(name.encode("utf-8")) <= MAX_BYTES
        assert all(ch.isalnum() or ch in "._-@+" for ch in name), name
        assert not name.startswith((".", "-")) and not name.endswith(".") and "--" not in name
        assert name.split(".", 1)[0].casefold() not in WINDOWS_DEVICES
        assert file_name(unicodedata.normalize("NFD", student)) == name  # one student in either Unicode form
        assert file_name(student) == name  # the same on every call: no table decides it
    folded = [on_any_disk(name) for name in names.values()]
    assert len(set(folded)) == len(folded), names


def test_a_lowercase_id_is_its_own_name_and_others_carry_a_hash() -> None:
    assert file_name("ana") == "ana" and file_name("s1234@uni.edu") == "s1234@uni.edu"
    assert file_name("Ana") != file_name("ana") and file_name("Ana").startswith("Ana-")
    assert file_name("José") == file_name(unicodedata.normalize("NFD", "José")) != file_name("Jose")
    assert file_name("..") != ".." and file_name("con") != "con" and file_name("a--b") != "a--b"
    long = "Ñ" * 300
    assert len(file_name(long).encode()) <= MAX_BYTES and file_name(long) != file_name(long + "x")


# ----- every layout, every writer -------------------------------------------------------------------------------------
def result_for(student: str, score: float) -> SubmissionResult:
    checks = (CheckResult("q1.a", "q1", "a", "public", "passed", 1.0, 1.0, "", "", 0),
              CheckResult("q2.a", "q2", "a", "public", "failed", score, 2.0, "", "", 0))
    return SubmissionResult(student=student, assignment="toy", source="work.py", kind="python", sha256="",
                            status="graded", reason="", questions=(QuestionResult("q1", "scale", checks[:1]),
                                                                   QuestionResult("q2", "twice", checks[1:])),
                            units=(), answers=(), notes=(), submitted_at="", graded_at="", duration_s=0.0)


def component_lengths(folder: Path) -> list[int]:
    return [len(name.encode("utf-8")) for _root, dirs, files in os.walk(folder) for name in (*dirs, *files)]


def check_class(build: Callable[[Path], Built], layout: str) -> None:
    """Build a class with ``build``, discover it, and write everything a run writes for it; then check that nothing
    and nobody was lost."""
    with tempfile.TemporaryDirectory() as scratch:
        built = build(Path(scratch) / "class")
        found = discover_all(built.folder, layout=layout, assignment="toy")
        # everyone found, under the id the platform gives, and every entry accounted for
        assert {s.student for s in found.submissions} == built.students
        top = {readable(str(p.relative_to(built.folder))) for p in found.layout.folder.iterdir()}
        assert top <= {e.path for e in found.entries}
        # each entry graded, or another file of a graded student (the same name in another Unicode form), or what
        # the platform's download carries besides (Gradescope's metadata)
        assert all(e.fate in (GRADED, OTHER, IGNORED) for e in found.entries), found.entries
        assert {s for e in found.entries if e.fate == GRADED for s in e.students} == built.students

        out = OutputFolder(Path(scratch) / "out")
        results = [result_for(s.student, float(n % 3)) for n, s in enumerate(found.submissions)]
        by_student = {s.student: s for s in found.submissions}
        for result in results:
            write_student_files(out.path, result, "Toy", by_student[result.student])
        files = [write_grades_csv(out.grades_csv, results, submissions=by_student), write_lms_csv(out.lms_csv, results)]
        if layout == "moodle":
            files += write_moodle_exports(out.path, found.submissions, results)
        if layout == "canvas":
            files += write_canvas_exports(out.path, found.submissions, results, gradebook=None)
        similar = write_similarity(out.path, "toy", found.submissions, threshold=0.0, title="Toy")
        pages = pages_placed(out, [r.student for r in results])
        accounting = Accounting(str(built.folder), layout, tuple(found.entries), tuple(by_student), reused=0,
                                files=(*files, pages))
        (out.path / "index.html").write_text(render_dashboard(results, title="Toy", max_score=3.0,
                                                             similarity=similar, accounting=accounting))

        # every page written, each student in their own folder on any disk, every name within a file system's limit
        assert pages.placed == tuple(r.student for r in results) and not pages.warnings
        assert not accounting.not_placed
        folders = [out.student(s).path.name for s in by_student]
        assert len({on_any_disk(f) for f in folders}) == len(folders)
        assert max(component_lengths(out.path)) <= 255
        n = len(results)
        assert len(similar.rows) == n * (n - 1) // 2  # the same code: every pair, each page written
        assert len(list((out.path / "similar").glob("*.html"))) == len(similar.rows)
        # every CSV written: no cell a spreadsheet would run, and every id read back whole
        for table in out.path.rglob("*.csv"):
            no_formula(parse(table))
        grades = parse(out.grades_csv)
        assert {from_cell(row[grades[0].index("student")]) for row in grades[1:]} == built.students
        # every link of the dashboard leads to a page that is there: each student's two pages and each pair's
        links = re.findall(r'href="((?!data:)[^"#]+)"', (out.path / "index.html").read_text(encoding="utf-8"))
        assert len(links) >= 2 * n + len(similar.rows)
        for link in links:
            assert (out.path / unquote(html.unescape(link))).is_file(), link
        for placed in files:
            if placed.label.endswith(".zip") and placed.path is not None:
                with zipfile.ZipFile(placed.path) as archive:
                    assert len(archive.namelist()) == n


@pytest.mark.parametrize("kind", list(class_folders.CLASSES))
@settings(max_examples=10)
@given(data=st.data())
def test_any_names_in_every_layout_through_every_writer(kind: str, data: st.DataObject) -> None:
    layout, people, build = class_folders.CLASSES[kind]
    drawn = data.draw(people)
    check_class(lambda folder: build(folder, drawn, CODE), layout)


@pytest.mark.parametrize("name", [".Ana Díaz", "..", ". Bo"])
def test_a_moodle_participant_whose_name_begins_with_a_dot_is_graded(tmp_path: Path, name: str) -> None:
    built = class_folders.moodle(tmp_path / "download", [name, "Cy Diaz"], CODE)
    found = discover_all(built.folder)
    assert found.layout.name == "moodle"
    assert {s.student for s in found.submissions} == {"101", "102"}
    assert {s.name for s in found.submissions} == {name.strip(), "Cy Diaz"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(class_folders.CLASSES))
def test_a_class_of_any_names_is_graded_for_real(kind: str) -> None:
    """The real grader, sandbox included, on a class whose names Hypothesis draws: everyone graded with full marks
    (their seeds drawn from ids in any script), every page written, every grade placed."""
    layout, strategy, build = class_folders.CLASSES[kind]

    @settings(max_examples=2)
    @given(strategy)
    def graded(people: list) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            built = build(Path(scratch) / "class", people, TOY_CORRECT)
            run = grade_class(RunRequest(assignment="toy", submissions_dir=built.folder, out_dir=Path(scratch) / "out",
                                         solutions_dir=FIXTURE_SOLUTIONS, layout=layout), RunOptions(jobs=1))
            assert {r.student for r in run.summaries} == built.students
            assert all(r.status == "graded" and r.score == r.max_score for r in run.summaries), run.summaries
            assert run.accounting is not None and not run.accounting.not_placed
            assert all(not f.warnings for f in run.accounting.files if f.label == "students/")
            folders = [OutputFolder(run.out_dir).student(r.student).path.name for r in run.summaries]
            assert len({on_any_disk(f) for f in folders}) == len(folders)

    graded()


@pytest.mark.slow
def test_a_self_check_writes_inside_its_folder_whatever_the_file_is_called(tmp_path: Path) -> None:
    """``grader check ...py``: the file's stem is "..", which as a folder name would put the report beside --out."""
    submission = tmp_path / "...py"
    submission.write_text(TOY_CORRECT, encoding="utf-8")
    out = tmp_path / "checks" / "out"
    check = check_submission(path=submission, out_dir=out, assignment="toy", solutions_dir=FIXTURE_SOLUTIONS)
    assert check.report.is_file() and check.report.is_relative_to(out)
    assert check.report.parent.parent == out
    assert not (tmp_path / "checks" / "report.html").exists()
