"""What an answer of another shape than the reference's shows, said axis by axis from the answer itself.

A shape message alone ("has shape (2, 2, 4), expected (2, 1, 4)") leaves the student to guess, and stops the check
before any value is compared, so a mistake in the values stays hidden behind it. Here the answer is read in the
expected shape where its shape allows it, and a cause is said only where the values bear it out:

- axes of size 1 added or removed (an extra ``(n, 1)`` column, a ``.squeeze()`` too many): the same entries in the
  same order, so the answer is compared as the expected shape, and whether its values are right is said either way (the
  diagnosis replays this reading, diagnose.py);
- one axis has n entries where 1 is expected, n being another axis's size: broadcast along it, which is said only
  when the diagonal (entry [k, k] along the two axes) is the expected answer;
- the same sizes in another order: transposed, said only when reordering the axes gives the expected answer;
- otherwise each axis that differs, with the names of the check's sizes it equals (``CheckContext.sizes`` and
  ``name_sizes``), and no cause.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MAX_PERMUTED_AXES = 4  # beyond this, 120+ orders to try: transposition is not looked for


@dataclass(frozen=True)
class ShapeStory:
    told: str  # follows "has shape X, expected Y": the axes' names, and what the answer shows (with sizes)
    hint: str  # what the answer shows without sizes, for a hidden check ("" when nothing is said)
    # The answer in the expected shape when axes of size 1 were added or removed (the same entries in the same
    # order), for the caller to compare: what its values show is said whatever they are.
    reading: np.ndarray | None = None


def _word(name: str) -> str:
    return name.replace("_", " ")


def _where(axes: Sequence[str] | None, k: int, size: int) -> str:
    """'where the queries axis has 1', or without names 'where 1 is expected'."""
    return f"where the {_word(axes[k])} axis has {size}" if axes else f"where {size} is expected"


def _floats(array: np.ndarray | None) -> np.ndarray | None:
    return array.astype(np.float64) if array is not None and array.dtype.kind in "biuf" else None


def _equal(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(actual - expected) <= atol + rtol * np.abs(expected)))


def same_entries(got: tuple[int, ...], expected: tuple[int, ...]) -> bool:
    """Whether one shape is the other with axes of size 1 added (or only removed): the same entries in the same
    order, each where it belongs. Not a size-1 axis moved: (2, 10, 1) for (2, 1, 10) has its keys in the queries'
    place, and read as (2, 1, 10) every weight of a softmax over that one query would look like a softmax over the
    queries."""
    if got == expected or len(got) == len(expected):
        return False
    short, long = (got, expected) if len(got) < len(expected) else (expected, got)
    rest = iter(long)
    if not all(any(n == m for m in rest) for n in short):  # short is a subsequence of long
        return False
    return sorted(long) == sorted([*short, *[1] * (len(long) - len(short))])


def _ones(got: tuple[int, ...], expected: tuple[int, ...], axes: Sequence[str] | None) -> str:
    """What a shape that is the expected one with axes of size 1 added or removed (same_entries) shows."""
    extra = got.count(1) - expected.count(1)
    if extra > 0:
        return "it has an extra axis of size 1" if extra == 1 else f"it has {extra} extra axes of size 1"
    ones = [k for k, n in enumerate(expected) if n == 1]
    start = "it is 0-d, with" if not got else "it has"
    if axes and len(ones) == -extra:
        names = " and ".join(_word(axes[k]) for k in ones)
        return f"{start} no {names} ax{'is' if len(ones) == 1 else 'es'} (of size 1)"
    return f"{start} one axis of size 1 too few" if extra == -1 else f"{start} {-extra} axes of size 1 too few"


def diagonal(actual: np.ndarray, along: int, by: int) -> np.ndarray:
    """``actual`` with axis ``along`` (as long as axis ``by``) reduced to size 1 by taking entry [k, k] of the two."""
    moved = np.moveaxis(actual, (by, along), (0, 1))
    index = np.arange(moved.shape[0])
    return np.moveaxis(moved[index, index][:, None], (0, 1), (by, along))


def _broadcast(actual: np.ndarray, expected: np.ndarray, axes: Sequence[str] | None, rtol: float,
               atol: float) -> tuple[str, str] | None:
    """(told, hint) when one axis has another axis's n entries where 1 is expected and the diagonal of the two is the
    expected answer: what lies along that axis is indexed as the other is."""
    if actual.ndim != expected.ndim:
        return None
    differ = [k for k in range(actual.ndim) if actual.shape[k] != expected.shape[k]]
    if len(differ) != 1 or expected.shape[differ[0]] != 1:
        return None
    along = differ[0]
    for by in range(actual.ndim):
        if by == along or expected.shape[by] != actual.shape[along]:
            continue
        if not _equal(diagonal(actual, along, by), expected, rtol, atol):
            continue
        entry = "[" + ", ".join("k" if p in (along, by) else ":" for p in range(actual.ndim)) + "]"
        wanted = "[" + ", ".join("k" if p == by else "0" if p == along else ":" for p in range(actual.ndim)) + "]"
        if axes:
            what, where = f"the {_word(axes[by])}", f"the {_word(axes[along])} axis"
            owner = _word(axes[by]) + ("'" if axes[by].endswith("s") else "'s")
            entries = f"the {owner} {actual.shape[along]} entries"
        else:
            what, where = f"axis {by}", f"axis {along}"
            entries = f"{actual.shape[along]} entries"
        cause = f"something indexed by {what} was broadcast along {where}"
        told = (f"its axis {along} has {entries} {_where(axes, along, 1)} ({entry} is the expected {wanted} for "
                f"each k): {cause}")
        return told, cause
    return None


def _transposed(actual: np.ndarray, expected: np.ndarray, axes: Sequence[str] | None, rtol: float,
                atol: float) -> tuple[str, str] | None:
    """(told, hint) when reordering the answer's axes gives the expected answer."""
    if actual.ndim != expected.ndim or not 2 <= actual.ndim <= MAX_PERMUTED_AXES \
            or sorted(actual.shape) != sorted(expected.shape):
        return None
    for order in itertools.permutations(range(actual.ndim)):
        if tuple(actual.shape[p] for p in order) != expected.shape or order == tuple(range(actual.ndim)):
            continue
        if _equal(actual.transpose(order), expected, rtol, atol):
            reads = f"({', '.join(_word(axes[order.index(p)]) for p in range(actual.ndim))})" if axes \
                else "in another order"
            return (f"its axes are {reads}: put in the order {tuple(order)}, it is the expected answer",
                    "its axes are in another order; reordered, it is right")
    return None


def _sizes_named(size: int, sizes: Mapping[str, int]) -> str:
    names = [_word(name) for name, value in sizes.items() if value == size]
    if not names:
        return ""
    return f" ({names[0]})" if len(names) == 1 else f" ({', '.join(names[:-1])} or {names[-1]})"


def _axes_that_differ(got: tuple[int, ...], expected: tuple[int, ...], axes: Sequence[str] | None,
                      sizes: Mapping[str, int]) -> str:
    if len(got) != len(expected):
        said = f"it has {len(got)} ax{'is' if len(got) == 1 else 'es'}, not {len(expected)}"
        names = [[name for name, value in sizes.items() if value == n] for n in got]
        if got and all(len(found) == 1 for found in names):
            said += f", with the sizes of ({', '.join(_word(found[0]) for found in names)})"
        return said
    return "; ".join(f"its axis {k} has size {got[k]}{_sizes_named(got[k], sizes)} {_where(axes, k, expected[k])}"
                     for k in range(len(got)) if got[k] != expected[k])


def explain_shape(actual: np.ndarray | None, got: tuple[int, ...], expected: np.ndarray, *,
                  axes: Sequence[str] | None = None, sizes: Mapping[str, int] | None = None,
                  rtol: float = 1e-4, atol: float = 1e-5) -> ShapeStory:
    """What an answer of shape ``got`` (its entries ``actual``, when they can be read) shows against ``expected``,
    whose axes ``axes`` names (("batch", "queries", "value_size")); ``sizes`` are the check's sizes by name, for
    saying which one an axis has."""
    if axes is not None and len(axes) != expected.ndim:
        axes = None  # a check's slip: no names rather than wrong ones
    named = f" for ({', '.join(_word(a) for a in axes)})" if axes else ""
    values = _floats(actual)
    wanted = expected.astype(np.float64)
    if same_entries(got, expected.shape):
        said = _ones(got, expected.shape, axes)
        reading = values.reshape(expected.shape) if values is not None else None
        return ShapeStory(f"{named}: {said}", said, reading)
    if values is not None and values.size and values.shape == got:
        for found in (_broadcast(values, wanted, axes, rtol, atol), _transposed(values, wanted, axes, rtol, atol)):
            if found is not None:
                return ShapeStory(f"{named}: {found[0]}", found[1])
    differ = _axes_that_differ(got, expected.shape, axes, dict(sizes or {}))
    return ShapeStory(f"{named}: {differ}" if differ else named, "")
