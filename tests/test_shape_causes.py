"""Issue 28, item 7: symptoms with their causes. An answer of another shape is told axis by axis with the check's
named sizes, and a cause is said only where the answer bears it out (a broadcast whose diagonal is the expected
answer, a transposition that gives it); an answer off only by axes of size 1 added or removed is still compared, read
in the expected shape, so a shape slip does not hide the mistake its values show; and a check-named cause
(bahdanau's `.squeeze()`) needs the squeeze in the code that raised, not only the error it may give."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.check import load_assignment
from grader.check.compare import compare_tensor
from grader.check.student import bare_call_lines
from grader.discover import Submission
from grader.execute.arguments import Returned
from grader.results import CheckResult, SubmissionResult

from .conftest import SUBMISSIONS, write
from .warm_workers import grade_one

REAL_STYLE = SUBMISSIONS / "real_style"


def tensor(array: np.ndarray) -> Returned:
    return Returned("tensor", "torch.Tensor", dtype="float32", shape=array.shape, array=array)


# ----- what an answer's shape shows (compare_tensor), on drawn sizes -----------------------------------------------
OUTPUT_AXES = ("batch", "queries", "value_size")


@given(batch=st.integers(2, 6), values=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_a_batch_spread_over_the_queries_axis_is_named_when_the_diagonal_is_the_answer(
        batch: int, values: int, seed: int) -> None:
    """A (batch, keys) mask unsqueezed at 0 against (batch, 1, keys) scores: output [b, c] is example b with example
    c's mask, so [b, b] is the answer."""
    rng = np.random.default_rng(seed)
    expected = rng.normal(size=(batch, 1, values))
    got = rng.normal(size=(batch, batch, values)) + 5
    got[np.arange(batch), np.arange(batch)] = expected[:, 0]
    sizes = {"batch": batch, "queries": 1, "keys": 10, "value_size": values}
    mismatch = compare_tensor("the output", tensor(got), expected, axes=OUTPUT_AXES, sizes=sizes)
    assert mismatch is not None and mismatch.category == "shape"
    assert mismatch.message == (
        f"the output has shape ({batch}, {batch}, {values}), expected ({batch}, 1, {values}) for (batch, queries, "
        f"value size): its axis 1 has the batch's {batch} entries where the queries axis has 1 ([k, k, :] is the "
        "expected [k, 0, :] for each k): something indexed by the batch was broadcast along the queries axis")
    assert mismatch.hint == "the output has the wrong shape (something indexed by the batch was broadcast along the " \
                            "queries axis)"

    got[0, 0] += 1  # the diagonal no longer the answer: no cause, only what the axis holds
    unproven = compare_tensor("the output", tensor(got), expected, axes=OUTPUT_AXES, sizes=sizes)
    assert unproven is not None and "broadcast" not in unproven.message
    assert f": its axis 1 has size {batch} (batch" in unproven.message
    assert unproven.message.endswith("where the queries axis has 1")


@given(keys=st.integers(1, 12), seed=st.integers(0, 2**16), off=st.sampled_from([0.0, 0.25]))
def test_an_extra_axis_of_size_1_is_compared_as_the_expected_shape(keys: int, seed: int, off: float) -> None:
    expected = np.random.default_rng(seed).dirichlet(np.ones(keys))
    mismatch = compare_tensor("w", tensor(expected.reshape(keys, 1) + off), expected, axes=("keys",))
    assert mismatch is not None and mismatch.category == "shape" and mismatch.read is (off == 0.0)
    read = "its values are right" if off == 0.0 else "it differs from the reference in"
    assert mismatch.message.startswith(f"w has shape ({keys}, 1), expected ({keys},) for (keys): it has an extra axis "
                                       f"of size 1; read as ({keys},), {read}")
    values = "its values are right" if off == 0.0 else "its values differ too"
    assert mismatch.hint == f"w has the wrong shape (it has an extra axis of size 1; read in the expected shape, " \
                            f"{values})"


def test_a_size_1_axis_in_another_place_is_not_read_as_the_expected_shape() -> None:
    """(batch, keys, 1) for (batch, 1, keys): the keys are in the queries' place. Read as the expected shape, the
    weights of a softmax over that one query (all 1) would pass for a softmax over the queries, a mistake it is not."""
    sizes = {"batch": 2, "queries": 1, "keys": 10}
    mismatch = compare_tensor("w", tensor(np.ones((2, 10, 1))), np.full((2, 1, 10), 0.1),
                              axes=("batch", "queries", "keys"), sizes=sizes)
    assert mismatch is not None and mismatch.read is None
    assert mismatch.message == ("w has shape (2, 10, 1), expected (2, 1, 10) for (batch, queries, keys): its axis 1 "
                                "has size 10 (keys) where the queries axis has 1; its axis 2 has size 1 (queries) "
                                "where the keys axis has 10")


@given(shape=st.lists(st.integers(2, 5), min_size=2, max_size=4, unique=True), seed=st.integers(0, 2**16),
       data=st.data())
def test_a_transposed_answer_is_said_to_be_one_only_when_reordering_gives_the_answer(
        shape: list[int], seed: int, data: st.DataObject) -> None:
    order = data.draw(st.permutations(range(len(shape))).filter(lambda p: list(p) != sorted(p)))
    expected = np.random.default_rng(seed).normal(size=shape)
    got = np.transpose(expected, np.argsort(order))  # got.transpose(order) is expected
    names = tuple(f"size_{n}" for n in shape)
    mismatch = compare_tensor("A", tensor(got), expected, axes=names)
    assert mismatch is not None
    assert f"put in the order {tuple(order)}, it is the expected answer" in mismatch.message
    wrong = compare_tensor("A", tensor(got + 1), expected, axes=names)
    assert wrong is not None and "order" not in wrong.message and "size" in wrong.message


# ----- the code a failing call ran through (bare_call_lines) --------------------------------------------------------
CALLS = {"x.squeeze()": True, "torch.squeeze(x)": True, "x.squeeze(-1)": False, "x.squeeze(dim=-1)": False,
         "torch.squeeze(x, -1)": False, "x.reshape(-1)": False}


@given(call=st.sampled_from(sorted(CALLS)), where=st.sampled_from(["forward", "helper method", "other function"]))
def test_a_squeeze_is_evidence_only_when_bare_and_in_the_code_that_raised(call: str, where: str) -> None:
    helper = f"    def scores(self, x):\n        return {call}\n\n" if where == "helper method" else ""
    inline = f"        x = {call}\n" if where == "forward" else ""
    source = (f"import torch\n\n\nclass Attention:\n{helper}    def forward(self, x):\n{inline}"
              "        return x @ x\n\n\n"
              f"def other(x):\n    return {call}\n")
    failing = source.splitlines().index("        return x @ x") + 1
    found = bare_call_lines(source, failing, "squeeze")
    assert bool(found) == (CALLS[call] and where != "other function"), (call, where, found)


# ----- real code, in the sandbox, on each assignment -----------------------------------------------------------------
@pytest.fixture(scope="module")
def grade() -> Callable[[str, Path], SubmissionResult]:
    def graded(assignment: str, path: Path) -> SubmissionResult:
        submission = Submission(path.stem, path, "python", datetime.now(UTC))
        return grade_one(submission=submission, assignment=load_assignment(assignment), root=path.parent)

    return graded


def the_check(result: SubmissionResult, check_id: str) -> CheckResult:
    return next(c for c in result.checks if c.check_id == check_id)


def test_attention_scoring_a_padding_mask_unsqueezed_at_0_is_told_as_the_batch_spread_over_the_queries(
        grade: Callable[[str, Path], SubmissionResult]) -> None:
    result = grade("attention_scoring", REAL_STYLE / "attention_scoring" / "padding_mask_unsqueezed_at_0.py")
    toy = the_check(result, "q3.toy_example")
    assert toy.message == (
        "the output of DotProductAttention has shape (2, 2, 4), expected (2, 1, 4) for (batch, queries, value size): "
        "its axis 1 has the batch's 2 entries where the queries axis has 1 ([k, k, :] is the expected [k, 0, :] for "
        "each k): something indexed by the batch was broadcast along the queries axis")
    assert "something indexed by the batch was broadcast along the queries axis" in \
        the_check(result, "q3.toy_weights").message
    assert toy.diagnosis is None


def test_attention_scoring_a_bare_squeeze_that_drops_the_one_query_is_named_with_its_line(
        grade: Callable[[str, Path], SubmissionResult]) -> None:
    """The toy example has one query: the squeeze makes the scores (2, 10), on which masked_softmax fails. The
    random checks, with several queries, still name the missing tanh."""
    result = grade("attention_scoring", REAL_STYLE / "attention_scoring" / "no_tanh_squeezed.py")
    for check_id in ("q2.toy_example", "q2.toy_weights"):
        assert the_check(result, check_id).message.endswith(
            "your code calls .squeeze() with no axis (line 33: `scores = self.w_v(features).squeeze()`), which "
            "removes every axis of size 1, and queries is 1 here: name the axis to remove (.squeeze(-1) removes "
            "only the last)")
    assert {c.diagnosis.variant for c in result.checks if c.diagnosis} == {"q2.no_tanh"}


def test_bahdanau_a_missing_tanh_is_named_behind_an_n_by_1_column_of_weights(
        grade: Callable[[str, Path], SubmissionResult]) -> None:
    result = grade("bahdanau_attention", REAL_STYLE / "bahdanau_attention" / "scores_column_no_tanh.py")
    seed = the_check(result, "q1.seed_example")
    assert seed.message.startswith(
        "the attention_weights returned by AdditiveAttention has shape (10, 1), expected (10,) for (keys): it has an "
        "extra axis of size 1; read as (10,), it differs from the reference in 10 of 10 entries")
    assert {c.check_id: c.diagnosis.variant for c in result.checks if c.diagnosis} == {
        "q1.seed_example": "q1.no_tanh", "q1.value_dim": "q1.no_tanh", "q1.random": "q1.no_tanh"}
    single = the_check(result, "q1.single_key")  # one key: weight 1 with or without tanh, so nothing to name
    assert single.message.endswith("read as (1,), its values are right") and single.diagnosis is None


def test_bahdanau_squeeze_is_named_only_where_the_code_that_raised_has_a_bare_squeeze(
        grade: Callable[[str, Path], SubmissionResult]) -> None:
    """Both raise on a single key with a 0-d-like IndexError ("range of [-1, 0]"); only one of them squeezes."""
    other = grade("bahdanau_attention", REAL_STYLE / "bahdanau_attention" / "squeezed_then_softmax_dim1.py")
    single = the_check(other, "q1.single_key")
    assert "range of [-1, 0]" in single.message and "squeeze" not in single.message
    assert single.diagnosis is None and single.status == the_check(other, "q1.seed_example").status == "error"

    squeezed = grade("bahdanau_attention", SUBMISSIONS / "bahdanau_attention" / "mistake_squeeze.py")
    single = the_check(squeezed, "q1.single_key")
    assert single.diagnosis is not None and single.diagnosis.variant == "q1.squeeze"
    assert "your code calls .squeeze() with no axis (line " in single.message and "keys is 1 here" in single.message


KERAS_MODEL = (SUBMISSIONS / "keras_additive_attention" / "reference_style.py").read_text()
KERAS_KEYS_FIRST = {  # scores laid out (batch, Tv, Tq), normalised over the keys, and returned so
    "features = torch.tanh(query.unsqueeze(-2) + key.unsqueeze(-3))":
        "features = torch.tanh(key.unsqueeze(-2) + query.unsqueeze(-3))",
    "distribution = self.dropout(torch.softmax(scores, dim=-1))":
        "distribution = self.dropout(torch.softmax(scores, dim=-2))",
    "        output = distribution @ value\n": "        output = distribution.transpose(-2, -1) @ value\n",
}


def test_keras_scores_in_another_layout_are_told_as_reordered_axes(
        grade: Callable[[str, Path], SubmissionResult], tmp_path: Path) -> None:
    source = KERAS_MODEL
    for old, new in KERAS_KEYS_FIRST.items():
        assert source.count(old) == 1
        source = source.replace(old, new)
    result = grade("keras_additive_attention", write(tmp_path, "keys_first.py", source))
    assert the_check(result, "q1.key_omitted").message == (
        "the attention scores (key omitted) has shape (2, 5, 3), expected (2, 3, 5) for (batch, queries, values): its "
        "axes are (batch, values, queries): put in the order (0, 2, 1), it is the expected answer")
    assert the_check(result, "q1.return_output_only").passed


PRACTICAL10_ROW_VECTORS = '''
import numpy as np


def scaled_dot_product_attention(q, X):
    q = q.reshape(1, -1)               # the query as a row vector
    scores = q @ X.T                   # one score per row of X
    p = np.exp(scores - scores.max())
    p = p / p.sum()
    z = p @ X
    return p, z
'''


def test_practical10_row_vectors_are_compared_as_vectors_and_the_missing_scaling_named(
        grade: Callable[[str, Path], SubmissionResult], tmp_path: Path) -> None:
    result = grade("practical10", write(tmp_path, "row_vectors.py", PRACTICAL10_ROW_VECTORS))
    practical = the_check(result, "q1.practical")
    assert practical.message.startswith(
        "the probability vector p has shape (1, 4), expected (4,) for (rows): it has an extra axis of size 1; read "
        "as (4,), it differs from the reference in 4 of 4 entries")
    assert practical.diagnosis is not None and practical.diagnosis.variant == "q1.unscaled"
