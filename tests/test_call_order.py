"""Parameters declared in another order than the assignment calls them are named (issue 28, pattern 5).

The checks call a student's function or forward positionally, in the order of the template's signature
(Question.calls, read from solution.ipynb). A student's parameters whose names say their roles in another order get
the wrong tensors; the check is graded as called, and its question says, once, both orders and the fix. The rule on
its own first, drawn by Hypothesis over the calls the four assignments make with the names students give; then
through the runner."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given

from grader.check import load_assignment
from grader.check.call_order import order_message, out_of_order, template_signatures
from grader.check.signature import Parameter
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.paths import SOLUTIONS_DIR
from grader.results import SubmissionResult

from .conftest import write
from .warm_workers import grade_one

# What each assignment's checks call, in the order the students' template declares (solution.ipynb).
TEMPLATE_CALLS = {
    "attention_scoring": {"masked_softmax": ("X", "valid_lens"),
                          "AdditiveAttention": ("queries", "keys", "values", "valid_lens"),
                          "DotProductAttention": ("queries", "keys", "values", "valid_lens"),
                          "BilinearAttention": ("queries", "keys", "values", "valid_lens")},
    "bahdanau_attention": {"AdditiveAttention": ("query", "key", "value"),
                           "MultiHeadAdditiveAttention": ("query", "key", "value"),
                           "chunked_additive_attention": ("attention", "query", "key", "value", "chunk_size")},
    "keras_additive_attention": {"KerasAdditiveAttention": ("query", "value", "key", "query_mask", "value_mask",
                                                            "return_attention_scores")},
    "practical10": {"scaled_dot_product_attention": ("q", "X"), "self_attention": ("X", "W_Q", "W_K", "W_V"),
                    "multi_head_attention": ("X", "heads", "W_O"), "DotProdAttention": ("query", "context", "mask")},
}
CALLS = [parameters for calls in TEMPLATE_CALLS.values() for parameters in calls.values()]
# Names students give a parameter that say its role; a parameter not listed keeps the assignment's name.
SAYS_ITS_ROLE = {
    "queries": ("q", "Q", "query", "queries", "qry", "query_states"),
    "keys": ("k", "K", "key", "keys", "key_states"),
    "values": ("v", "V", "value", "values", "val"),
    "valid_lens": ("valid_lens", "valid_len", "lens", "lengths", "seq_lengths"),
    "W_Q": ("W_Q", "w_q", "W_query", "weight_q"),
    "W_K": ("W_K", "w_k", "W_key"),
    "W_V": ("W_V", "w_v", "W_value"),
}
SAYS_ITS_ROLE |= {"query": SAYS_ITS_ROLE["queries"], "key": SAYS_ITS_ROLE["keys"], "value": SAYS_ITS_ROLE["values"],
                  "q": SAYS_ITS_ROLE["queries"]}
SAY_NOTHING = ("a", "b", "t", "inputs", "tensor1", "tensor2", "first", "second", "other", "data")


def params(names: list[str]) -> list[Parameter]:
    return [Parameter(name, "either", False) for name in names]


@st.composite
def reordered(draw: st.DrawFn) -> tuple[tuple[str, ...], list[str], list[int], int]:
    """An assignment's call, the student's names for its parameters in some order (``order[j]``: the assignment's
    place of the student's j-th parameter), and how many arguments the check passes positionally."""
    call = draw(st.sampled_from(CALLS))
    order = draw(st.permutations(range(len(call))))
    names = [draw(st.sampled_from(SAYS_ITS_ROLE.get(call[i], (call[i],)))) for i in order]
    passed = draw(st.integers(1, len(call)))
    return call, names, order, passed


def test_each_assignments_calls_are_read_from_its_template() -> None:
    for assignment, calls in TEMPLATE_CALLS.items():
        assert load_assignment(assignment).calls == calls, assignment
        notebook = SOLUTIONS_DIR / assignment / "solution.ipynb"
        assert template_signatures(notebook, calls) == calls


def test_calls_a_question_declares_are_kept_over_the_templates(tmp_path: Path) -> None:
    folder = tmp_path / "solutions"
    scoring = SOLUTIONS_DIR / "attention_scoring"
    for path in scoring.iterdir():
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            if path.name == "checks.py":  # the question declares q1's order itself
                text = text.replace('Question("q1", "masked_softmax", defines=("masked_softmax",))',
                                    'Question("q1", "masked_softmax", defines=("masked_softmax",), '
                                    'calls={"masked_softmax": ("scores", "valid_lens")})')
            write(folder / "attention_scoring", path.name, text)
    calls = load_assignment("attention_scoring", solutions_dir=folder).calls
    assert calls["masked_softmax"] == ("scores", "valid_lens")
    assert calls["DotProductAttention"] == ("queries", "keys", "values", "valid_lens")


@given(reordered())
def test_a_parameter_whose_name_says_another_place_is_found_whatever_the_names(
        case: tuple[tuple[str, ...], list[str], list[int], int]) -> None:
    call, names, order, passed = case
    moved = any(place != j for j, place in enumerate(order[:passed]))
    assert out_of_order(call, params(names), passed) == moved


@given(st.sampled_from(CALLS), st.data())
def test_names_that_say_nothing_are_never_out_of_order(call: tuple[str, ...], data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(SAY_NOTHING), min_size=len(call), max_size=len(call), unique=True))
    assert not out_of_order(call, params(names), len(call))


def test_the_message_shows_both_orders_and_the_fix() -> None:
    theirs = [Parameter("key", "either", False), Parameter("query", "either", False),
              Parameter("value", "either", False), Parameter("valid_lens", "either", True, "None")]
    assert order_message("DotProductAttention.forward", theirs, "forward",
                         ("queries", "keys", "values", "valid_lens")) == (
        "Your DotProductAttention.forward takes (key, query, value, valid_lens=None): the assignment calls "
        "forward(queries, keys, values, valid_lens), in that order; reorder your parameters")
    # Keras's own order, where PyTorch's nn.MultiheadAttention takes (query, key, value): `key` gets the value.
    assert out_of_order(TEMPLATE_CALLS["keras_additive_attention"]["KerasAdditiveAttention"],
                        params(["query", "key", "value"]), 2)
    assert not out_of_order(TEMPLATE_CALLS["keras_additive_attention"]["KerasAdditiveAttention"],
                            params(["q", "v", "k"]), 3)


@pytest.mark.parametrize(("call", "names"), [
    (TEMPLATE_CALLS["attention_scoring"]["DotProductAttention"], ["queries", "keys", "values", "key_padding_mask"]),
    (TEMPLATE_CALLS["attention_scoring"]["DotProductAttention"], ["q", "k", "v", "key_mask"]),
    (TEMPLATE_CALLS["keras_additive_attention"]["KerasAdditiveAttention"],
     ["query", "value", "key", "q_mask", "key_padding_mask"]),
])
def test_a_mask_named_for_what_it_masks_is_not_that_tensor(call: tuple[str, ...], names: list[str]) -> None:
    """PyTorch's key_padding_mask masks the keys: in the place of valid_lens (or of Keras's value_mask) it is not
    the keys out of order, and the student is not told to reorder their parameters."""
    assert not out_of_order(call, params(names), len(names))
    # The same names with the mask moved to the keys' place are out of order.
    moved = [names[0], names[-1], *names[2:-1], names[1]]
    assert out_of_order(call, params(moved), len(names))


# ----- through the runner ---------------------------------------------------------------------------------------
def only(assignment: Assignment, *questions: str) -> Assignment:
    chosen = copy.copy(assignment)
    chosen.questions = tuple(q for q in assignment.questions if q.id in questions)
    chosen.checks = [c for c in assignment.checks if c.question in questions]
    return chosen


def graded(tmp_path: Path, assignment: Assignment, source: str) -> SubmissionResult:
    path = write(tmp_path, "student.py", source)
    return grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                     assignment=assignment, root=path.parent)


def notes(result: SubmissionResult, question: str) -> str:
    return " ".join(next(q.notes for q in result.questions if q.id == question))


DOT_PRODUCT = """
    import math
    import torch
    from torch import nn


    class DotProductAttention(nn.Module):
        def __init__(self, dropout):
            super().__init__()
            self.dropout = nn.Dropout(dropout)

        def forward(self, {order}):
            scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
            if valid_lens is not None:
                lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(-1, scores.shape[1])
                mask = torch.arange(scores.shape[-1])[None, None, :] < lens[:, :, None]
                scores = scores.masked_fill(~mask, -1e6)
            self.attention_weights = torch.softmax(scores, dim=-1)
            return torch.bmm(self.dropout(self.attention_weights), values)
"""


@pytest.fixture(scope="module")
def dot_product() -> Assignment:
    return only(load_assignment("attention_scoring"), "q3")


@pytest.mark.slow
@pytest.mark.parametrize("order", ["keys, queries, values, valid_lens=None", "queries, values, keys, valid_lens=None"])
def test_a_forward_in_another_order_is_graded_as_called_and_named_once(dot_product: Assignment, tmp_path: Path,
                                                                       order: str) -> None:
    result = graded(tmp_path, dot_product, DOT_PRODUCT.replace("{order}", order))
    assert result.status == "graded", result.reason
    failed = [c for c in result.checks if not c.passed]
    assert failed  # graded as called: the queries land in `keys`
    said = (f"Your DotProductAttention.forward takes ({order}): the assignment calls forward(queries, keys, values, "
            "valid_lens), in that order; reorder your parameters")
    assert notes(result, "q3").count(said) == 1
    assert all(said not in c.message for c in failed)  # said once, for the question


@pytest.mark.slow
def test_the_assignments_order_gets_no_such_note(dot_product: Assignment, tmp_path: Path) -> None:
    result = graded(tmp_path, dot_product, DOT_PRODUCT.replace("{order}", "queries, keys, values, valid_lens=None"))
    assert result.score == result.max_score, [(c.check_id, c.message) for c in result.checks if not c.passed]
    assert "reorder your parameters" not in notes(result, "q3")


ADDITIVE = """
    import torch
    from torch import nn


    class AdditiveAttention(nn.Module):
        def __init__(self, num_hiddens, dropout):
            super().__init__()
            self.W_q = nn.LazyLinear(num_hiddens, bias=False)
            self.W_k = nn.LazyLinear(num_hiddens, bias=False)
            self.w_v = nn.LazyLinear(1, bias=False)
            self.dropout = nn.Dropout(dropout)

        def forward(self, {order}):
            features = torch.tanh(self.W_q(queries)[:, :, None, :] + self.W_k(keys)[:, None, :, :])
            scores = self.w_v(features)[..., 0]
            if valid_lens is not None:
                lens = valid_lens if valid_lens.dim() == 2 else valid_lens[:, None].expand(-1, scores.shape[1])
                mask = torch.arange(scores.shape[-1])[None, None, :] < lens[:, :, None]
                scores = scores.masked_fill(~mask, -1e6)
            self.attention_weights = torch.softmax(scores, dim=-1)
            return torch.bmm(self.dropout(self.attention_weights), values)
"""


@pytest.mark.slow
def test_additive_attention_taking_the_keys_first_is_named_once(tmp_path: Path) -> None:
    assignment = only(load_assignment("attention_scoring"), "q2")
    keys_first = ADDITIVE.replace("{order}", "keys, queries, values, valid_lens")
    result = graded(tmp_path / "keys_first", assignment, keys_first)
    assert result.status == "graded", result.reason
    assert [c for c in result.checks if not c.passed]  # the queries land in `keys`
    said = ("Your AdditiveAttention.forward takes (keys, queries, values, valid_lens): the assignment calls "
            "forward(queries, keys, values, valid_lens), in that order; reorder your parameters")
    assert notes(result, "q2").count(said) == 1
    ordered = graded(tmp_path / "ordered", assignment, ADDITIVE.replace("{order}", "queries, keys, values, valid_lens"))
    assert ordered.score == ordered.max_score, [(c.check_id, c.message) for c in ordered.checks if not c.passed]
