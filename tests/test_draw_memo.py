"""A check's kept draws (``CheckContext.kept_draw``, grader/check/draw_memo.py): the same inputs as drawing them, for
every student, the generator left as drawing leaves it, and nothing a check can change for the next student."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.check.draw_memo import DrawMemo
from grader.check.reference_memo import ReferenceMemo
from grader.check.student import _fingerprint
from grader.execute import arguments
from grader.execute.arguments import SENT_AS_IS_BYTES, Arg, blob_digest, sent_as_is


def big_inputs(rng: np.random.Generator, n: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(size=(n, width)), rng.normal(size=(n, 2)).astype(np.float32)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), before=st.integers(0, 3), n=st.integers(1, 40), width=st.integers(1, 6),
       students=st.integers(2, 4))
def test_a_kept_draw_gives_every_student_what_drawing_gives_and_leaves_the_generator_alike(
        seed: int, before: int, n: int, width: int, students: int) -> None:
    memo = DrawMemo()
    plain = np.random.default_rng(seed)
    plain.normal(size=before)
    expected, expected_next = big_inputs(plain, n, width), plain.normal(size=3)
    for _ in range(students):  # each student's check: the same seed, the same draws before
        rng = np.random.default_rng(seed)
        rng.normal(size=before)
        drawn = memo.draw(rng, big_inputs, (n, width))
        for got, want in zip(drawn, expected):
            np.testing.assert_array_equal(got, want)
            assert got.dtype == want.dtype
        np.testing.assert_array_equal(rng.normal(size=3), expected_next)


def test_a_kept_draw_is_drawn_once_and_cannot_be_changed_by_a_check() -> None:
    calls = []

    def counted(rng: np.random.Generator, n: int) -> tuple[np.ndarray]:
        calls.append(n)
        return (rng.normal(size=n),)

    memo = DrawMemo()
    first, = memo.draw(np.random.default_rng(7), counted, (5,))
    again, = memo.draw(np.random.default_rng(7), counted, (5,))
    other, = memo.draw(np.random.default_rng(8), counted, (5,))
    assert calls == [5, 5] and again is first and not np.array_equal(other, first)
    with pytest.raises(ValueError):
        first[0] = 0.0


def test_a_kept_draw_gives_the_references_memo_the_key_its_values_give() -> None:
    """A kept array is digested once; its key is the key of equal values passed as a fresh array."""
    computed = []

    def reference(x: np.ndarray) -> float:
        computed.append(1)
        return float(x.sum())

    kept, = DrawMemo().draw(np.random.default_rng(3), lambda rng: (rng.normal(size=1 << 18),), ())
    memo = ReferenceMemo()
    answers = [memo.call(reference, {}, (array,), {}, lambda array=array: reference(array))
               for array in (kept, kept.copy(), kept)]
    assert len(computed) == 1 and len(set(answers)) == 1



def sent(array: np.ndarray) -> bytes:
    """The blob a call passing ``array`` as a tensor sends."""
    blobs: list[bytes] = []
    Arg.tensor(array).encode(blobs)
    return blobs[0]


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1 << 15, 1 << 16),
       dtype=st.sampled_from(["float32", "float64"]))
def test_a_large_kept_draw_is_sent_as_encoded_once_and_asks_what_equal_values_ask(seed: int, rows: int,
                                                                                   dtype: str) -> None:
    """Each call passing a kept draw of a megabyte or more sends the same encoded bytes, digested once; a request's
    fingerprint (what a diagnosis's replay matches on) is what the same values, freshly drawn, give."""
    def keys(rng: np.random.Generator) -> tuple[np.ndarray]:
        return (rng.normal(size=(rows, 8)).astype(dtype),)

    kept, = DrawMemo().draw(np.random.default_rng(seed), keys, ())
    fresh, = keys(np.random.default_rng(seed))
    assert kept.nbytes >= SENT_AS_IS_BYTES and not kept.flags.writeable
    np.testing.assert_array_equal(kept, fresh)
    first, again, equal = sent(kept), sent(kept), sent(fresh)
    assert first is again and equal is not first and equal == first
    header = {"op": "call", "name": "chunked_additive_attention"}
    assert _fingerprint(header, [first]) == _fingerprint(header, [equal])
    other = fresh.copy()
    other[-1, -1] += 1
    assert _fingerprint(header, [first]) != _fingerprint(header, [sent(other)])


def test_an_array_sent_as_is_is_forgotten_with_it() -> None:
    before = len(arguments._SENT_AS_IS)
    kept = sent_as_is(np.ones(SENT_AS_IS_BYTES // 8))
    blob = sent(kept)
    assert len(arguments._SENT_AS_IS) == before + 1 and blob_digest(blob) == blob_digest(bytes(bytearray(blob)))
    del kept, blob
    gc.collect()
    assert len(arguments._SENT_AS_IS) == before and not arguments._DIGESTS.keys() - {id(b) for _, b in
                                                                                    arguments._SENT_AS_IS.values()}
