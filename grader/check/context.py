"""What a check function receives: the student's code, a seeded generator, and expectations that fail it.

Besides passing or failing, a check leaves material for the reports: heatmaps of attention weights (the student's
beside the reference's), a cell-by-cell table for a small tensor that differs, and a trace of the calls it made and
the values it expected (shown to the instructor only).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from grader.check.array_text import array_text
from grader.check.compare import compare_tensor, largest_error
from grader.check.draw_memo import DRAWS
from grader.check.shapes import same_entries
from grader.check.student import StudentCode
from grader.errors import ConfigurationError, WrongAnswer
from grader.execute.arguments import Returned
from grader.results import Heatmap, TensorDiff

HEATMAP_ITEMS = 2  # batch items drawn per tensor of attention weights
HEATMAP_MAX_SIDE = 32  # larger matrices are drawn in part: a window around the largest error, else the top-left
DIFF_MAX_ENTRIES = 64  # tensors up to this size get a table of their entries when they differ
ATTENTION_AXES = ("Keys", "Queries")


def _rows(matrix: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(round(float(v), 6) for v in row) for row in matrix)


def window_span(length: int, at: int | None, limit: int = HEATMAP_MAX_SIDE) -> tuple[int, int]:
    """The (start, stop) of the part of an axis of ``length`` entries a heatmap draws: all of it when it fits in
    ``limit``, else ``limit`` entries centred on ``at`` (moved inside the axis at its ends), or the first ones."""
    if length <= limit:
        return 0, length
    start = 0 if at is None else min(max(at - limit // 2, 0), length - limit)
    return start, start + limit


def heatmap_window(shape: tuple[int, int], focus: tuple[int, int] | None,
                   limit: int = HEATMAP_MAX_SIDE) -> tuple[tuple[int, int], tuple[int, int]]:
    """The rows and the columns (each a (start, stop)) a heatmap of a matrix of ``shape`` draws: around ``focus``
    (the largest error) where the matrix is larger than ``limit`` a side."""
    return (window_span(shape[0], focus[0] if focus else None, limit),
            window_span(shape[1], focus[1] if focus else None, limit))


def item_name(leading: tuple[int, ...], item: int) -> str:
    """Which matrix of a tensor of attention weights item ``item`` is, its axes before the last two (``leading``)
    flattened: "batch 1" for (batch, queries, keys), "batch 1, head 0" for (batch, heads, queries, keys)."""
    index = [int(i) for i in np.unravel_index(item, leading)]
    if len(index) > 2:
        return f"batch {index[0]}, head {index[1]}, item [{', '.join(map(str, index[2:]))}]"
    return ", ".join(f"{name} {i}" for name, i in zip(("batch", "head"), index))


def _heatmap(title: str, axes: tuple[str, str], reference: np.ndarray, student: np.ndarray | None,
             focus: tuple[int, ...] | None, *, reference_title: str = "Reference", xticks: tuple[str, ...] = (),
             yticks: tuple[str, ...] = ()) -> Heatmap:
    """One (rows, columns) matrix as a Heatmap: the student's and the reference's drawn over the same window."""
    n_rows, n_cols = reference.shape
    (r0, r1), (c0, c1) = heatmap_window((n_rows, n_cols), (focus[-2], focus[-1]) if focus else None)
    whole = (r0, r1, c0, c1) == (0, n_rows, 0, n_cols)
    return Heatmap(title, *axes, _rows(reference[r0:r1, c0:c1]),
                   _rows(student[r0:r1, c0:c1]) if student is not None else None, reference_title,
                   tuple(xticks[c0:c1]), tuple(yticks[r0:r1]), row_start=r0, col_start=c0,
                   full_shape=() if whole else (int(n_rows), int(n_cols)),
                   focus=() if whole or not focus else (focus[-2], focus[-1]))


def describe_array(array: np.ndarray, limit: int = 600) -> str:
    """'float64 (2, 2, 4): [[...]]' cut to ``limit`` characters, for the instructor's trace."""
    text = array_text(np.asarray(array), max_entries=200)
    text = f"{array.dtype} {tuple(array.shape)}: {text}"
    return text if len(text) <= limit else text[:limit] + " ..."


T = TypeVar("T")


class CheckContext:
    def __init__(self, *, student: StudentCode, seed: int, forced: Mapping[str, int] | None = None) -> None:
        self.student = student
        student.start_check()  # the trace and the replies are this check's: earlier checks logged theirs
        self.met = 0  # expectations met so far
        # Where each expectation was tried, in order (the check's file and line), and the index of the first that
        # failed: a replay with a known-wrong variant names it only if it meets that very expectation (diagnose.py).
        self.points: list[str] = []
        self.failed_at: int | None = None
        # Expectations whose answer had axes of size 1 too many or too few, and no other difference: its index ->
        # whether the answer, read in the expected shape, equals the expected (a replay is matched on that reading,
        # diagnose.py).
        self.read: dict[int, bool] = {}
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        # Sizes the runner imposes when it looks for a smaller failing case, and the sizes this run used.
        self.forced = dict(forced or {})
        self.drawn: dict[str, int] = {}
        self.named: dict[str, int] = {}  # a fixed case's sizes by name (name_sizes): for messages only, never shrunk
        self.minimum: dict[str, int] = {}  # the smallest each size may be, for the smaller failing cases
        self.steps: dict[str, int] = {}  # and the step between its values, where it is not 1 (a (low, high, step))
        self.heatmaps: list[Heatmap] = []
        self.diff: TensorDiff | None = None
        self.tables: list[TensorDiff] = []
        self.notes: list[str] = []
        self.expected: list[str] = []

    @property
    def trace(self) -> tuple[str, ...]:
        return (*self.student.calls, *self.expected)

    @property
    def known_sizes(self) -> dict[str, int]:
        """The check's sizes by name: those drawn (``sizes``), and those named (``name_sizes``)."""
        return {**self.drawn, **self.named}

    def kept_draw(self, draw: Callable[..., T], *args: Hashable) -> T:
        """``draw(self.rng, *args)``, kept for the grading process: a later call from the same state of the
        generator (another student's, a diagnosis's replay) gets the same read-only arrays and leaves the generator
        where the draw left it (draw_memo.py). For a public check's large inputs (a megabyte and more), which every
        student gets: ``draw`` a module-level function returning an array or a tuple of arrays."""
        return DRAWS.draw(self.rng, draw, args)

    def name_sizes(self, **sizes: int) -> None:
        """Name the sizes of the inputs this check passes (``batch=2, queries=1``), so that an answer of another
        shape, or code that fails on a shape, is told which size is which. Unlike ``sizes``, nothing is drawn or
        shrunk: name a fixed case's sizes here, and a random case's that ``sizes`` does not draw by that name."""
        self.named.update({name: int(size) for name, size in sizes.items()})
        self.student.sizes = self.known_sizes

    def sizes(self, *, distinct: Sequence[str] | Sequence[Sequence[str]] = (),
              **dimensions: tuple[int, int] | tuple[int, int, int] | int) -> tuple[int, ...]:
        """The check's sizes, by name: a (low, high) pair is drawn from ``ctx.rng`` as ``int(rng.integers(low,
        high))`` would draw it (low included, high not), in the order given; a (low, high, step) triple draws one of
        ``range(low, high, step)``, each as likely (``hiddens=(2, 33, 2)``: an even size from 2 to 32, for code that
        splits it in halves); a plain int is a fixed size. When the check fails on values, the runner runs it again
        with smaller sizes forced (down to the range's low, or 1 for a fixed size, and on a triple's steps only) to
        find the smallest that still fails, so name every size the inputs depend on, and only those (``batch=(2, 5),
        keys=(2, 10)``). ``distinct``: names of sizes that must differ from one another (query, key and value sizes,
        where code that confuses them would still run on equal ones), or several such groups; each that equals one
        before it in its group moves to the nearest free size in its range, upwards first, so that every student's
        draw tells them apart."""
        sizes: dict[str, int] = {}
        bounds: dict[str, tuple[int, int, int]] = {}
        for name, dimension in dimensions.items():
            if name in self.drawn:
                raise ConfigurationError(f"the size {name!r} is drawn twice in one check")
            if isinstance(dimension, tuple) and len(dimension) == 3:
                low, high, step = dimension
                sizes[name], bounds[name] = self._stepped(name, low, high, step)
                continue
            if isinstance(dimension, tuple):
                low, high = dimension
                # Drawn even when forced, so the values drawn after it come from the same place in the stream.
                size = int(self.rng.integers(low, high))
                floor, ceiling = max(1, low), high - 1
            else:
                size = ceiling = int(dimension)
                floor = 1
            if name in self.forced:  # clamped: a range may depend on a size forced smaller (a chunk of n keys)
                size = max(floor, min(self.forced[name], ceiling))
            sizes[name], bounds[name] = size, (floor, ceiling, 1)
        groups = [distinct] if distinct and isinstance(distinct[0], str) else distinct
        for group in groups:
            unknown = sorted(set(group) - set(sizes))
            if unknown:
                raise ConfigurationError(f"distinct names sizes this call does not draw: {unknown}")
            used: list[int] = []
            for name in group:
                floor, ceiling, step = bounds[name]
                if sizes[name] in used:
                    free = [v for v in [*range(sizes[name], ceiling + 1, step),
                                        *range(sizes[name] - step, floor - 1, -step)] if v not in used]
                    sizes[name] = free[0] if free else sizes[name]
                used.append(sizes[name])
        self.drawn.update(sizes)
        self.student.sizes = self.known_sizes
        self.minimum.update({name: floor for name, (floor, _, _) in bounds.items()})
        self.steps.update({name: step for name, (_, _, step) in bounds.items() if step > 1})
        return tuple(sizes.values())

    def _stepped(self, name: str, low: int, high: int, step: int) -> tuple[int, tuple[int, int, int]]:
        """A (low, high, step) size: one of range(low, high, step), drawn as ``low + step * rng.integers(0,
        count)``; forced sizes are clamped to the range and rounded down to a step (up to the first one at least
        1). Returns the size and its (floor, ceiling, step)."""
        if step < 1:
            raise ConfigurationError(f"the size {name!r} has step {step}; a step is at least 1")
        values = range(low, high, step)
        if not values:
            raise ConfigurationError(f"the size {name!r} has no value in range({low}, {high}, {step})")
        size = low + step * int(self.rng.integers(0, len(values)))  # drawn even when forced, as for a pair
        floor = low if low >= 1 else low + step * -(-(1 - low) // step)  # the first step at least 1
        ceiling = values[-1]
        if name in self.forced:
            size = max(floor, min(self.forced[name], ceiling))
            size = max(floor, low + (size - low) // step * step)
        return size, (floor, max(floor, ceiling), step)

    def expect_tensor(self, label: str, got: Returned | None, expected: np.ndarray, *,
                      rtol: float = 1e-4, atol: float = 1e-5, attention: bool | tuple[str, str] = False,
                      numpy: bool = False, show: bool = False, axes: Sequence[str] | None = None) -> np.ndarray:
        """Fail unless ``got`` is a plain tensor equal to ``expected``; return the student's array.

        ``attention``: the tensor holds attention weights, drawn as heatmaps: (..., queries, keys), or one row of
        weights over the keys; a pair of axis labels (x, y) replaces ("Keys", "Queries"), e.g. ("Keys", "Heads").
        ``numpy``: a NumPy array is the answer asked for. ``show``: the report shows the answer beside the
        reference's entry by entry whatever the outcome (a hand-computed answer to check one's working against).
        ``axes``: the names of ``expected``'s axes, as the check names its sizes (("batch", "queries",
        "value_size")): an answer of another shape is then told axis by axis.
        """
        expected = np.asarray(expected)
        self._tried()
        self.expected.append(f"expected {label}: {describe_array(expected)}")
        if attention:
            self._draw(label, got, expected, attention if isinstance(attention, tuple) else ATTENTION_AXES,
                       rtol=rtol, atol=atol)
        mismatch = compare_tensor(label, got, expected, rtol=rtol, atol=atol, numpy=numpy, axes=axes,
                                  sizes=self.known_sizes)
        if mismatch is not None and mismatch.read is not None:
            self.read[len(self.points) - 1] = mismatch.read
        shape_ok = got is not None and got.array is not None and got.shape == expected.shape
        if show and shape_ok and expected.size <= DIFF_MAX_ENTRIES:
            assert got is not None and got.array is not None
            self.tables.append(_table(label, got.array, expected, rtol=rtol, atol=atol))
        if mismatch is not None:
            if mismatch.category in ("values", "nonfinite") and shape_ok and not show:
                assert got is not None and got.array is not None
                self._tabulate(label, got.array, expected, rtol=rtol, atol=atol)
            self._failed()
            raise WrongAnswer(mismatch.message, hint=mismatch.hint, values=mismatch.category in ("values", "nonfinite"))
        assert got is not None and got.array is not None
        self.met += 1
        return got.array

    def draw(self, title: str, student: np.ndarray | None, reference: np.ndarray, *,
             axes: tuple[str, str] = ATTENTION_AXES, reference_title: str = "Reference",
             xticks: tuple[str, ...] = (), yticks: tuple[str, ...] = ()) -> None:
        """One heatmap of a (queries, keys) matrix: the student's beside ``reference`` (computed weights, or a
        pattern such as the ideal alignment, named by ``reference_title``)."""
        reference = np.asarray(reference, dtype=np.float64)
        shown = student.astype(np.float64) if student is not None and student.shape == reference.shape else None
        # A large matrix is drawn around the largest error, where the reference is the computed answer (not a
        # pattern such as the ideal alignment, which every answer differs from).
        focus = largest_error(shown, reference) if shown is not None and reference_title == "Reference" else None
        self.heatmaps.append(_heatmap(title, axes, reference, shown, focus, reference_title=reference_title,
                                      xticks=tuple(xticks), yticks=tuple(yticks)))

    def expect_kept(self, label: str, got: Returned | None, expected: np.ndarray, *, asked_in: str,
                    **compare: Any) -> np.ndarray | None:
        """``expect_tensor`` for an answer this check reads besides the one it grades, which another check asks for
        (the attention weights a forward keeps, read where the output is graded): a wrong one fails here too, but a
        missing one costs points only in the check that asks for it (``asked_in``, its title), noted here."""
        if got is None:
            self.note(f"{label} is not kept: that costs points only in \"{asked_in}\"; this check grades the rest.")
            return None
        return self.expect_tensor(label, got, expected, **compare)

    def note(self, text: str) -> None:
        """A line the report shows under the check whatever its outcome (a measured figure, say)."""
        self.notes.append(text)

    def expect(self, condition: bool, message: str, *, hint: str | None = None,
               misconception: str | None = None) -> None:
        """Fail with ``message`` unless ``condition``; ``misconception`` names the known mistake (the id of one of
        the assignment's variants, e.g. "q1.bias_present") when the failure itself identifies it."""
        self._tried()
        if not condition:
            self._failed()
            raise WrongAnswer(message, hint=hint or message, misconception=misconception)
        self.met += 1

    def _tried(self) -> None:
        """Note where the check tries an expectation: the first frame outside this file (expect_sequence calls
        expect), as "file:line"."""
        frame = sys._getframe(2)
        while frame.f_back is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        self.points.append(f"{frame.f_code.co_filename}:{frame.f_lineno}")

    def _failed(self) -> None:
        if self.failed_at is None:
            self.failed_at = len(self.points) - 1

    def expect_sequence(self, label: str, got: Returned, names: Sequence[str],
                        expected: Sequence[np.ndarray] | None = None, **compare: Any) -> tuple[Returned, ...]:
        """Fail unless ``got`` is a tuple or list of exactly ``len(names)`` values; return them, to check each in
        turn. ``label`` says what returned it ("AdditiveAttention", "the harness"), ``names`` what each value is
        ("weighted_sum", "attention_weights"), for the message. With the ``expected`` values (and ``compare``, as
        ``expect_tensor`` takes them), a sequence of another length is told which of its values are already right.

        The check is the unit of points: returning some of the values, right, earns nothing of it; the message says
        which are right so that the fix is only to return the rest."""
        wanted = f"{'a pair' if len(names) == 2 else f'{len(names)} values'} ({', '.join(names)})"
        right = ""
        if got.kind == "sequence" and got.length != len(names) and expected is not None:
            matched = [name for item in got.items for name, value in zip(names, expected)
                       if compare_tensor(name, item, np.asarray(value), **compare) is None]
            if matched:
                right = f"; the values it returned are right for {', '.join(dict.fromkeys(matched))}: return " \
                        f"all {len(names)}, in that order (the check's points come with the whole answer)"
        self.expect(got.kind == "sequence" and got.length == len(names),
                    f"{label} should return {wanted}, but returned {got.describe()}{right}",
                    hint=f"{label} does not return {wanted}")
        return got.items

    def _draw(self, label: str, got: Returned | None, expected: np.ndarray, axes: tuple[str, str], *,
              rtol: float, atol: float) -> None:
        if expected.ndim == 0:
            return
        reference = expected.reshape(-1, *expected.shape[-2:]) if expected.ndim > 1 else expected.reshape(1, 1, -1)
        student = None
        if got is not None and (got.is_tensor or got.kind == "ndarray") and got.array is not None \
                and (got.shape == expected.shape or same_entries(tuple(got.shape or ()), expected.shape)):
            # An extra or missing axis of size 1: the same entries, drawn as the expected shape
            student = got.array.astype(np.float64).reshape(reference.shape)
        for item in range(min(HEATMAP_ITEMS, reference.shape[0])):
            title = f"{label}, {item_name(expected.shape[:-2], item)}" if expected.ndim > 2 else label
            focus = largest_error(student[item], reference[item], rtol=rtol, atol=atol) \
                if student is not None else None
            self.heatmaps.append(_heatmap(title, axes, reference[item], student[item] if student is not None else None,
                                          focus))

    def _tabulate(self, label: str, got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> None:
        if self.diff is not None or expected.size > DIFF_MAX_ENTRIES or got.shape != expected.shape:
            return
        self.diff = _table(label, got, expected, rtol=rtol, atol=atol)


def _table(label: str, got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> TensorDiff:
    actual, wanted = got.astype(np.float64).ravel(), expected.astype(np.float64).ravel()
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(actual - wanted) <= atol + rtol * np.abs(wanted))
    return TensorDiff(label, tuple(int(n) for n in expected.shape), tuple(float(v) for v in wanted),
                      tuple(float(v) for v in actual), tuple(int(i) for i in np.flatnonzero(bad)))
