"""valid_lens used as a boolean mask is named (issue 28, pattern 5).

valid_lens holds lengths ([2, 3]); code written for a mask raises on them, or masks nothing. The cause is named only
on evidence: the failed check, run again with a mask built from the lengths in their place, passes. The masks the
search builds first, drawn by Hypothesis over lengths and sizes: among them is every form mask code is written for.
Then through the runner, one submission per idiom, graded as a class once."""

from __future__ import annotations

from dataclasses import replace

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from grader.check.lengths_as_mask import candidate_forms, mask_for
from grader.check.student import LengthsCall
from grader.execute.arguments import Arg
from grader.pipeline import grade_class
from grader.results import SubmissionResult

from .conftest import SUBMISSIONS, write
from .sample_classes import by_student


@st.composite
def lengths_call(draw: st.DrawFn, *, forward: bool) -> tuple[LengthsCall, np.ndarray, int]:
    """A call that passes lengths: masked_softmax(X, valid_lens), or forward(queries, keys, values, valid_lens), its
    sizes drawn freely (equal ones too); and the lengths and the number of keys."""
    batch, queries, keys = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 8))
    ndim = draw(st.sampled_from([1, 2]))
    lengths = np.array(draw(st.lists(st.integers(1, keys), min_size=batch * queries ** (ndim - 1),
                                     max_size=batch * queries ** (ndim - 1)))).reshape((batch, queries)[:ndim])
    if forward:
        d, d_v = draw(st.integers(1, 6)), draw(st.integers(1, 6))
        args = (Arg.tensor(np.zeros((batch, queries, d))), Arg.tensor(np.zeros((batch, keys, d))),
                Arg.tensor(np.zeros((batch, keys, d_v))), Arg.tensor(lengths, "int64"))
        call = LengthsCall("DotProductAttention", "DotProductAttention.forward", "valid_lens", 3, args, {})
    else:
        args = (Arg.tensor(np.zeros((batch, queries, keys))), Arg.tensor(lengths, "int64"))
        call = LengthsCall("masked_softmax", "masked_softmax", "valid_lens", 1, args, {})
    return call, lengths, queries


@given(st.booleans().flatmap(lambda forward: lengths_call(forward=forward)))
def test_the_masks_tried_include_every_form_mask_code_is_written_for(case: tuple[LengthsCall, np.ndarray, int]) -> None:
    call, lengths, queries = case
    keys = call.args[0].value.shape[-1] if call.at == 1 else call.args[1].value.shape[1]
    valid = np.arange(keys) < lengths[..., None]
    # (batch, queries, keys); and for 1-D lengths (batch, keys) and (batch, 1, keys)
    wanted = [valid] if lengths.ndim == 2 else [np.repeat(valid[:, None, :], queries, axis=1), valid, valid[:, None]]
    tried = [mask_for(call, replace(form, valid=polarity)) for form in candidate_forms(call)
             for polarity in (True, False)]
    for mask in wanted:
        for polarity in (mask, ~mask):
            assert any(m is not None and m.shape == polarity.shape and (m == polarity).all() for m in tried)


# ----- through the runner ---------------------------------------------------------------------------------------
MODEL = (SUBMISSIONS / "attention_scoring" / "einsum_style.py").read_text()
# masked_softmax written for a mask (True for a valid key), each the way students write it.
IDIOMS = {
    "masked_fill_not": """def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    return F.softmax(X.masked_fill(~valid_lens, -1e6), dim=-1)
""",
    "index_eq_zero": """def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    X = X.clone()
    X[valid_lens == 0] = -1e6
    return F.softmax(X, dim=-1)
""",
    "where": """def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    return F.softmax(torch.where(valid_lens, X, torch.full_like(X, -1e6)), dim=-1)
""",
    "padding_mask": """def masked_softmax(X, valid_lens):
    # valid_lens: True at the padding, as nn.MultiheadAttention's key_padding_mask
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    return F.softmax(X.masked_fill(valid_lens, -1e6), dim=-1)
""",
}
# DotProductAttention masking its own scores where valid_lens is 0: with lengths, none is, so it masks nothing, as
# code that ignores valid_lens would (the replay of that variant reproduces the failure too).
DOT_WEIGHTS = "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
DOT_EQ_ZERO = """        if valid_lens is not None:
            scores[valid_lens == 0] = -1e6
        self.attention_weights = torch.softmax(scores, dim=-1)
"""
LENGTHS_CHECKS_Q1 = {"q1.textbook_1d", "q1.textbook_2d", "q1.random_1d", "q1.random_2d", "q1.large_scores"}


def with_masked_softmax(function: str) -> str:
    """The model solution with its masked_softmax replaced by ``function``."""
    start = MODEL.index("def masked_softmax(")
    return MODEL[:start] + function + MODEL[MODEL.index("\n\n\nclass ", start):]


def nth(source: str, old: str, new: str, occurrence: int) -> str:
    at = -1
    for _ in range(occurrence + 1):
        at = source.index(old, at + 1)
    return source[:at] + new + source[at + len(old):]


@pytest.fixture(scope="module")
def idioms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SubmissionResult]:
    folder = tmp_path_factory.mktemp("idioms")
    for name, function in IDIOMS.items():
        write(folder / "class", f"{name}.py", with_masked_softmax(function))
    write(folder / "class", "dot_index_eq_zero.py", nth(MODEL, DOT_WEIGHTS, DOT_EQ_ZERO, 1))
    run = grade_class(assignment="attention_scoring", submissions_dir=folder / "class", out_dir=folder / "out", jobs=2)
    return by_student(run)


@pytest.mark.slow
@pytest.mark.parametrize("idiom", IDIOMS)
def test_masked_softmax_written_for_a_mask_is_named_on_each_check_that_passes_lengths(
        idioms: dict[str, SubmissionResult], idiom: str) -> None:
    result = idioms[idiom]
    assert result.status == "graded", result.reason
    failed = {c.check_id: c for c in result.checks if c.question == "q1" and not c.passed}
    assert set(failed) == LENGTHS_CHECKS_Q1, [(c.check_id, c.message) for c in result.checks if not c.passed]
    for check in failed.values():
        assert check.diagnosis is not None, (check.check_id, check.message)
        assert check.diagnosis.variant == "q1.lengths_as_mask"
        kind = "a boolean mask True where a key is padding" if idiom == "padding_mask" else "a boolean mask"
        assert check.diagnosis.explanation == (
            f"Your masked_softmax uses valid_lens as {kind} (given one, it passes this check), but valid_lens "
            "holds each sequence's number of valid keys (lengths such as [2, 3]): build the mask from it, "
            "torch.arange(num_keys) < valid_lens[..., None]")
    # q2-q4 are graded with the reference masked_softmax: the mistake costs points in q1 only.
    assert {q.id: q.score for q in result.questions if q.id != "q1"} == {"q2": 30, "q3": 25, "q4": 20}


@pytest.mark.slow
def test_a_forward_that_indexes_with_valid_lens_eq_zero_is_not_told_it_ignores_them(
        idioms: dict[str, SubmissionResult]) -> None:
    result = idioms["dot_index_eq_zero"]
    failed = [c for c in result.checks if c.question == "q3" and not c.passed]
    assert failed
    causes = {c.diagnosis.variant for c in failed if c.diagnosis is not None}
    assert causes == {"q3.lengths_as_mask"}, [(c.check_id, c.diagnosis) for c in failed]
    assert all(c.diagnosis.explanation.startswith("Your DotProductAttention.forward uses valid_lens as a boolean mask")
               for c in failed if c.diagnosis is not None)
