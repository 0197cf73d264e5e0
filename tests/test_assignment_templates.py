"""What students get: a valid notebook and a .py with the same code, which the grader handles before any work."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.pipeline import grade_class

from .conftest import ROOT

# assignment -> (a public check of q1, how its message starts on a blank template, written answer ids)
ASSIGNMENTS = {
    "keras_additive_attention": ("q1.key_omitted", "KerasAdditiveAttention(dim=4, use_scale=True, causal=False, "
                                                   "dropout=0.0) raised NotImplementedError", set()),
    "attention_scoring": ("q1.textbook_1d", "masked_softmax(...) raised NotImplementedError", {"ex1", "ex3"}),
    "bahdanau_attention": ("q1.seed_example", "AdditiveAttention(input_dim=20, hidden_dim=32) raised "
                                              "NotImplementedError", set()),
    "practical10": ("q1.practical", "scaled_dot_product_attention(...) raised NotImplementedError",
                    {"compare", "maps"}),
}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebook_and_python_template_hold_the_same_code(assignment: str) -> None:
    folder = ROOT / "assignments" / assignment
    notebook = nbformat.read(folder / f"{assignment}.ipynb", as_version=4)
    nbformat.validate(notebook)
    python_lines = [line.strip() for line in (folder / f"{assignment}.py").read_text().splitlines()]
    position = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for line in filter(None, (raw.strip() for raw in cell.source.splitlines())):
            assert line in python_lines[position:], f"{line!r} is in the notebook but not (in order) in the .py"
            position = python_lines.index(line, position) + 1


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_templates_grade_to_zero_with_clear_messages(tmp_path: Path, assignment: str) -> None:
    check_id, message, written = ASSIGNMENTS[assignment]
    submissions = tmp_path / "class"
    submissions.mkdir()
    for suffix in (".ipynb", ".py"):
        template = ROOT / "assignments" / assignment / f"{assignment}{suffix}"
        (submissions / f"blank{suffix[1:]}{suffix}").write_bytes(template.read_bytes())
    run = grade_class(assignment=assignment, submissions_dir=submissions, out_dir=tmp_path / "out", jobs=2)
    assert len(run.results) == 2
    for result in run.results:
        assert (result.status, result.score) == ("graded", 0)
        first = next(c for c in result.checks if c.check_id == check_id)
        assert first.message.startswith(message)
        assert {a.id: a.text for a in result.answers} == dict.fromkeys(written, "")
