"""How a check's weights find the student's parameters (grader/check/binding.py) and its constructor arguments the
student's signature (grader/check/signature.py): the rule on its own, then through the real runner."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.check.binding import EXACT, RENAMED, STRUCTURE, Found, Naming, bind
from grader.check.signature import Parameter, plan_call
from grader.discover import Submission
from grader.record.gradescope import gradescope_results
from grader.results import SubmissionResult

from .conftest import ROOT, write
from .sample_classes import student_reads
from .warm_workers import grade_one

ADDITIVE = {"W_q.weight": (8, 20), "W_k.weight": (8, 2), "w_v.weight": (1, 8)}
CORPUS = ROOT / "tests" / "submissions" / "real_style" / "attention_scoring"


def lazy(name: str, out: int, bias: bool = False) -> list[Found]:
    return [Found(f"{name}.weight", (out, None))] + ([Found(f"{name}.bias", (out,))] if bias else [])


def linear(name: str, shape: tuple[int, int]) -> list[Found]:
    return [Found(f"{name}.weight", shape)]


# ----- the rule -------------------------------------------------------------------------------------------------
def test_the_specified_names_bind_first_and_bind_exactly() -> None:
    binding = bind(ADDITIVE, lazy("W_k", 8) + lazy("W_q", 8) + lazy("w_v", 1))
    assert binding.bound == {name: name for name in ADDITIVE} and binding.exact and binding.usable
    assert binding.rename_message("AdditiveAttention") == ""


def test_names_up_to_case_and_aliases_bind_and_say_what_to_rename() -> None:
    binding = bind(ADDITIVE, lazy("W_k", 8) + lazy("W_q", 8) + lazy("W_v", 1))
    assert binding.bound["w_v.weight"] == "W_v.weight" and binding.how["w_v.weight"] == RENAMED
    assert not binding.exact and binding.usable
    assert binding.rename_message("AdditiveAttention") == (
        "AdditiveAttention's parameters are not named as the assignment specifies: found `W_v` (1 x 8) used as "
        "`w_v`: rename it `w_v`")
    aliased = bind(ADDITIVE, lazy("W_k", 8) + lazy("W_q", 8) + lazy("v", 1), Naming(aliases={"w_v": ("v",)}))
    assert aliased.bound["w_v.weight"] == "v.weight" and aliased.how["w_v.weight"] == RENAMED


def test_the_structure_binds_by_shape_then_role_words_then_declaration_order() -> None:
    by_shape = bind(ADDITIVE, linear("a", (8, 2)) + linear("b", (8, 20)) + linear("c", (1, 8)))
    assert by_shape.bound == {"W_q.weight": "b.weight", "W_k.weight": "a.weight", "w_v.weight": "c.weight"}
    assert set(by_shape.how.values()) == {STRUCTURE}
    # Lazy layers: W_q and W_k both fit either layer of 8 outputs; the names say which is which.
    by_role = bind(ADDITIVE, lazy("key_proj", 8) + lazy("query_proj", 8) + lazy("score", 1))
    assert by_role.bound["W_q.weight"] == "query_proj.weight" and by_role.bound["W_k.weight"] == "key_proj.weight"
    # Names that say nothing: the order the module declares them in.
    by_order = bind(ADDITIVE, lazy("first", 8) + lazy("second", 8) + lazy("third", 1))
    assert by_order.bound["W_q.weight"] == "first.weight" and by_order.bound["W_k.weight"] == "second.weight"


def test_an_open_choice_binds_nothing_and_says_why() -> None:
    binding = bind(ADDITIVE, lazy("a", 8) + lazy("b", 8) + lazy("c", 8) + lazy("d", 1))
    assert not binding.usable and binding.bound == {}
    assert binding.problem("AdditiveAttention") == (
        "the grader could not tell which of AdditiveAttention's parameters to set: `a`, `b` and `c` all fit `W_q` "
        "(8 x 20) and `W_k` (8 x 2): name them as the assignment does")


def test_a_specified_name_with_another_shape_is_a_mistake_not_a_search() -> None:
    binding = bind({"W": (5, 3)}, [Found("W", (3, 5)), Found("other", (5, 3))])
    assert not binding.usable and binding.wrong_shape == {"W": ("W", (3, 5))}
    assert binding.problem("BilinearAttention") == (
        "BilinearAttention's `W` has shape 3 x 5, where the assignment's `W` is 5 x 3")


def test_what_the_student_lacks_is_missing_and_what_the_formula_does_not_use_is_unused() -> None:
    no_projections = bind(ADDITIVE, lazy("w_v", 1))
    assert no_projections.missing == ("W_q.weight", "W_k.weight") and no_projections.usable
    with_bias = bind(ADDITIVE, lazy("W_q", 8, bias=True) + lazy("W_k", 8) + lazy("w_v", 1))
    assert with_bias.unused == ("W_q.bias",) and with_bias.exact


def test_strict_names_bind_only_the_specified_names() -> None:
    binding = bind(ADDITIVE, lazy("W_k", 8) + lazy("W_q", 8) + lazy("W_v", 1), Naming(strict=True))
    assert binding.missing == ("w_v.weight",) and binding.unused == ("W_v.weight",)
    assert all(how == EXACT for how in binding.how.values())


def test_arguments_named_otherwise_go_in_the_assignments_order() -> None:
    def signature(*names: str, defaults: int = 0, kwargs: bool = False) -> list[Parameter]:
        params = [Parameter(n, "either", i >= len(names) - defaults) for i, n in enumerate(names)]
        return params + ([Parameter("kwargs", "**kwargs", False)] if kwargs else [])

    wanted, optional = {"num_hiddens": 8, "dropout": 0.1}, {"key_size": 2, "query_size": 20}
    same = plan_call(signature("num_hiddens", "dropout", kwargs=True), wanted, optional)
    assert (same.kwargs, same.renamed) == (wanted, ())  # optional ones only when named: **kwargs goes to nn.Module
    older = plan_call(signature("key_size", "query_size", "num_hiddens", "dropout"), wanted, optional)
    assert older.kwargs == {"key_size": 2, "query_size": 20, "num_hiddens": 8, "dropout": 0.1}
    renamed = plan_call(signature("key_size", "query_size", "hidden_dim", "dropout_rate", defaults=1), wanted,
                        optional)
    assert renamed.kwargs == {"key_size": 2, "query_size": 20, "hidden_dim": 8, "dropout_rate": 0.1}
    assert renamed.renamed == (("num_hiddens", "hidden_dim"), ("dropout", "dropout_rate"))
    too_many = plan_call(signature("a", "b", "c"), wanted, {})
    assert too_many.problem == "could not match num_hiddens and dropout" and too_many.kwargs == {}


# ----- through the runner ---------------------------------------------------------------------------------------
OPEN_CHOICE = """
    import torch
    from torch import nn

    class AdditiveAttention(nn.Module):
        def __init__(self, num_hiddens, dropout, **kwargs):
            super().__init__(**kwargs)
            self.layer1 = nn.LazyLinear(num_hiddens, bias=False)
            self.layer2 = nn.LazyLinear(num_hiddens, bias=False)
            self.layer3 = nn.LazyLinear(num_hiddens, bias=False)  # never used
            self.out = nn.LazyLinear(1, bias=False)
            self.dropout = nn.Dropout(dropout)

        def forward(self, queries, keys, values, valid_lens):
            features = torch.tanh(self.layer1(queries).unsqueeze(2) + self.layer2(keys).unsqueeze(1))
            self.attention_weights = torch.softmax(self.out(features).squeeze(-1), dim=-1)
            return torch.bmm(self.dropout(self.attention_weights), values)
"""


def graded(tmp_path: Path, source: str | Path, *, strict: bool = False) -> SubmissionResult:
    assignment = load_assignment("attention_scoring")
    if strict:  # on a copy: the loaded assignment is shared by every test
        assignment = copy.copy(assignment)
        assignment.questions = tuple(dataclasses.replace(q, strict_names=True) if q.id == "q2" else q
                                     for q in assignment.questions)
    path = write(tmp_path, "student.py", source) if isinstance(source, str) else source
    return grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                     assignment=assignment, root=path.parent)


def test_weights_with_nowhere_to_go_cost_the_checks_that_need_them_once_and_no_other(tmp_path: Path) -> None:
    result = graded(tmp_path, OPEN_CHOICE)
    checks = {c.check_id: c for c in result.checks if c.question == "q2"}
    # Dropout is checked on the student's own weights: it needs none set.
    assert checks["q2.eval_deterministic"].passed and checks["q2.dropout_in_training"].passed
    for check_id in ("q2.toy_example", "q2.toy_weights", "q2.random_1d", "q2.random_2d"):
        assert checks[check_id].status == "failed"
        assert "your code raised" not in checks[check_id].message
    said = student_reads(result, "q2.toy_example")
    assert said.startswith("the grader could not tell which of AdditiveAttention's parameters to set: `layer1`, "
                           "`layer2` and `layer3` all fit")
    (note,) = [n for n in next(q.notes for q in result.questions if q.id == "q2") if n.startswith("Not graded")]
    assert note == f"Not graded: {said}"
    # Gradescope shows no question notes: there each check says it.
    outputs = {t["extra_data"]["check_id"]: t["output"] for t in gradescope_results(result)["tests"]}
    assert all(outputs[c].startswith(said) for c in ("q2.toy_example", "q2.toy_weights", "q2.random_1d"))


@pytest.mark.slow
def test_strict_names_give_a_renamed_layer_no_marks_on_the_question(tmp_path: Path) -> None:
    lenient = graded(tmp_path, CORPUS / "capital_w_v.py")
    strict = graded(tmp_path, CORPUS / "capital_w_v.py", strict=True)
    assert {q.id: q.score for q in lenient.questions}["q2"] == 26
    scores = {q.id: q.score for q in strict.questions}
    assert scores["q2"] < 26 and scores["q1"] == 25
