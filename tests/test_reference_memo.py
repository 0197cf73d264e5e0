"""The references' memo (grader/check/reference_memo.py): a large call is answered once per process, and the answer is
always the one computing it would give: for other values, dtypes, shapes or keys, another function, or other variants
standing in inside it, it is computed again; a caller that changes an answer in place changes nothing kept."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from grader.check.array_text import array_text
from grader.check.reference_memo import ReferenceMemo
from grader.check.variants import Variant, substitutable, substituted

SMALL = 64  # bytes: small enough that the drawn arrays are memoised


def weights(x: np.ndarray, p: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
    scores = x @ p["w"]
    return np.exp(scores - scores.max()), float(scores.sum())


arrays = hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=3, max_side=8),
                    elements=st.floats(-10, 10, allow_nan=False))


@settings(max_examples=60, deadline=None)
@given(x=arrays, seed=st.integers(0, 2**32 - 1), changed=st.integers(0, 63))
def test_an_answer_is_the_computed_one_for_exactly_equal_arguments(x: np.ndarray, seed: int, changed: int) -> None:
    memo = ReferenceMemo(min_bytes=SMALL)
    p = {"w": np.random.default_rng(seed).normal(size=(x.shape[1], 2))}
    calls = []

    def ask(*args: object) -> tuple[np.ndarray, float]:
        return memo.call(weights, {}, args, {}, lambda: calls.append(args) or weights(*args))

    first = ask(x, p)
    first[0][...] = -1.0  # a caller that writes into its answer
    again = ask(x.copy(), {"w": p["w"].copy()})
    assert len(calls) == 1, "equal arguments are answered from the memo"
    np.testing.assert_array_equal(again[0], weights(x, p)[0])
    assert again[1] == weights(x, p)[1]
    again[0][...] = -2.0
    np.testing.assert_array_equal(ask(x, p)[0], weights(x, p)[0])
    other = x.copy()
    other.flat[changed % other.size] += 1.0
    for args in ((other, p), (x.astype(np.float32), p), (x, {"w": p["w"].astype(np.float32)})):
        got = ask(*args)
        np.testing.assert_array_equal(got[0], weights(*args)[0])
        assert got[0].dtype == weights(*args)[0].dtype
    assert len(calls) == 4, "other values or dtypes are other questions"


@substitutable
def scores(x: np.ndarray) -> np.ndarray:
    return x.sum(axis=1)


@substitutable
def normalised(x: np.ndarray) -> np.ndarray:
    s = scores(x)
    return s / np.abs(s).sum()


def test_a_variant_standing_in_inside_a_call_is_part_of_what_is_asked() -> None:
    """The same call to ``normalised`` with a variant in place of ``scores`` inside it is another question."""
    x = np.random.default_rng(1).normal(size=(400_000, 3))  # above the process memo's threshold
    plain = normalised(x)
    variant = Variant("q1.max", "q1", "max", "", replaces=scores, function=lambda x: x.max(axis=1))
    with substituted(variant):
        swapped = normalised(x)
    np.testing.assert_allclose(swapped, x.max(axis=1) / np.abs(x.max(axis=1)).sum())
    np.testing.assert_array_equal(normalised(x), plain)
    assert not np.allclose(plain, swapped)


def test_small_calls_are_computed_and_the_memo_keeps_at_most_its_bytes() -> None:
    memo = ReferenceMemo(min_bytes=1000, max_bytes=3 * 8 * 200)
    computed = []

    def ask(x: np.ndarray) -> np.ndarray:
        return memo.call(np.cumsum, {}, (x,), {}, lambda: computed.append(1) or np.cumsum(x))

    tiny = np.arange(10.0)
    ask(tiny), ask(tiny)
    assert len(computed) == 2, "a call below min_bytes is not kept"
    big = [np.full(200, float(i)) for i in range(5)]
    for x in big:
        ask(x)
    assert memo._bytes <= memo.max_bytes
    ask(big[-1])
    assert len(computed) == 7, "the most recent answer is kept"
    ask(big[0])
    assert len(computed) == 8, "the oldest answer went to keep the memo within its bytes"
    # The same bytes as another dtype or shape are another question.
    for same_bytes in (big[0].view(np.int64), big[0].reshape(20, 10)):
        np.testing.assert_array_equal(ask(same_bytes), np.cumsum(same_bytes))
    assert len(computed) == 10


@settings(max_examples=80, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64]), hnp.array_shapes(max_dims=3, max_side=12),
                  elements={"allow_nan": False, "allow_infinity": False, "min_value": -1e6, "max_value": 1e6}))
def test_array_text_shows_the_first_entries_rounded(array: np.ndarray) -> None:
    text = array_text(array, max_entries=20)
    flat = array.ravel()[:20]
    values = (np.round(flat.astype(np.float64), 4) + 0.0) if array.dtype.kind == "f" else flat
    if array.size <= 20:
        assert text == repr((np.round(array.astype(np.float64), 4) + 0.0).tolist() if array.dtype.kind == "f"
                            else array.tolist())
    else:
        assert text == "[" + ", ".join(map(repr, values.tolist())) + f", ... {array.size} entries in all]"
