"""Every code block of docs/writing-checks.md runs as printed, so a block that drifts from the code fails here.

The worked example's checks.py and variants.py, with the example's reference (tests/fixtures/docs_example/), give
d2l's MultiHeadAttention full marks and name each of the two mistakes the page declares when a submission makes it.
The positional-encoding example's checks.py and provided.py grade a class, with q2 graded with the provided reference,
the heatmap's labels the way round the page says, and optional constructor arguments as it says. The solution-marker
fragment is stripped as `grader assign` strips it. Shell blocks: `grader` lines parse with the real argparse parser,
`make` lines name a target whose recipe holds the page's pytest line, and pytest lines parse with pytest's own."""

from __future__ import annotations

import inspect
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.assign.markers import strip_solutions
from grader.check.context import CheckContext
from grader.check.load import load_assignment
from grader.cli import build_parser
from grader.pipeline import RunRequest, grade_class

from .conftest import ROOT

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

PAGE = ROOT / "docs" / "writing-checks.md"
FIXTURE = ROOT / "tests" / "fixtures" / "docs_example"
NAME = "multihead_attention"


POSITIONAL = "positional_encoding"
SHELL = ("", "sh", "shell", "bash")
# What identifies each python block, and the test that runs it; a block with none of these fails
# test_every_code_block_is_run, so a new block comes with its test.
PYTHON_BLOCKS = {
    f'name="{NAME}"': "the worked example's checks.py (test_the_example_grades_...)",
    "@ASSIGNMENT.variant(": "the worked example's variants.py (test_the_example_grades_...)",
    f'name="{POSITIONAL}"': "the positional example's checks.py (test_the_positional_example_...)",
    '"""The reference positional_table': "the positional example's provided.py (test_the_positional_example_...)",
    "### BEGIN SOLUTION": "the solution-marker fragment (test_the_solution_markers_...)",
    "ctx.name_sizes(": "the Shapes fragment (test_the_shapes_fragment_calls_...)",
}


def all_blocks() -> list[tuple[str, str]]:
    """(language, text) of every fenced block of the page."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), flags=re.S | re.M)


def page_blocks() -> list[str]:
    return [text for language, text in all_blocks() if language == "python"]


def shell_lines() -> list[list[str]]:
    return [shlex.split(line) for language, text in all_blocks() if language in SHELL
            for line in text.splitlines() if line.strip()]


def the_block(marker: str) -> str:
    found = [block for block in page_blocks() if marker in block]
    assert len(found) == 1, f"docs/writing-checks.md: expected one code block with {marker!r}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    solutions = tmp_path_factory.mktemp("solutions")
    package = solutions / NAME
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(FIXTURE / "reference_numpy.py", package / "reference_numpy.py")
    (package / "checks.py").write_text(the_block(f'name="{NAME}"'), encoding="utf-8")
    (package / "variants.py").write_text(the_block("@ASSIGNMENT.variant("), encoding="utf-8")
    return solutions


def test_the_example_grades_a_correct_module_in_full_and_names_each_mistake(example: Path, tmp_path: Path) -> None:
    spec = load_assignment(NAME, solutions_dir=example)
    assert spec.max_score == 20
    correct = (FIXTURE / "reference_style.py").read_text(encoding="utf-8")
    class_dir = tmp_path / "class"
    class_dir.mkdir()
    (class_dir / "correct.py").write_text(correct, encoding="utf-8")
    for variant in spec.variants:
        mutated = correct
        for old, new in variant.mutation:
            assert correct.count(old) == 1, (variant.id, old)
            mutated = mutated.replace(old, new)
        (class_dir / f"{variant.id.split('.')[1]}.py").write_text(mutated, encoding="utf-8")
    run = grade_class(RunRequest(assignment=NAME, submissions_dir=class_dir, out_dir=tmp_path / "out",
                                 solutions_dir=example))
    results = {r.student: r for r in run.results}
    assert results["correct"].score == 20
    assert all(c.diagnosis is None for c in results["correct"].checks)
    assert {v.id for v in spec.variants} == {"q1.unscaled", "q1.valid_lens_not_repeated"}
    for variant in spec.variants:
        result = results[variant.id.split(".")[1]]
        assert result.score < 20, variant.id
        diagnosed = {c.diagnosis.variant for c in result.checks if c.diagnosis is not None}
        assert diagnosed == {variant.id}, (variant.id, [c.message for c in result.checks])


def test_every_code_block_is_run() -> None:
    blocks = all_blocks()
    fences = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line.lstrip().startswith("```")]
    assert len(fences) == 2 * len(blocks), "docs/writing-checks.md: a fence this test does not read (indented?)"
    for language, text in blocks:
        assert language in ("python", *SHELL), f"a ```{language} block, which no test runs:\n{text}"
        if language == "python":
            claimed = [marker for marker in PYTHON_BLOCKS if marker in text]
            assert len(claimed) == 1, f"a python block that no test (or more than one) runs; see PYTHON_BLOCKS:\n{text}"
    assert len(page_blocks()) == len(PYTHON_BLOCKS)
    assert shell_lines(), "no shell block found"


# ----- shell blocks ------------------------------------------------------------------------------------------------
def make_dry_run(arguments: list[str]) -> str:
    """The recipe ``make`` would run, printed and not run (-n), with a venv that needs no install."""
    venv = ROOT / ".venv"
    done = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", "-o", str(venv / ".installed"),
                           *arguments], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (arguments, done.stderr)
    return done.stdout


def test_each_shell_line_is_a_real_command() -> None:
    make_recipes = [make_dry_run(words[1:]) for words in shell_lines() if words[0] == "make"]
    seen = set()
    for words in shell_lines():
        program = Path(words[0]).name
        seen.add(program)
        if program == "grader":
            build_parser().parse_args(words[1:])  # argparse exits (SystemExit) on an unknown command or flag
        elif program == "make":
            continue  # each ran with -n above
        elif program.startswith("python") and words[1:3] == ["-m", "pytest"]:
            assert words[0] == ".venv/bin/python", "the page runs the project's venv"
            # pytest's own parser, collecting only this file: a usage error exits 4, no tests selected 5
            done = subprocess.run([sys.executable, "-m", "pytest", *words[3:], "--collect-only", "-p",
                                   "no:cacheprovider", str(Path(__file__).relative_to(ROOT))],
                                  cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert done.returncode in (0, 5), (words, done.stdout[-2000:], done.stderr[-2000:])
            # the make target the page gives beside it runs this very line
            assert any(shlex.join(["-m", "pytest", *words[3:]]) in recipe for recipe in make_recipes), \
                (words, make_recipes)
        else:
            raise AssertionError(f"a shell line no test checks: {shlex.join(words)}")
    assert {"grader", "make"} <= seen


# ----- the solution markers ----------------------------------------------------------------------------------------
def test_the_solution_markers_fragment_is_stripped_as_grader_assign_strips_it() -> None:
    block = the_block("### BEGIN SOLUTION")
    compile(block, "solution.ipynb cell", "exec")
    template = strip_solutions(block, code=True, where="docs/writing-checks.md")
    compile(template, "template cell", "exec")
    assert "    # YOUR CODE HERE\n    raise NotImplementedError" in template
    assert "BEGIN SOLUTION" not in template


# ----- questions that build on each other: the positional-encoding example -------------------------------------------
TABLE = textwrap.dedent("""
    import torch
    from torch import nn


    def positional_table(steps, hiddens):
        positions = torch.arange(steps, dtype=torch.float32).reshape(-1, 1)
        angles = positions / torch.pow(10000, torch.arange(0, hiddens, 2, dtype=torch.float32) / hiddens)
        table = torch.zeros((steps, hiddens))
        table[:, 0::2] = torch.sin(angles)
        table[:, 1::2] = torch.cos(angles)
        return table
    """)
# d2l's signature, and the module calls q1's function.
CORRECT = TABLE + textwrap.dedent("""

    class PositionalEncoding(nn.Module):
        def __init__(self, num_hiddens, dropout, max_len=1000):
            super().__init__()
            self.dropout = nn.Dropout(dropout)
            self.P = positional_table(max_len, num_hiddens)

        def forward(self, X):
            return self.dropout(X + self.P[:X.shape[1]])
    """)
# Other names, and no max_len: the page's `PositionalEncoding(d_model, p_drop)`.
RENAMED = CORRECT.replace("num_hiddens, dropout, max_len=1000", "d_model, p_drop") \
    .replace("nn.Dropout(dropout)", "nn.Dropout(p_drop)").replace("positional_table(max_len, num_hiddens)",
                                                                 "positional_table(100, d_model)")
# q1 wrong; q2 right with whichever table it is given.
WRONG_TABLE = CORRECT.replace("torch.sin(angles)", "torch.sin(angles) * 2")


def positional_example(solutions: Path, checks: str) -> None:
    package = solutions / POSITIONAL
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(ROOT / "tests" / "fixtures" / "solutions" / "positional" / "reference_numpy.py", package)
    (package / "checks.py").write_text(checks, encoding="utf-8")
    (package / "provided.py").write_text(the_block('"""The reference positional_table'), encoding="utf-8")


def grade_positional(tmp_path: Path, checks: str) -> dict:
    solutions = tmp_path / "solutions"
    positional_example(solutions, checks)
    class_dir = tmp_path / "class"
    class_dir.mkdir()
    for student, source in {"correct": CORRECT, "renamed": RENAMED, "wrong_table": WRONG_TABLE}.items():
        (class_dir / f"{student}.py").write_text(source, encoding="utf-8")
    run = grade_class(RunRequest(assignment=POSITIONAL, submissions_dir=class_dir, out_dir=tmp_path / "out",
                                 solutions_dir=solutions))
    return {r.student: r for r in run.results}


def test_the_positional_example_grades_with_the_provided_reference_and_optional_arguments(tmp_path: Path) -> None:
    checks = the_block(f'name="{POSITIONAL}"')
    results = grade_positional(tmp_path / "as_printed", checks)
    scores = {student: {q.id: q.score for q in r.questions} for student, r in results.items()}
    assert scores["correct"] == {"q1": 5, "q2": 5}, results["correct"].checks
    # optional= lets a class without max_len bind its renamed arguments, and the report says how it read them
    assert scores["renamed"] == {"q1": 5, "q2": 5}, results["renamed"].checks
    assert any("given num_hiddens as `d_model`, dropout as `p_drop`" in c.line for c in results["renamed"].choices)
    # q2 is graded with provided.py's positional_table: q1's mistake costs points in q1 only
    assert scores["wrong_table"] == {"q1": 0, "q2": 5}, results["wrong_table"].checks

    # the heatmap's labels as the page says: ("Hiddens", "Steps") draws a row per step, a column per hidden
    q1 = next(c for c in results["correct"].checks if c.check_id == "q1.table")
    (heatmap,) = q1.heatmaps
    assert (heatmap.xlabel, heatmap.ylabel) == ("Hiddens", "Steps")
    assert (len(heatmap.reference), len(heatmap.reference[0])) == (10, 8)  # rows: 10 steps; columns: 8 hiddens

    # the page's claim the other way: max_len passed as a required keyword fails the class without it
    optional = 'optional={"max_len": 20}'
    assert checks.count(optional) == 1
    required = grade_positional(tmp_path / "required", checks.replace(optional, "max_len=20"))
    assert {q.id: q.score for q in required["correct"].questions} == {"q1": 5, "q2": 5}
    assert {q.id: q.score for q in required["renamed"].questions} == {"q1": 5, "q2": 0}
    quoted = re.search(r'`PositionalEncoding\(d_model, p_drop\)` gets "([^"]*)"', " ".join(PAGE.read_text().split()))
    assert quoted, "the page no longer quotes the message"
    for check in (c for c in required["renamed"].checks if c.question == "q2"):
        assert quoted.group(1) in check.message, (quoted.group(1), check.message)


class _Signatures:
    """A stand-in ``ctx`` whose every method call is bound to CheckContext's own signature, and nothing more."""

    def __getattr__(self, name: str) -> object:
        method = getattr(CheckContext, name)  # AttributeError: the page calls a method that does not exist

        def call(*args: object, **kwargs: object) -> None:
            inspect.signature(method).bind(self, *args, **kwargs)  # TypeError: arguments it does not take

        return call


def test_the_shapes_fragment_calls_the_context_as_it_is() -> None:
    """The fragment's calls are CheckContext's methods with arguments they take (tests/test_shape_causes.py runs
    what they do)."""
    block = the_block("ctx.name_sizes(")
    exec(compile(block, "writing-checks.md", "exec"), {"ctx": _Signatures(), "got": None, "output": None})
