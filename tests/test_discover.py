"""Finding submissions in a folder and reading them into code units and written answers."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn

import nbformat
import pytest

from grader.discover import MAX_SUBMISSION_BYTES, Submission, discover, read_program, read_submission
from grader.errors import InvalidSubmission

from .conftest import write


def notebook(*cells: nbformat.NotebookNode) -> bytes:
    nb = nbformat.v4.new_notebook(cells=list(cells))
    return nbformat.writes(nb).encode()


def test_files_and_folders_become_students(tmp_path: Path) -> None:
    write(tmp_path, "alice.py", "x = 1\n")
    write(tmp_path, "bob.ipynb", nbformat.writes(nbformat.v4.new_notebook()))
    write(tmp_path, "carol/work/attention.ipynb", nbformat.writes(nbformat.v4.new_notebook()))
    write(tmp_path, "carol/.ipynb_checkpoints/attention-checkpoint.ipynb", "{}")
    write(tmp_path, "notes.txt", "not a submission")
    write(tmp_path, "empty_folder/readme.txt", "nothing here")
    submissions, skipped = discover(tmp_path)
    assert [(s.student, s.kind, s.path.name) for s in submissions] == [
        ("alice", "python", "alice.py"), ("bob", "notebook", "bob.ipynb"), ("carol", "notebook", "attention.ipynb")]
    assert sorted((s.path.name, s.reason) for s in skipped) == [
        ("empty_folder", "folder holds no .ipynb or .py file"), ("notes.txt", "not a notebook or Python file (.txt)")]


def test_newest_of_two_files_wins_and_says_so(tmp_path: Path) -> None:
    old = write(tmp_path, "dave.py", "x = 1\n")
    new = write(tmp_path, "dave.ipynb", nbformat.writes(nbformat.v4.new_notebook()))
    os.utime(old, (1_000_000, 1_000_000))
    os.utime(new, (2_000_000, 2_000_000))
    (submission,), _ = discover(tmp_path)
    assert submission.path == new
    assert "graded the newest, dave.ipynb (not dave.py)" in submission.notes[0]


def test_notebook_magics_become_calls_and_answers_are_found() -> None:
    data = notebook(
        nbformat.v4.new_code_cell("%matplotlib inline\n!pip install d2l\nx = 1"),
        nbformat.v4.new_code_cell("%%time\ny = 2"),
        nbformat.v4.new_markdown_cell("**Your answer to exercise 1:**\nThe weights differ.",
                                      metadata={"tags": ["answer:ex1"]}),
        nbformat.v4.new_markdown_cell("**Your answer to exercise 3:**\n_Write your answer here._"),
    )
    program = read_program(data, kind="notebook", name="s.ipynb", written_ids=["ex1", "ex3"])
    assert [u.label for u in program.units] == ["cell [1]", "cell [2]"]
    assert "get_ipython().run_line_magic('matplotlib', 'inline')" in program.units[0].source
    assert "get_ipython().system('pip install d2l')" in program.units[0].source
    assert program.units[1].source.startswith("get_ipython().run_cell_magic('time'")
    assert dict(program.answers) == {"ex1": "The weights differ.", "ex3": ""}
    assert program.module_name == "__main__" and not program.stop_on_exit


def test_python_file_splits_into_statements_with_their_lines() -> None:
    source = b'import torch\n\n@staticmethod\ndef f(x):\n    return x\n\na = 1; b = 2\nANSWER_EX1 = """Because."""\n'
    program = read_program(source, kind="python", name="s.py", written_ids=["ex1"])
    assert [(u.label, u.first_line) for u in program.units] == [
        ("line 1", 1), ("lines 3-5", 3), ("line 7", 7), ("line 8", 8)]
    assert program.units[1].source.startswith("@staticmethod")
    assert dict(program.answers) == {"ex1": "Because."}
    assert program.module_name == "submission" and program.stop_on_exit


@pytest.mark.parametrize(("data", "kind", "message"), [
    (b"", "python", r"s is empty \(0 bytes\): save your work and submit the file again"),
    (b"\n \n", "notebook", r"s is empty \(only 3 blank characters\)"),
    (b"\xff\xfe" + "x = 1".encode("utf-16-le"), "python", "s is saved as UTF-16 text: save it as UTF-8"),
    (b"%PDF-1.7\n%\xe2\xe3", "notebook", r"s is not a text file \(it looks like a PDF document\): submit your "
                                         r"notebook \(.ipynb\) itself"),
    (b"PK\x03\x04\x14\x00", "python", r"it looks like a ZIP archive or a Word/Office document"),
    (b"x = 1\x00\n", "python", r"s is not a text file \(it looks like binary data\)"),
    (b"x = 1\n# caf\xe9\n", "python", r"s is not UTF-8 text \(line 2 has the byte 0xe9, probably from an editor "
                                    r"saving in Latin-1 or Windows-1252\): save it as UTF-8 and submit it again"),
    (b'{"cells": []}\n\x97', "notebook", "not UTF-8 text \\(line 2 has the byte 0x97"),
    (b"def f(:\n    pass\n", "python", "syntax error at line 1"),
    (nbformat.writes(nbformat.v4.new_notebook()).encode(), "python",
     r"s holds a Jupyter notebook, not Python code: submit it as a .ipynb file"),
    (b"x = " + b"+".join([b"1"] * 200_000), "python", "s is too deeply nested for Python to read"),
    (b'{"cells": [', "notebook", r"s is not a valid notebook \(broken JSON: it ends early, at line 1\): re-save it "
                                 r"in Jupyter and submit it again"),
    (b'{\n "cells": [\n  {"source": "x = 1\\n', "notebook", r"broken JSON: it ends early, at line 3\)"),
    (b'{"cells": [}\n ]}', "notebook", r"broken JSON at line 1, column 12: Expecting value\)"),
    (b"[" * 100_000, "notebook", r"its JSON is nested too deeply"),
    (b"import torch\nx = 1\n", "notebook", "s is not a notebook: it holds plain text, not notebook JSON: submit "
                                          r"the .ipynb file that Jupyter saves \(or Python code as a .py file\)"),
    (b"[1, 2]", "notebook", "has no cells"),
    (b'{"cells": {}}', "notebook", "has no cells"),
    (b'{"nbformat": 9, "cells": []}', "notebook", "s says it is in notebook format 9, which the grader cannot read"),
])
def test_unreadable_files_are_invalid_with_a_reason(data: bytes, kind: str, message: str) -> None:
    with pytest.raises(InvalidSubmission, match=message):
        read_program(data, kind=kind, name="s", written_ids=[])


def test_a_coding_declaration_makes_a_latin_1_python_file_readable() -> None:
    program = read_program(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n", kind="python", name="s.py",
                           written_ids=[])
    assert program.units[0].source == "name = 'café'\n"


def test_notebook_outputs_and_attachments_are_dropped_and_odd_cells_passed_over() -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1", outputs=[nbformat.v4.new_output("stream", text="1\n" * 1000)]),
        nbformat.v4.new_raw_cell("raw text"),
        nbformat.v4.new_markdown_cell("**Your answer to exercise 1:** yes", attachments={"a.png": {"image/png": ""}}),
    ])
    nb.cells[2].metadata["tags"] = "answer:ex1"  # should be a list
    program = read_program(json.dumps(nb).encode(), kind="notebook", name="s.ipynb", written_ids=["ex1"])
    assert [u.source for u in program.units] == ["x = 1\n"]
    assert dict(program.answers) == {"ex1": "yes"}
    assert "does not fully follow the nbformat schema" in program.notes[0]


def test_old_nbformat_3_notebook_is_converted() -> None:
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "x = 41 + 1", "language": "python", "outputs": [], "metadata": {}}]}]}
    program = read_program(json.dumps(v3).encode(), kind="notebook", name="old.ipynb", written_ids=[])
    assert [u.source.strip() for u in program.units] == ["x = 41 + 1"]
    assert program.notes == ("converted from the old notebook format 3 to format 4 to grade it",)


def test_links_out_of_the_folder_broken_links_and_folders_named_like_files(tmp_path: Path) -> None:
    folder, outside = tmp_path / "submissions", tmp_path / "solutions"
    write(outside, "answer.py", "x = 1\n")
    write(folder, "alice.py", "x = 1\n")
    (folder / "twin.py").symlink_to(folder / "alice.py")  # inside the folder: followed
    (folder / "sneaky.py").symlink_to(outside / "answer.py")
    (folder / "mallory").symlink_to(outside, target_is_directory=True)
    write(folder, "carol/notes.md", "mine")
    (folder / "carol" / "work.py").symlink_to(outside / "answer.py")
    (folder / "ghost.ipynb").symlink_to(folder / "gone.ipynb")
    (folder / "loop.py").symlink_to(folder / "loop.py")
    (folder / "bob.ipynb").mkdir()
    write(folder, "frank.ipynb/attention.ipynb", nbformat.writes(nbformat.v4.new_notebook()))
    write(folder, "GINA.IPYNB", nbformat.writes(nbformat.v4.new_notebook()))
    os.mkfifo(folder / "pipe.py")
    submissions, skipped = discover(folder)
    found = {s.student: (str(s.path.relative_to(folder)), s.kind, s.problem) for s in submissions}
    assert found == {
        "alice": ("alice.py", "python", ""),
        "twin": ("twin.py", "python", ""),
        "sneaky": ("sneaky.py", "python", "sneaky.py is a link to a file outside the submissions folder, which the "
                                          "grader does not follow: submit your Python file (.py) itself"),
        "mallory": ("mallory", "python", "mallory is a link to a folder outside the submissions folder, which the "
                                         "grader does not follow: submit your files themselves"),
        "carol": ("carol/work.py", "python", "carol/work.py is a link to a file outside the submissions folder, which "
                                             "the grader does not follow: submit your Python file (.py) itself"),
        "ghost": ("ghost.ipynb", "notebook", "ghost.ipynb is a link to a file that does not exist: submit your "
                                             "notebook (.ipynb) itself"),
        "loop": ("loop.py", "python", "loop.py is a link that leads nowhere (a loop): submit your Python file (.py) "
                                      "itself"),
        "bob": ("bob.ipynb", "notebook", "bob.ipynb is a folder, not a notebook (.ipynb): submit the file itself"),
        "frank": ("frank.ipynb/attention.ipynb", "notebook", ""),
        "GINA": ("GINA.IPYNB", "notebook", ""),
        "pipe": ("pipe.py", "python", "pipe.py is not a regular file: submit your Python file (.py) itself"),
    }
    assert skipped == []
    with pytest.raises(InvalidSubmission, match=r"sneaky\.py is a link to a file outside"):
        read_submission(next(s for s in submissions if s.student == "sneaky"), written_ids=[])


def test_the_newest_file_that_can_be_read_wins(tmp_path: Path) -> None:
    old = write(tmp_path, "erin.py", "x = 1\n")
    os.utime(old, (1_000_000, 1_000_000))
    (tmp_path / "erin.ipynb").symlink_to(tmp_path / "deleted.ipynb")  # newer, but nothing to read
    (submission,), _ = discover(tmp_path)
    assert (submission.path, submission.problem) == (old, "")
    assert submission.notes == ("2 files found for erin; graded the newest one that can be read, erin.py "
                                "(not erin.ipynb)",)


def test_files_over_the_size_limit_are_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    with open(path, "wb") as handle:  # sparse
        handle.truncate(MAX_SUBMISSION_BYTES + 1)
    with pytest.raises(InvalidSubmission) as refused:
        read_submission(Submission("big", path, "python", datetime.now(UTC)), written_ids=[])
    assert refused.value.message == ("big.py is 100 MB, over the 100 MB limit for a submission: remove any data "
                                     "pasted into it and submit it again")


def test_a_file_the_grader_may_not_open_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "locked.py", "x = 1\n")
    path.chmod(0)
    if os.geteuid() == 0:  # root opens it anyway: fail the open as it fails for anyone else
        def denied(*args: object, **kwargs: object) -> NoReturn:
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr("grader.discover.program.open", denied, raising=False)
    with pytest.raises(InvalidSubmission) as refused:
        read_submission(Submission("locked", path, "python", datetime.now(UTC)), written_ids=[])
    assert refused.value.message == ("locked.py could not be opened (permission denied): submit it again, or ask "
                                     "your instructor to check the file's permissions")


CELLS_FOR_TRANSFORMS = [
    "", "x = 1", "def f(x):\n    return x % 2\n", "%matplotlib inline", "x = %time f(1)", "files = !ls",
    "!pip install d2l", "f?", "f??\n", "?f", "/f 1 2", ",f a b", ";f a b", "  x = 1", "\n\nx = 1",
    ">>> x = 1\n>>> x\n", "In [1]: x = 1\n   ...: y = 2\n", "%%time\nx = 1\n", "y = (1\n     / 2)\n",
    "s = 'what?'  # a question", "if x != 1:\n    pass", "print('100%')", "x = [a for a in b]\n",
    "class A:\n    def f(self):\n        return 1\n",
]


@pytest.mark.parametrize("source", CELLS_FOR_TRANSFORMS)
def test_cells_come_out_as_ipythons_transforms_make_them_whichever_path_reads_them(source: str) -> None:
    from grader.discover.program import _to_python, _transformer

    assert _to_python(source) == _transformer().transform_cell(source)
