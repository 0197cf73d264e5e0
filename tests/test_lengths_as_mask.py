"""valid_lens used as a boolean mask is named (issue 28, pattern 5).

valid_lens holds lengths ([2, 3]); code written for a mask raises on them, or masks nothing. The cause is named only
on evidence: the failed check, run again with a mask built from the lengths in their place, passes. The masks the
search builds first, drawn by Hypothesis over lengths and sizes: among them is every form mask code is written for, the
axis as long as the check's keys first. Then through the runner, one submission per idiom, graded as a class once:
masks of bools and of 0/1 floats, code with no None branch, named with the line that raised; and a failure from
elsewhere, searched within the bounds only."""

from __future__ import annotations

from dataclasses import dataclass, replace

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from grader.check.lengths_as_mask import RUNS_PER_QUESTION, candidate_forms, mask_for
from grader.check.student import LengthsCall
from grader.execute.arguments import Arg
from grader.pipeline import RunOptions, RunRequest, grade_class
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


@given(st.booleans().flatmap(lambda forward: lengths_call(forward=forward)))
def test_the_axes_as_long_as_the_checks_keys_and_queries_are_tried_first(
        case: tuple[LengthsCall, np.ndarray, int]) -> None:
    """The check names its sizes (ctx.name_sizes): the first mask tried has as many keys, and the first one repeated
    over the queries as many queries, whatever other axis has a size a length could be."""
    call, lengths, queries = case
    keys = call.args[0].value.shape[-1] if call.at == 1 else call.args[1].value.shape[1]
    forms = list(candidate_forms(call, {"batch": len(lengths), "queries": queries, "keys": keys}))
    first = mask_for(call, forms[0])
    assert first is not None and first.shape[-1] == keys
    assert (first == (np.arange(keys) < lengths[..., None])).all()
    over_queries = [mask_for(call, form) for form in forms if form.queries is not None]
    if lengths.ndim == 1:
        assert over_queries[0] is not None and over_queries[0].shape == (len(lengths), queries, keys)


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
ONE_D_CHECKS_Q1 = {"q1.textbook_1d", "q1.random_1d", "q1.large_scores"}


@dataclass(frozen=True)
class MaskStyle:
    """masked_softmax written for a mask in a style the search once missed, and what it must now be told."""

    function: str
    kind: str  # what the code takes, as the cause words it
    named: frozenset[str]  # the checks a mask makes pass, each named
    raises_at: str  # the line it raises at on lengths, which the cause quotes


# Each was told only its shapes ("The size of tensor a (2) must match the size of tensor b (4) ...") or its
# AssertionError: the first two raise on bools (torch refuses 1 - mask), the others raise on None too.
MASK_STYLES = {
    "float_arithmetic": MaskStyle("""def masked_softmax(X, mask):
    # mask: 1.0 for the keys to keep, 0.0 for padding
    if mask is None:
        return F.softmax(X, dim=-1)
    if mask.dim() == 2:
        mask = mask.unsqueeze(1)
    return F.softmax(X * mask - 1e6 * (1 - mask), dim=-1)
""", "a 0/1 float mask", frozenset(LENGTHS_CHECKS_Q1), "return F.softmax(X * mask - 1e6 * (1 - mask), dim=-1)"),
    "float_padding_arithmetic": MaskStyle("""def masked_softmax(X, padding):
    # padding: 1.0 where a key is padding, as a key_padding_mask of floats
    if padding is None:
        return F.softmax(X, dim=-1)
    if padding.dim() == 2:
        padding = padding[:, None, :]
    return F.softmax(X * (1 - padding) - 1e6 * padding, dim=-1)
""", "a 0/1 float mask, 1 where a key is padding", frozenset(LENGTHS_CHECKS_Q1),
        "return F.softmax(X * (1 - padding) - 1e6 * padding, dim=-1)"),
    "shape_asserted": MaskStyle("""def masked_softmax(X, mask):
    assert mask.shape == X.shape, "the mask must be (batch, queries, keys)"
    return F.softmax(X.masked_fill(~mask, -1e6), dim=-1)
""", "a boolean mask", frozenset(LENGTHS_CHECKS_Q1),
        'assert mask.shape == X.shape, "the mask must be (batch, queries, keys)"'),
    "indexed_with_not": MaskStyle("""def masked_softmax(X, mask):
    X = X.clone()
    X[~mask] = -1e6
    return F.softmax(X, dim=-1)
""", "a boolean mask", frozenset(LENGTHS_CHECKS_Q1), "X[~mask] = -1e6"),
    # A (batch, keys) mask only: no mask of 2-D lengths makes its 2-D checks pass, so they are not named.
    "compared_with_zero": MaskStyle("""def masked_softmax(X, mask):
    mask = mask.unsqueeze(1)  # (batch, 1, keys)
    return F.softmax(X.masked_fill(mask == 0, -1e6), dim=-1)
""", "a boolean mask", frozenset(ONE_D_CHECKS_Q1), "return F.softmax(X.masked_fill(mask == 0, -1e6), dim=-1)"),
}
# Raises on the lengths for another reason (a name never defined), and on None otherwise (no None branch): which
# checks its masked_softmax was called again for, and how, it prints.
ELSEWHERE = """def masked_softmax(X, valid_lens):
    print("masked_softmax", tuple(X.shape), None if valid_lens is None else str(valid_lens.dtype), flush=True)
    lengths = valid_lens.long()
    return F.softmax(X, dim=-1) * undefined_scale
"""


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
    for name, style in MASK_STYLES.items():
        write(folder / "class", f"{name}.py", with_masked_softmax(style.function))
    write(folder / "class", "elsewhere.py", with_masked_softmax(ELSEWHERE))
    write(folder / "class", "dot_index_eq_zero.py", nth(MODEL, DOT_WEIGHTS, DOT_EQ_ZERO, 1))
    run = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=folder / "class",
                                 out_dir=folder / "out"), RunOptions(jobs=2))
    SOURCES.update({path.stem: path.read_text() for path in (folder / "class").iterdir()})
    return by_student(run)


SOURCES: dict[str, str] = {}  # each graded file's text, as the class run read it


def line_of(student: str, text: str) -> int:
    return next(n for n, line in enumerate(SOURCES[student].splitlines(), 1) if line.strip() == text)


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


@pytest.mark.slow
@pytest.mark.parametrize("style", MASK_STYLES)
def test_mask_code_that_raises_on_bools_or_on_none_is_named_with_the_line_that_raised(
        idioms: dict[str, SubmissionResult], style: str) -> None:
    expected = MASK_STYLES[style]
    result = idioms[style]
    assert result.status == "graded", result.reason
    named = {c.check_id: c.diagnosis for c in result.checks if c.diagnosis is not None}
    assert set(named) == expected.named, [(c.check_id, c.message) for c in result.checks if not c.passed]
    line = line_of(style, expected.raises_at)
    for check_id, diagnosis in named.items():
        assert diagnosis.variant == "q1.lengths_as_mask"
        assert diagnosis.explanation.startswith(f"Your masked_softmax uses valid_lens as {expected.kind} (given one, "
                                                "it passes this check), but valid_lens holds each sequence's number "
                                                "of valid keys"), diagnosis.explanation
        failed = next(c for c in result.checks if c.check_id == check_id)
        if failed.status == "error":  # raised on the lengths: that line, quoted from the grader's copy
            assert diagnosis.where == f"your masked_softmax, line {line}: `{expected.raises_at}`", diagnosis.where
        else:  # masked nothing: the function, where the runner places a named mistake
            assert diagnosis.where == f"your masked_softmax, line {line_of(style, 'def masked_softmax(X, mask):')}"
    assert {q.id: q.score for q in result.questions if q.id != "q1"} == {"q2": 30, "q3": 25, "q4": 20}


@pytest.mark.slow
def test_a_failure_from_elsewhere_is_searched_within_its_bounds_and_not_named(
        idioms: dict[str, SubmissionResult]) -> None:
    """Its checks raise on the lengths and raise otherwise on None, which cannot tell: the first two checks
    (NEGATIVE_PROBES) are searched, each finding nothing, and the question's later ones are not run again at all."""
    result = idioms["elsewhere"]
    assert all(c.diagnosis is None for c in result.checks if c.question == "q1")
    q1 = next(q for q in result.questions if q.id == "q1")
    calls = [line.split(" ", 1)[1] for line in q1.stdout.splitlines() if line.startswith("masked_softmax ")]
    graded = [call for call in calls if call.endswith("torch.int64")]
    again = [call for call in calls if not call.endswith("torch.int64")]
    assert len(graded) == len(LENGTHS_CHECKS_Q1)  # q1.no_valid_lens passes None itself: "None", with the runs again
    assert 0 < len(again) - 1 <= RUNS_PER_QUESTION
    # Both textbook checks' X is (2, 2, 4); the random and large-score checks', never: not searched.
    assert {call.rsplit(" ", 1)[0] for call in again if call != "(2, 3, 5) None"} == {"(2, 2, 4)"}, again
