"""One rule for questions that build on each other, the same in the grader, `grader check` and the student kit: a
later question is graded with the reference of the earlier answer; a check that then fails by raising or on form is
graded again with the student's own earlier answer, and the better result counts (docs/writing-checks.md). And one
set of public inputs for everyone."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.check.load import load_assignment
from grader.check.seeds import check_seed
from grader.discover.finder import KINDS, Submission
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.kit.build import build_kit
from grader.kit.bundle import KIT_FOLDER
from grader.kit.runner import load_kit, run_kit
from grader.pipeline.self_check import public_only
from grader.pipeline.submission_run import grade_submission
from grader.results import ERROR, HIDDEN, PASSED, PUBLIC, SubmissionResult

from .conftest import FIXTURE_SOLUTIONS

HEADER = "import torch\nfrom torch import nn\n\n"
# d2l's own table, (1, steps, hiddens), and a module written for it.
OWN_CONVENTION = HEADER + textwrap.dedent("""
    def positional_table(steps, hiddens):
        positions = torch.arange(steps, dtype=torch.float32).reshape(-1, 1)
        angles = positions / torch.pow(10000, torch.arange(0, hiddens, 2, dtype=torch.float32) / hiddens)
        table = torch.zeros((1, steps, hiddens))
        table[:, :, 0::2] = torch.sin(angles)
        table[:, :, 1::2] = torch.cos(angles)
        return table


    class PositionalEncoding(nn.Module):
        def __init__(self, hiddens, max_len=50):
            super().__init__()
            self.P = positional_table(max_len, hiddens)

        def forward(self, X):
            return X + self.P[:, :X.shape[1], :]
    """)
CORRECT = OWN_CONVENTION.replace("torch.zeros((1, steps, hiddens))", "torch.zeros((steps, hiddens))") \
    .replace("table[:, :, 0::2]", "table[:, 0::2]").replace("table[:, :, 1::2]", "table[:, 1::2]") \
    .replace("self.P[:, :X.shape[1], :]", "self.P[:X.shape[1]]")
# q2 wrong whichever table it gets: it forgets to add X.
WRONG_Q2 = OWN_CONVENTION.replace("return X + self.P[:, :X.shape[1], :]", "return self.P[:, :X.shape[1], :] * 1.0")
# q1 wrong in its values only, q2 right: q2 passes with the reference and the rule changes nothing.
WRONG_Q1_VALUES = CORRECT.replace("torch.sin(angles)", "torch.sin(angles) * 2")


@pytest.fixture(scope="module")
def positional() -> Any:
    return load_assignment("positional", solutions_dir=FIXTURE_SOLUTIONS)


@pytest.fixture(scope="module")
def worker(positional: Any) -> Any:
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=positional.limits)
    yield worker
    worker.close()


@pytest.fixture(scope="module")
def kit(positional: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("kit")
    build_kit("positional", solutions_dir=FIXTURE_SOLUTIONS, assignments_dir=out / "none", out_dir=out)
    return load_kit(out / "positional" / KIT_FOLDER)


def graded(assignment: Any, worker: Any, folder: Path, source: str, student: str = "s1") -> SubmissionResult:
    path = folder / f"{student}.py"
    path.write_text(source)
    return grade_submission(submission=Submission(student, path, KINDS[".py"], datetime.now(UTC)),
                            assignment=assignment, root=folder, limits=assignment.limits, worker=worker)


def in_kernel(kit: Any, source: str) -> SubmissionResult:
    namespace: dict[str, Any] = {"__name__": "student"}
    exec(compile(source, "student.py", "exec"), namespace)
    return run_kit(kit, namespace)


def verdicts(result: SubmissionResult, visibility: Any = PUBLIC) -> dict[str, str]:
    return {c.check_id: c.status for c in result.checks if c.visibility == visibility}


def scores(result: SubmissionResult) -> dict[str, float]:
    return {q.id: q.score for q in result.questions}


def test_a_later_question_written_for_the_students_own_earlier_answer_keeps_its_points(
        positional: Any, worker: Any, kit: Any, tmp_path: Path) -> None:
    """The student's q1 returns d2l's (1, steps, hiddens) table and their q2 indexes it so: q1 loses its points, q2
    raises with the reference table and passes with their own, which counts, said in the message; the kit and
    `grader check` say the same."""
    result = graded(positional, worker, tmp_path, OWN_CONVENTION)
    assert scores(result) == {"q1": 0.0, "q2": 10.0}, [c.message for c in result.checks]
    q2 = next(c for c in result.checks if c.check_id == "q2.adds")
    assert any(n.startswith("Graded with your own positional_table") and "IndexError" in n for n in q2.notes), q2
    checked = graded(public_only(positional), worker, tmp_path, OWN_CONVENTION, student="s2")
    assert verdicts(checked) == verdicts(result) == verdicts(in_kernel(kit, OWN_CONVENTION)) == \
        {"q1.table": "failed", "q2.adds": PASSED}


@pytest.mark.parametrize(("source", "q2_status"), [(WRONG_Q2, "failed"), (CORRECT, PASSED), (WRONG_Q1_VALUES, PASSED)],
                         ids=["q2 wrong either way", "correct", "q1 values wrong"])
def test_the_students_own_answer_never_rescues_a_wrong_later_question_nor_changes_a_right_one(
        positional: Any, worker: Any, kit: Any, tmp_path: Path, source: str, q2_status: str) -> None:
    result = graded(positional, worker, tmp_path, source)
    assert verdicts(result)["q2.adds"] == verdicts(in_kernel(kit, source))["q2.adds"] == q2_status
    q2 = next(c for c in result.checks if c.check_id == "q2.adds")
    if source == WRONG_Q2:  # raises with the reference table; with its own it runs, and the message names the mistake
        assert scores(result)["q2"] == 0.0
        assert "has shape (1, 5, 8), expected (2, 5, 8)" in q2.message, q2.message
        assert any(n.startswith("Graded with your own positional_table") for n in q2.notes)
    else:
        assert not any(n.startswith("Graded with your own") for n in q2.notes)
    if source == WRONG_Q1_VALUES:  # the reference in place of a wrong q1: q2 keeps its points, q1 alone loses
        assert scores(result) == {"q1": 0.0, "q2": 10.0}


def test_the_kit_answers_the_reference_from_the_model_solutions_calls_not_the_students_own(kit: Any) -> None:
    """A q1 that raises: the kit still checks q2 with the reference's recorded answer, as the grader does."""
    source = CORRECT.replace("    positions = torch.arange", "    raise ValueError('not yet')\n    positions = "
                                                                 "torch.arange")
    result = in_kernel(kit, source)
    assert verdicts(result) == {"q1.table": ERROR, "q2.adds": PASSED}


@given(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20),
       st.sampled_from(["q1.table", "q2.adds", "q2.random"]))
def test_a_public_checks_inputs_are_everyones_and_a_hidden_checks_the_students_own(one: str, other: str,
                                                                                   check_id: str) -> None:
    assert check_seed("positional", one, check_id, PUBLIC) == check_seed("positional", other, check_id, PUBLIC)
    if one != other:
        assert check_seed("positional", one, check_id, HIDDEN) != check_seed("positional", other, check_id, HIDDEN)
