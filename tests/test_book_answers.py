"""The book's answers are not the student's (issue 28, pattern 11): inside the sandbox, no name a question asks
students to write is answered by the grader's ``d2l`` or by any module the sandbox holds, and taking one from ``d2l``
is told as such ("`d2l.DotProductAttention` is the answer to q3: write your own"); while a later question is graded
with the reference, ``d2l.<earlier name>`` is that reference and code that calls it keeps working.

Every assignment in solutions/ is tried, with the names its questions' ``defines`` list: none is listed here."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.assign.templates import read_solution, with_solution_source
from grader.check import load_assignment
from grader.check.load import available_assignments
from grader.discover import Submission
from grader.paths import SOLUTIONS_DIR
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.results import SubmissionResult

from .sample_classes import by_student, student_reads
from .warm_workers import grade_one

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_class_runs")]

ASSIGNMENTS = available_assignments(SOLUTIONS_DIR)


def asked(assignment: str) -> dict[str, str]:
    """Each name a question of ``assignment`` asks students to write -> that question."""
    return {name: q.id for q in load_assignment(assignment).questions for name in q.defines}


# Each way a student takes an answer from d2l, as the source for the names given.
def alias(names: list[str]) -> str:
    return "from d2l import torch as d2l\n\n" + "".join(f"{name} = d2l.{name}\n" for name in names)


def subclass(names: list[str]) -> str:
    # A function cannot be subclassed: the class statement asks d2l for it all the same.
    return "from d2l import torch as d2l\n\n" + "".join(f"class {name}(d2l.{name}):\n    pass\n\n"
                                                        for name in names)


def wrapper(names: list[str]) -> str:
    """The name defined, d2l asked for the answer only when the grader calls it."""
    body = "import torch\nfrom d2l import torch as d2l\n\n"
    for name in names:
        if name[0].isupper():
            body += (f"class {name}(torch.nn.Module):\n    def __init__(self, *args, **kwargs):\n"
                     f"        super().__init__()\n        self.inner = d2l.{name}(*args, **kwargs)\n\n"
                     f"    def forward(self, *args, **kwargs):\n        return self.inner(*args, **kwargs)\n\n")
        else:
            body += f"def {name}(*args, **kwargs):\n    return d2l.{name}(*args, **kwargs)\n\n"
    return body


def stolen(names: list[str]) -> str:
    """What a student finds by searching the sandbox: the stand-in's internal module, every loaded module and every
    object the process holds, and the book's MultiHeadAttention, which holds a DotProductAttention."""
    return textwrap.dedent('''
        import gc
        import sys
        from d2l import torch as d2l


        def steal(name):
            for module in list(sys.modules.values()):
                if isinstance(getattr(module, "_TEXTBOOK", None), dict):
                    book = module.textbook() if callable(getattr(module, "textbook", None)) else module._TEXTBOOK
                    if name in book:
                        return book[name]
            try:
                import stubs
                return stubs.textbook()[name]
            except Exception:
                pass
            for obj in gc.get_objects():
                if callable(obj) and getattr(obj, "__name__", "") == name and \\
                        str(getattr(obj, "__module__", "")).startswith("d2l"):
                    return obj
            if name == "DotProductAttention":
                return type(d2l.MultiHeadAttention(4, 2, 0.0).attention)
            raise LookupError(name)

    ''') + "".join(f"\n{name} = steal({name!r})\n" for name in names)


WAYS: dict[str, Callable[[list[str]], str]] = {"alias": alias, "subclass": subclass, "wrapper": wrapper,
                                                "stolen": stolen}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], dict[str, SubmissionResult]]:
    """Each assignment graded once: a student per way of taking every name it asks for from d2l."""
    runs: dict[str, dict[str, SubmissionResult]] = {}

    def grade(assignment: str) -> dict[str, SubmissionResult]:
        if assignment not in runs:
            folder = tmp_path_factory.mktemp(assignment)
            (folder / "class").mkdir()
            for way, source in WAYS.items():
                (folder / "class" / f"{way}.py").write_text(source(list(asked(assignment))), encoding="utf-8")
            runs[assignment] = by_student(grade_class(RunRequest(assignment=assignment,
                                                                 submissions_dir=folder / "class",
                                                                 out_dir=folder / "out"), RunOptions(jobs=2)))
        return runs[assignment]

    return grade


CASES = [(a, w) for a in ASSIGNMENTS for w in WAYS]


@pytest.mark.parametrize(("assignment", "way"), CASES)
def test_an_answer_taken_from_d2l_scores_nothing_and_is_named(
        graded: Callable[[str], dict[str, SubmissionResult]], assignment: str, way: str) -> None:
    result = graded(assignment)[way]
    assert result.status == "graded", result.reason
    scores = {q.id: q.score for q in result.questions}
    for name, question in asked(assignment).items():
        assert scores[question] == 0, (name, [(c.check_id, c.message) for c in result.checks if c.passed])
        if way == "stolen":
            continue  # nothing was taken: the name is not defined (or is the student's own search's failure)
        said = [student_reads(result, c.check_id) for c in result.checks if c.question == question]
        told = f"`d2l.{name}` is the answer to {question}: write your own"
        assert said and all(told in message for message in said), (told, said)


def with_answers_from_d2l(assignment: str, names: tuple[str, ...]) -> str:
    """The model solution with its own definitions of ``names`` removed and every use of them made ``d2l.<name>``:
    a later question's code that builds on the book's answer as the book's own code does."""
    cells = [c.source for c in read_solution(assignment).cells if c.cell_type == "code"]
    code = "\n\n".join("\n".join(line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!")))
                       for cell in cells)
    tree = ast.parse(code)
    tree.body = [node for node in tree.body if not (
        isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names)]

    class ToD2l(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in names and isinstance(node.ctx, ast.Load):
                return ast.copy_location(ast.Attribute(ast.Name("d2l", ast.Load()), node.id, ast.Load()), node)
            return node

    return "from d2l import torch as d2l\n\n" + ast.unparse(ast.fix_missing_locations(ToD2l().visit(tree)))


LATER = [(a, q.id, q.graded_with_reference) for a in with_solution_source(SOLUTIONS_DIR) if a in ASSIGNMENTS
         for q in load_assignment(a).questions if q.graded_with_reference]


@pytest.mark.parametrize(("assignment", "question", "names"), LATER)
def test_a_later_question_that_calls_d2l_for_an_earlier_answer_gets_the_reference(
        tmp_path: Path, assignment: str, question: str, names: tuple[str, ...]) -> None:
    path = tmp_path / "student.py"
    path.write_text(with_answers_from_d2l(assignment, names), encoding="utf-8")
    result = grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                       assignment=load_assignment(assignment), root=tmp_path)
    (graded_question,) = [q for q in result.questions if q.id == question]
    assert graded_question.score == graded_question.max_score, [
        (c.check_id, c.message) for c in result.checks if c.question == question and not c.passed]
