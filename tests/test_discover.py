"""Finding submissions in a folder and reading them into code units and written answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from grader.discover import discover, read_program
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
    (b"", "python", "s is empty"),
    (b"\xff\xfe\x00bad", "python", "not UTF-8 text"),
    (b"def f(:\n    pass\n", "python", "syntax error at line 1"),
    (b'{"cells": [', "notebook", "broken JSON at line 1"),
    (b"[1, 2]", "notebook", "has no cells"),
])
def test_unreadable_files_are_invalid_with_a_reason(data: bytes, kind: str, message: str) -> None:
    with pytest.raises(InvalidSubmission, match=message):
        read_program(data, kind=kind, name="s", written_ids=[])


def test_old_nbformat_3_notebook_is_converted() -> None:
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "x = 41 + 1", "language": "python", "outputs": [], "metadata": {}}]}]}
    program = read_program(json.dumps(v3).encode(), kind="notebook", name="old.ipynb", written_ids=[])
    assert [u.source.strip() for u in program.units] == ["x = 41 + 1"]
