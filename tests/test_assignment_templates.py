"""What students get: a valid notebook and a .py with the same code, which the grader handles before any work."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.pipeline import grade_class

from .conftest import ROOT

TEMPLATES = ROOT / "assignments" / "attention_scoring"


def test_notebook_and_python_template_hold_the_same_code() -> None:
    notebook = nbformat.read(TEMPLATES / "attention_scoring.ipynb", as_version=4)
    nbformat.validate(notebook)
    python_lines = [line.strip() for line in (TEMPLATES / "attention_scoring.py").read_text().splitlines()]
    position = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for line in filter(None, (raw.strip() for raw in cell.source.splitlines())):
            assert line in python_lines[position:], f"{line!r} is in the notebook but not (in order) in the .py"
            position = python_lines.index(line, position) + 1


@pytest.mark.slow
def test_blank_templates_grade_to_zero_with_clear_messages(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    for suffix in (".ipynb", ".py"):
        template = TEMPLATES / f"attention_scoring{suffix}"
        (submissions / f"blank{suffix[1:]}{suffix}").write_bytes(template.read_bytes())
    run = grade_class(assignment="attention_scoring", submissions_dir=submissions, out_dir=tmp_path / "out", jobs=2)
    for result in run.results:
        assert (result.status, result.score) == ("graded", 0)
        first = next(c for c in result.checks if c.check_id == "q1.textbook_1d")
        assert first.message.startswith("masked_softmax(...) raised NotImplementedError")
        assert {a.id: a.text for a in result.answers} == {"ex1": "", "ex3": ""}
