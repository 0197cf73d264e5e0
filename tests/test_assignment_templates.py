"""What students get: templates generated from the solution notebook (``grader assign``), in sync with it, a valid
notebook and a .py with the same code, which the grader handles before any work; and the solution itself earns
full marks."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest

from grader.assign import SOLUTION_SOURCE, stale_templates, template_files, with_solution_source
from grader.assign.markers import strip_solutions
from grader.assign.student_notebook import CHECK_CELL_IDS, student_notebook
from grader.check.load import available_assignments, load_assignment
from grader.errors import ConfigurationError
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class
from grader.results import PUBLIC

from .conftest import ROOT, with_templates
from .sample_classes import student_reads

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

# Pinned for the repository's assignments: a public check of q1, how its message starts on a blank template, and the
# written answers' ids. An assignment not pinned here is held to its own spec: its first public check says what raised
# NotImplementedError, and its written answers are those it declares.
PINNED = {
    "keras_additive_attention": ("q1.key_omitted", "KerasAdditiveAttention(dim=4, use_scale=True, causal=False, "
                                                   "dropout=0.0) raised NotImplementedError", set()),
    "attention_scoring": ("q1.textbook_1d", "not written yet: masked_softmax(...) raised NotImplementedError",
                          {"ex1", "ex3"}),
    "bahdanau_attention": ("q1.seed_example", "AdditiveAttention(input_dim=20, hidden_dim=32) raised "
                                              "NotImplementedError", set()),
    "practical10": ("q1.practical", "not written yet: scaled_dot_product_attention(...) raised NotImplementedError",
                    {"compare", "maps"}),
}
# Every assignment with a solution notebook (solutions/<name>/solution.ipynb), found (tests/conftest.py).
ASSIGNMENTS = with_templates()


def blank_expectation(assignment: str) -> tuple[str, str | None, set[str]]:
    """(a public check of q1, how its message starts on a blank template or None for any "... raised
    NotImplementedError", the written answers' ids)."""
    if assignment in PINNED:
        return PINNED[assignment]
    spec = load_assignment(assignment)
    first = next(c for c in spec.checks if c.visibility == PUBLIC)
    return first.id, None, {w.id for w in spec.written}


def test_every_assignment_has_one_solution_source() -> None:
    assert set(PINNED) <= set(ASSIGNMENTS)  # the repository's own assignments all have one
    strays = sorted(set(with_solution_source()) - set(available_assignments()))
    assert not strays, (f"solutions/{strays[0]}/{SOLUTION_SOURCE} is in a folder that is not an assignment: add "
                        "__init__.py and checks.py beside it (`grader new NAME` writes a complete one)")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_templates_are_up_to_date_with_the_solution_source(assignment: str) -> None:
    """Fails when someone edits a template by hand or a solution without running `grader assign`."""
    stale = stale_templates(assignment)
    assert not stale, f"out of date with solutions/{assignment}/{SOLUTION_SOURCE}: {stale}; run `grader assign`"


def _generate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # No kit: it is recorded from the solutions' checks, which this copy of solutions/ lacks (tests/test_kit_cli.py).
    return subprocess.run([sys.executable, "-m", "grader", "assign", *args, "--no-kit", "--solutions",
                           str(tmp_path / "solutions"), "--out", str(tmp_path / "assignments")],
                          capture_output=True, text=True, timeout=120)


def test_assign_writes_the_templates_and_check_fails_when_they_are_out_of_date(tmp_path: Path) -> None:
    source = tmp_path / "solutions" / "attention_scoring" / SOLUTION_SOURCE
    source.parent.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "attention_scoring" / SOLUTION_SOURCE, source)
    missing = _generate(tmp_path, "--check")
    assert missing.returncode == 1 and "missing: " in missing.stderr
    written = _generate(tmp_path, "attention_scoring")
    assert written.returncode == 0, written.stderr
    folder = tmp_path / "assignments" / "attention_scoring"
    for suffix in (".ipynb", ".py"):  # the same bytes as the committed templates: generation is deterministic
        assert (folder / f"attention_scoring{suffix}").read_bytes() == \
            (ROOT / "assignments" / "attention_scoring" / f"attention_scoring{suffix}").read_bytes()
    assert _generate(tmp_path, "--check").returncode == 0
    notebook = json.loads(source.read_text())
    cell = next(c for c in notebook["cells"] if c["id"] == "q3-dot-product-attention")
    cell["source"] = "".join(cell["source"]).replace("math.sqrt(d)", "d")
    source.write_text(json.dumps(notebook))
    assert _generate(tmp_path, "--check").returncode == 0  # the change is inside a solution: templates the same
    cell["source"] = cell["source"].replace("Scaled dot product attention.", "Scaled dot-product attention.")
    source.write_text(json.dumps(notebook))
    stale = _generate(tmp_path, "--check")
    assert stale.returncode == 1
    assert "out of date: " in stale.stderr and "attention_scoring.ipynb" in stale.stderr
    assert "attention_scoring.py" in stale.stderr and "run `grader assign`" in stale.stderr


def test_solutions_become_stubs_at_their_indentation() -> None:
    source = ("class A:\n    def f(self, x):\n        y = 1\n        ### BEGIN SOLUTION\n        return x + y\n"
              "        ### END SOLUTION\n\n    ### BEGIN SOLUTION\n    g = f\n    ### END SOLUTION")
    assert strip_solutions(source, code=True, where="cell") == (
        "class A:\n    def f(self, x):\n        y = 1\n        # YOUR CODE HERE\n        raise NotImplementedError\n"
        "\n    # YOUR CODE HERE\n    raise NotImplementedError")
    answer = "**Your answer:**\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION"
    assert strip_solutions(answer, code=False, where="cell") == "**Your answer:**\n\n_Write your answer here._"


@pytest.mark.parametrize(("source", "says"), [
    ("### BEGIN SOLUTION\nx = 1", "line 1: ### BEGIN SOLUTION is never ended"),
    ("x = 1\n### END SOLUTION", "line 2: ### END SOLUTION without a ### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "line 2: ### BEGIN SOLUTION inside the solution"),
])
def test_unbalanced_markers_are_an_instructor_error(source: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        strip_solutions(source, code=True, where="cell 'q1'")


def test_a_solution_without_markers_would_hand_out_the_answers() -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Intro"),
                                               nbformat.v4.new_code_cell("def f():\n    return 1")])
    with pytest.raises(ConfigurationError, match="marks no solution"):
        student_notebook(notebook, name="toy")


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


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_templates_define_every_graded_name_and_answer(assignment: str) -> None:
    """The names checks.py grades are in both templates, unanswered; the .py runs no example when imported."""
    spec = load_assignment(assignment)
    files = template_files(assignment)
    python = files[ROOT / "assignments" / assignment / f"{assignment}.py"]
    tree = ast.parse(python)
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert {name for q in spec.questions for name in q.defines} <= defined
    strings = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
               if isinstance(t, ast.Name) and t.id.startswith("ANSWER_")}
    assert strings == {f"ANSWER_{w.id.upper()}" for w in spec.written}
    assert all(isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign, ast.If))
               or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in tree.body)
    assert "### BEGIN SOLUTION" not in python and "### END SOLUTION" not in python
    notebook = nbformat.reads(files[ROOT / "assignments" / assignment / f"{assignment}.ipynb"], as_version=4)
    assert notebook.metadata["grader"] == {"assignment": assignment}
    assert {t for c in notebook.cells for t in c.metadata.get("tags", [])} == {f"answer:{w.id}" for w in spec.written}
    assert notebook.cells[-1].source == "from grader.kit import check\n\ncheck()"  # the student kit's
    assert python.endswith('\n# %%\nif __name__ == "__main__":\n    from grader.kit import check\n\n    check()\n')
    assert all(c.outputs == [] and c.execution_count is None for c in notebook.cells if c.cell_type == "code")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ClassRun]:
    """Per assignment, one class: both blank templates and the solved notebook, graded once."""
    runs: dict[str, ClassRun] = {}

    def run(assignment: str) -> ClassRun:
        if assignment not in runs:
            folder = tmp_path_factory.mktemp(assignment)
            submissions = folder / "class"
            submissions.mkdir()
            for suffix in (".ipynb", ".py"):
                template = ROOT / "assignments" / assignment / f"{assignment}{suffix}"
                (submissions / f"blank{suffix[1:]}{suffix}").write_bytes(template.read_bytes())
            # The solution as a student would hand it in: the template's cells, solved, its self-check cell last.
            solution = nbformat.read(ROOT / "solutions" / assignment / SOLUTION_SOURCE, as_version=4)
            template = nbformat.read(ROOT / "assignments" / assignment / f"{assignment}.ipynb", as_version=4)
            solution.cells += [c for c in template.cells if c.id in CHECK_CELL_IDS]
            nbformat.write(solution, submissions / "solution.ipynb")
            runs[assignment] = grade_class(RunRequest(assignment=assignment, submissions_dir=submissions,
                                                      out_dir=folder / "out"), RunOptions(jobs=2))
        return runs[assignment]

    return run


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_templates_grade_to_zero_with_clear_messages(graded: Callable[[str], ClassRun],
                                                           assignment: str) -> None:
    check_id, message, written = blank_expectation(assignment)
    blanks = [r for r in graded(assignment).results if r.student.startswith("blank")]
    assert len(blanks) == 2
    for result in blanks:
        assert (result.status, result.score) == ("graded", 0)
        read = student_reads(result, check_id)
        assert read.startswith(message) if message is not None else " raised NotImplementedError" in read, read
        assert {a.id: a.text for a in result.answers} == dict.fromkeys(written, "")


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_solution_source_earns_full_marks(graded: Callable[[str], ClassRun], assignment: str) -> None:
    (result,) = [r for r in graded(assignment).results if r.student == "solution"]
    assert result.status == "graded" and result.kind == "notebook"
    assert [(c.check_id, c.message) for c in result.checks if not c.passed] == []
    # The automatic part: a written question's points come only when someone marks it, so an assignment whose written
    # answers carry points has its model solution score them 0 until then, and that is no failure of its checks.
    assert result.code_score == sum(q.max_score for q in result.questions) > 0
    assert all(a.text for a in result.answers)  # the model answers between the markers
    # The self-check cell ran as a no-op: nothing printed, nothing noted, on the page or in the result.
    last = result.units[-1]
    assert (last.status, last.stdout, last.stderr, last.error, last.notes) == ("ok", "", "", "", ())
    assert not any("grader.kit" in note or "check()" in note for note in result.notes)
    page = (graded(assignment).out_dir / "students" / "solution" / "report.html").read_text()
    assert "grader.kit.check" not in page  # the stand-in's check(), and what it returns, are shown nowhere
