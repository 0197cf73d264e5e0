"""Bad input files in a class: each ends in a short message on the dashboard and the student's page, never a grader
traceback, and the rest of the class is graded as usual. One real grading run covers them all."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import threading
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from markupsafe import escape

from grader.discover import MAX_SUBMISSION_BYTES, Submission, read_submission
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .conftest import SAMPLES

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

TEXTBOOK = SAMPLES / "textbook.ipynb"  # a correct solution
CORRECT_PY = SAMPLES / "einsum_style.py"  # a correct solution, outside the class's folder
WRITTEN = ["ex1", "ex3"]
AS_ROOT = os.geteuid() == 0  # root reads a chmod 000 file anyway

# student -> the reason their submission is refused, exactly as the result, the page and the dashboard give it.
REFUSED = {
    "cut": "cut.ipynb is not a valid notebook (broken JSON: it ends early, at line 275): "
           "re-save it in Jupyter and submit it again",
    "empty": "empty.py is empty (0 bytes): save your work and submit the file again",
    "blank": "blank.ipynb is empty (only 3 blank characters): save your work and submit the file again",
    "picture": "picture.ipynb is not a text file (it looks like a PNG image): submit your notebook (.ipynb) itself",
    "noise": "noise.py is not a text file (it looks like binary data): submit your Python file (.py) itself",
    "latin": "latin.py is not UTF-8 text (line 2 has the byte 0xe9, probably from an editor saving in Latin-1 or "
             "Windows-1252): save it as UTF-8 and submit it again",
    "huge": f"huge.ipynb is 101 MB, over the {MAX_SUBMISSION_BYTES // 2**20} MB limit for a submission: clear all "
            f"outputs in Jupyter (Edit > Clear Outputs of All Cells), save and submit it again",
    "ghost": "ghost.ipynb is a link to a file that does not exist: submit your notebook (.ipynb) itself",
    "bob": "bob.ipynb is a folder, not a notebook (.ipynb): submit the file itself",
    "sneaky": "sneaky.py is a link to a file outside the submissions folder, which the grader does not follow: "
              "submit your Python file (.py) itself",
    "mallory": "mallory is a link to a folder outside the submissions folder, which the grader does not follow: "
               "submit your files themselves",
    "pipe": "pipe.py is not a regular file: submit your Python file (.py) itself",
}
if not AS_ROOT:
    REFUSED["locked"] = ("locked.py could not be opened (permission denied): submit it again, or ask your instructor "
                         "to check the file's permissions")
GRADED = ["good", "old_format", "big_outputs", "dave"]
SKIPPED = {"notes.txt": "not a notebook or Python file (.txt)", "photo.png": "not a notebook or Python file (.png)"}


def notebook_with_outputs(megabytes: int) -> bytes:
    """The textbook notebook (a correct solution) with ``megabytes`` MB of printed text and plots in its outputs."""
    data = json.loads(TEXTBOOK.read_text(encoding="utf-8"))
    code_cells = [c for c in data["cells"] if c["cell_type"] == "code"]
    line = "tensor([[0.1234, 0.5678, 0.9012, 0.3456], [0.7890, 0.1234, 0.5678, 0.9012]])\n"
    png = base64.b64encode(random.Random(0).randbytes(3 * 2**20)).decode()  # about 4 MB each
    text_mb = megabytes - 4 * ((len(code_cells) + 1) // 2)
    per_cell = text_mb * 2**20 // len(line) // len(code_cells) + 1
    for i, cell in enumerate(code_cells):
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": [line] * per_cell}]
        if i % 2 == 0:
            cell["outputs"].append({"output_type": "display_data", "metadata": {},
                                    "data": {"image/png": png, "text/plain": ["<Figure size 350x250>"]}})
    return json.dumps(data, indent=1).encode()


def old_format_notebook() -> str:
    """The textbook notebook saved in nbformat 3 (IPython 2 and earlier)."""
    return nbformat.writes(nbformat.convert(nbformat.read(TEXTBOOK, as_version=4), 3), version=3)


@pytest.fixture(scope="module")
def bad_class(tmp_path_factory: pytest.TempPathFactory) -> ClassRun:
    folder = tmp_path_factory.mktemp("bad_files") / "submissions"
    folder.mkdir()
    shutil.copy(TEXTBOOK, folder / "good.ipynb")
    (folder / "old_format.ipynb").write_text(old_format_notebook(), encoding="utf-8")
    (folder / "big_outputs.ipynb").write_bytes(notebook_with_outputs(50))
    # Two files: the older .py (broken) loses to the newer notebook (correct).
    (folder / "dave.py").write_text("def masked_softmax(X, valid_lens:\n", encoding="utf-8")
    shutil.copy(TEXTBOOK, folder / "dave.ipynb")
    os.utime(folder / "dave.py", (1_600_000_000, 1_600_000_000))
    os.utime(folder / "dave.ipynb", (1_700_000_000, 1_700_000_000))

    text = TEXTBOOK.read_bytes()
    (folder / "cut.ipynb").write_bytes(text[:len(text) * 6 // 10])
    (folder / "empty.py").write_bytes(b"")
    (folder / "blank.ipynb").write_bytes(b" \n\n")
    (folder / "picture.ipynb").write_bytes(b"\x89PNG\r\n\x1a\n" + random.Random(1).randbytes(4000))
    (folder / "noise.py").write_bytes(random.Random(2).randbytes(4000))
    (folder / "latin.py").write_bytes("import torch\n# Résumé: masked softmax\n".encode("latin-1")
                                      + CORRECT_PY.read_bytes())
    with open(folder / "huge.ipynb", "wb") as handle:  # sparse: 101 MB on paper, nothing on disk
        handle.truncate(101 * 2**20)
    (folder / "ghost.ipynb").symlink_to(folder / "deleted.ipynb")
    (folder / "bob.ipynb").mkdir()
    (folder / "bob.ipynb" / "junk.txt").write_text("not a notebook", encoding="utf-8")
    (folder / "sneaky.py").symlink_to(CORRECT_PY)  # a correct solution, but not the student's file
    (folder / "mallory").symlink_to(SAMPLES / "folder_student", target_is_directory=True)
    os.mkfifo(folder / "pipe.py")  # opening it would wait forever for a writer
    if not AS_ROOT:
        (folder / "locked.py").write_bytes(CORRECT_PY.read_bytes())
        (folder / "locked.py").chmod(0)
    (folder / "notes.txt").write_text("my notes", encoding="utf-8")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return grade_class(RunRequest(assignment="attention_scoring", submissions_dir=folder,
                                  out_dir=folder.parent / "out"), RunOptions(jobs=2))


def results(run: ClassRun) -> dict:
    return {r.student: r for r in run.results}


def page(run: ClassRun, student: str) -> str:
    return (run.out_dir / "students" / student / "report.html").read_text(encoding="utf-8")


def test_every_student_has_one_result_and_the_grader_never_failed(bad_class: ClassRun) -> None:
    assert sorted(results(bad_class)) == sorted([*REFUSED, *GRADED])
    assert bad_class.internal_errors == 0
    assert all("Traceback" not in r.reason for r in bad_class.results)


@pytest.mark.parametrize("student", sorted(REFUSED))
def test_bad_file_is_invalid_with_its_message_on_both_pages(bad_class: ClassRun, student: str) -> None:
    result = results(bad_class)[student]
    assert (result.status, result.reason) == ("invalid", REFUSED[student])
    assert result.score == 0 and result.units == ()
    assert str(escape(REFUSED[student])) in page(bad_class, student)
    dashboard = (bad_class.out_dir / "index.html").read_text(encoding="utf-8")
    assert f'href="students/{student}/report.html">{student}</a></td>' in dashboard
    assert str(escape(REFUSED[student])) in dashboard


@pytest.mark.parametrize("student", GRADED)
def test_good_old_format_big_and_twice_submitted_notebooks_earn_full_marks(bad_class: ClassRun, student: str) -> None:
    result = results(bad_class)[student]
    assert result.status == "graded" and result.reason == ""
    assert [c.check_id for c in result.checks if not c.passed] == []
    assert result.score == result.max_score == 100


def test_notes_say_what_was_converted_and_which_file_was_graded(bad_class: ClassRun) -> None:
    by_student = results(bad_class)
    converted = "converted from the old notebook format 3 to format 4 to grade it"
    assert converted in by_student["old_format"].notes
    assert converted in page(bad_class, "old_format")
    twice = "2 files found for dave; graded the newest, dave.ipynb (not dave.py)"
    assert by_student["dave"].notes[0] == twice and by_student["dave"].source == "dave.ipynb"
    assert twice in page(bad_class, "dave")


def test_big_notebook_is_hashed_whole_though_its_outputs_are_not_kept(bad_class: ClassRun) -> None:
    result = results(bad_class)["big_outputs"]
    path = bad_class.out_dir.parent / "submissions" / "big_outputs.ipynb"
    assert path.stat().st_size > 50 * 2**20
    assert result.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_dashboard_lists_skipped_files_with_their_reason(bad_class: ClassRun) -> None:
    assert {s.path.name: s.reason for s in bad_class.skipped} == SKIPPED
    dashboard = (bad_class.out_dir / "index.html").read_text(encoding="utf-8")
    for name, reason in SKIPPED.items():
        assert f"<tr><td>{name}</td><td><span class=\"badge skipped\">skipped</span></td><td>{reason}</td></tr>" \
            in dashboard


def test_a_notebook_with_50_mb_of_outputs_is_read_fast_in_little_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.ipynb"
    path.write_bytes(notebook_with_outputs(50))
    size = path.stat().st_size
    submission = Submission("big", path, "notebook", datetime.now(UTC))
    started = time.perf_counter()
    program = read_submission(submission, written_ids=WRITTEN)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    try:
        read_submission(submission, written_ids=WRITTEN)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(program.units) == 13 and dict(program.answers).keys() == {"ex1", "ex3"}
    # The bytes and their text, once each; outputs are dropped as they are parsed (nbformat.reads took about 5x).
    assert peak < 2.3 * size, f"reading {size / 2**20:.0f} MB took {peak / 2**20:.0f} MB"
    assert seconds < 10, f"reading {size / 2**20:.0f} MB took {seconds:.1f} s"


def test_grading_again_reuses_the_graded_and_never_reads_a_refused_file(bad_class: ClassRun) -> None:
    """A second run into the same output reuses unchanged results; it must not open pipe.py (that waits forever)."""
    folder, out = bad_class.out_dir.parent / "submissions", bad_class.out_dir.parent / "out_again"
    shutil.copytree(bad_class.out_dir, out)
    finished: list[ClassRun] = []
    request = RunRequest(assignment="attention_scoring", submissions_dir=folder, out_dir=out)
    worker = threading.Thread(target=lambda: finished.append(grade_class(request, RunOptions(jobs=2))), daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # release a reader stuck on the pipe, then fail
        os.close(os.open(folder / "pipe.py", os.O_WRONLY | os.O_NONBLOCK))
        worker.join(timeout=30)
    assert finished, "grading again hung"
    again = finished[0]
    never_read = {"huge", "ghost", "bob", "sneaky", "mallory", "pipe", "locked"}  # regraded: cheap, nothing runs
    assert set(again.unchanged) == {*GRADED, *REFUSED} - never_read
    assert {r.student: (r.status, r.reason) for r in again.results if r.student in REFUSED} == {
        student: ("invalid", reason) for student, reason in REFUSED.items()}
