"""A student's self-check (`grader check`, `make check`): public checks only, in the real sandbox, with exit codes a
script can use, the student's page, and never a word about which hidden checks exist."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.assign import SOLUTION_SOURCE
from grader.assign.student_notebook import CHECK_CELL_IDS
from grader.check.load import load_assignment
from grader.cli.check import print_summary, wants_colour
from grader.discover.assignment_of import infer_assignment
from grader.errors import ConfigurationError
from grader.pipeline.self_check import available_assignments, check_submission, public_only
from grader.results import HIDDEN, PUBLIC

from .conftest import ROOT, SAMPLES, write


def grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def hidden_words(assignment: str) -> list[str]:
    """What would give a hidden check away: its id, and its title where no public check has the same one."""
    spec = load_assignment(assignment)
    public_titles = {c.title for c in spec.checks if c.visibility == PUBLIC}
    hidden = [c for c in spec.checks if c.visibility == HIDDEN]
    assert hidden, f"{assignment} has no hidden check to keep secret"
    return [c.id for c in hidden] + [c.title for c in hidden if c.title not in public_titles]


def assert_reveals_no_hidden_check(text: str, assignment: str) -> None:
    leaked = [word for word in hidden_words(assignment) if word in text]
    assert not leaked, f"hidden checks named: {leaked}"


def test_a_correct_submission_passes_with_exit_code_0(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "einsum_style.py", tmp_path / "ana.py")  # told apart by the names it defines
    run = grader("check", "ana.py", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    public = [c for c in load_assignment("attention_scoring").checks if c.visibility == PUBLIC]
    assert f"All {len(public)} public checks passed" in run.stdout
    for line in ("q1  masked_softmax", "q4  BilinearAttention (exercise 2)"):
        assert line in run.stdout
    assert "Hidden checks, on other inputs, also count towards your grade" in run.stdout
    assert "\033[" not in run.stdout  # not a terminal: no colour codes
    assert_reveals_no_hidden_check(run.stdout + run.stderr, "attention_scoring")
    report = tmp_path / "grader-check" / "ana" / "report.html"
    assert f"Report: {report.resolve()}" in run.stdout
    page = report.read_text()
    assert "self-check" in page and all(c.title in page for c in public)
    assert_reveals_no_hidden_check(page, "attention_scoring")


def test_a_wrong_submission_fails_with_exit_code_1_and_says_why(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "mistake_softmax_axis.py", tmp_path / "attention_scoring.py")
    run = grader("check", "attention_scoring.py", "--out", "reports", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "0 of 3 public checks passed" in run.stdout
    assert "FAILED  textbook example: valid_lens [2, 3] (1-D)" in run.stdout
    assert "masked_softmax(X, valid_lens) differs from the reference" in run.stdout
    assert "Likely cause: softmax over the queries axis. Your masked_softmax normalises over dim=1" in run.stdout
    assert "Likely cause: softmax over the queries axis. (as above)" in run.stdout  # told once in full
    assert "q2  AdditiveAttention" in run.stdout and "passed (5 public checks)" in run.stdout
    assert "3 of 15 public checks did not pass" in run.stdout
    assert_reveals_no_hidden_check(run.stdout + run.stderr, "attention_scoring")
    page = (tmp_path / "reports" / "attention_scoring" / "report.html").read_text()
    assert "Likely cause" in page
    assert_reveals_no_hidden_check(page, "attention_scoring")


def test_usage_mistakes_exit_with_code_2(tmp_path: Path) -> None:
    missing = grader("check", "nowhere.ipynb", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere.ipynb does not exist" in missing.stderr
    write(tmp_path, "notes.py", "x = 1\n")
    unknown = grader("check", "notes.py", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "could not tell which assignment notes.py is for" in unknown.stderr and "--assignment" in unknown.stderr
    # The same kind of mistake (a ConfigurationError, exit code 2), without starting the command each time:
    with pytest.raises(ConfigurationError, match="no assignment 'no_such_assignment'"):
        check_submission(path=tmp_path / "notes.py", out_dir=tmp_path, assignment="no_such_assignment")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ConfigurationError, match=r"not a notebook \(.ipynb\) or a Python file \(.py\)"):
        check_submission(path=tmp_path / "notes.txt", out_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="is a folder"):
        check_submission(path=tmp_path, out_dir=tmp_path)


def test_make_check_runs_the_self_check(tmp_path: Path) -> None:
    """`make check` as a student types it. make reports a failed recipe with its own exit code 2, so only the
    passing case is asserted here; the exit codes 0 and 1 are grader check's, above."""
    env = {k: v for k, v in os.environ.items() if k != "ASSIGNMENT"}  # told from the file
    make = ["make", "--no-print-directory", "-o", ".venv/.installed", "check"]  # never (re)install from a test
    usage = subprocess.run(make, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert usage.returncode != 0 and "usage: make check SUBMISSION=" in usage.stderr
    notebook = tmp_path / "ana.ipynb"
    shutil.copy(SAMPLES / "folder_student" / "attention_scoring.ipynb", notebook)
    passed = subprocess.run([*make, f"SUBMISSION={notebook}", f"CHECK_OUT={tmp_path / 'out'}"], capture_output=True,
                            text=True, cwd=ROOT, env=env, timeout=300)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "All 15 public checks passed" in passed.stdout
    assert f"Report: {tmp_path / 'out' / 'ana' / 'report.html'}" in passed.stdout


def test_the_templates_last_cell_checks_the_notebook_itself(kits: Path) -> None:
    """A student's finished notebook, run in a real Jupyter kernel from the kit's folder: its last cell, the student
    kit's check(), checks what the kernel defined and shows the result inline."""
    kit = kits / "attention_scoring"
    notebook = nbformat.read(ROOT / "solutions" / "attention_scoring" / SOLUTION_SOURCE, as_version=4)
    template = nbformat.read(kit / "attention_scoring.ipynb", as_version=4)
    notebook.cells += [c for c in template.cells if c.id in CHECK_CELL_IDS]
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(kit)}})
    client.execute(env={k: v for k, v in os.environ.items() if k != "GRADER_KIT"})  # found from the folder
    (shown,) = notebook.cells[-1].outputs  # one display: not also printed, not also the cell's value
    assert shown.output_type == "display_data", shown
    assert shown.data["text/html"].lstrip().startswith('<div class="grader-kit">')
    printed = shown.data["text/plain"]
    assert printed.startswith("Attention scoring functions (d2l 11.3) (attention_scoring), public checks only")
    assert "All 15 public checks passed" in printed, printed


HIDDEN_ONLY = """
    import numpy as np

    from grader.check import Arg, Assignment, CheckContext, Question
    from grader.results import HIDDEN

    ASSIGNMENT = Assignment(name="halves", title="Halves", questions=[
        Question("q1", "half", defines=("half",)), Question("q2", "quarter", defines=("quarter",))])


    @ASSIGNMENT.check("q1", points=1, title="half([2, 4])")
    def q1_given(ctx: CheckContext) -> None:
        ctx.expect_tensor("half(x)", ctx.student.function("half")(Arg.tensor(np.array([2.0, 4.0]))), np.array([1, 2.0]))


    @ASSIGNMENT.check("q1", points=1, title="secret half", visibility=HIDDEN)
    def q1_secret(ctx: CheckContext) -> None:
        ctx.expect_tensor("half(x)", ctx.student.function("half")(Arg.tensor(np.array([6.0]))), np.array([3.0]))


    @ASSIGNMENT.check("q2", points=2, title="secret quarter", visibility=HIDDEN)
    def q2_secret(ctx: CheckContext) -> None:
        ctx.expect_tensor("quarter(x)", ctx.student.function("quarter")(Arg.tensor(np.array([8.0]))), np.array([2.0]))
"""


def test_hidden_checks_and_questions_with_only_hidden_checks_are_not_run(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions"
    write(solutions / "halves", "__init__.py", "")
    write(solutions / "halves", "checks.py", HIDDEN_ONLY)
    spec = load_assignment("halves", solutions_dir=solutions)
    public = public_only(spec)
    assert [c.id for c in public.checks] == ["q1.given"] and [q.id for q in public.questions] == ["q1"]
    assert public.name == spec.name and public.limits == spec.limits  # same seeds, same limits
    assert len(spec.checks) == 3  # the assignment itself is left as it was
    # The quarter is wrong, but only a hidden check would see it.
    submission = write(tmp_path, "halves.py", "def half(x):\n    return x / 2\n\ndef quarter(x):\n    return x\n")
    check = check_submission(path=submission, out_dir=tmp_path / "out", solutions_dir=solutions)
    assert check.passed and check.has_hidden and check.unchecked == (("q2", "quarter"),)
    assert [c.check_id for c in check.result.checks] == ["q1.given"]
    summary = io.StringIO()
    print_summary(check, source="halves.py", stream=summary)
    text = summary.getvalue()
    assert "q1  half" in text and "q2  quarter" in text and "no public check" in text
    # On the grade's scale: of its 4 points the public check has 1, the hidden ones 3.
    assert "The public check passed (1 / 1 points; the grade is out of 4: your instructor grades the rest)." in text
    page = check.report.read_text()
    assert "q2 (quarter) has no public check" in page
    for secret in ("secret", "q1.secret", "q2.secret"):
        assert secret not in text and secret not in page


def test_the_assignment_is_told_from_metadata_name_or_defined_names(tmp_path: Path) -> None:
    available = available_assignments()
    asks = {name: load_assignment(name).withheld_names for name in available}

    def infer(path: Path, sources: tuple[str, ...] = ()) -> str:
        return infer_assignment(path, available=available, asks_for=asks.__getitem__, sources=lambda: sources)

    renamed = tmp_path / "ana.ipynb"
    shutil.copy(ROOT / "assignments" / "practical10" / "practical10.ipynb", renamed)
    assert infer(renamed) == "practical10"  # the template's metadata, whatever the file is called
    assert infer(tmp_path / "bahdanau_attention.py") == "bahdanau_attention"
    bahdanau = ("class AdditiveAttention: pass", "class MultiHeadAdditiveAttention: pass",
                "if True:\n    def chunked_additive_attention(): pass")
    assert infer(tmp_path / "ana.py", bahdanau) == "bahdanau_attention"  # 3 of 3, not attention_scoring's 1 of 4
    assert infer(tmp_path / "ana.py", ("def masked_softmax(X, v): pass",)) == "attention_scoring"
    with pytest.raises(ConfigurationError, match="could not tell which assignment"):
        infer(tmp_path / "ana.py", ("def helper(): pass", "this is not Python"))
    with pytest.raises(ConfigurationError, match="could be for attention_scoring or bahdanau_attention"):
        infer_assignment(tmp_path / "ana.py", available=available, sources=lambda: ("class AdditiveAttention: 0",),
                         asks_for=lambda name: ("AdditiveAttention",))


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wants_colour(Terminal())  # type: ignore[arg-type]
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_colour(Terminal())  # type: ignore[arg-type]
    assert not wants_colour(open(os.devnull, "w"))  # noqa: SIM115
