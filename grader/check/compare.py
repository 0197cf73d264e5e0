"""Compare what the student returned with the reference, in a fixed order, each failure with its own message.

missing -> wrong type -> wrong shape -> wrong dtype kind -> non-finite values -> values
(the order of PrairieLearn's check_numpy_array_allclose). ``message`` has the numbers; ``hint`` is safe to
show for hidden checks (no inputs, no expected values). A shape that differs is told with what the answer shows
(shapes.py), and an answer off only by axes of size 1 added or removed is compared in the expected shape too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from grader.check.shapes import explain_shape
from grader.execute.arguments import Returned


@dataclass(frozen=True)
class Mismatch:
    category: str  # missing, type, shape, dtype, nonfinite, values
    message: str
    hint: str
    # A shape that is the expected one with axes of size 1 added or removed: whether the answer, read in the
    # expected shape, equals the expected (a known mistake's replay is matched on this reading, diagnose.py); None
    # for any other mismatch.
    read: bool | None = None


def _index(flat: int, shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]" if shape else "[]"


def _errors(actual: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float) -> tuple[np.ndarray, np.ndarray]:
    """Each entry's absolute error (0 where both are NaN or both the same infinity), and whether it is outside
    ``atol + rtol * |expected|``."""
    with np.errstate(invalid="ignore"):
        error = np.abs(actual - expected)
        error[np.isnan(error) & (np.isnan(actual) == np.isnan(expected))] = 0.0
        bad = ~(error <= atol + rtol * np.abs(expected))
    return error, bad


def largest_error(actual: np.ndarray, expected: np.ndarray, *, rtol: float = 1e-4,
                  atol: float = 1e-5) -> tuple[int, ...] | None:
    """The index of the entry a failure message names, for arrays of one shape: the first non-finite value where
    the reference is finite, else the largest error outside the tolerance; None when every entry is within it."""
    actual, expected = actual.astype(np.float64), expected.astype(np.float64)
    bad_finite = ~np.isfinite(actual) & np.isfinite(expected)
    if bad_finite.any():
        flat = int(np.flatnonzero(bad_finite)[0])
    else:
        error, bad = _errors(actual, expected, rtol=rtol, atol=atol)
        if not bad.any():
            return None
        flat = int(np.argmax(np.where(bad, error, -1.0)))
    return tuple(int(i) for i in np.unravel_index(flat, expected.shape))


def compare_tensor(label: str, got: Returned | None, expected: np.ndarray, *,
                   rtol: float = 1e-4, atol: float = 1e-5, numpy: bool = False, axes: Sequence[str] | None = None,
                   sizes: Mapping[str, int] | None = None) -> Mismatch | None:
    """None when ``got`` is a plain torch tensor equal to ``expected`` within ``atol + rtol * |expected|``.

    ``numpy``: the question is answered in NumPy, so a NumPy array is what is asked (a plain tensor passes too).
    ``axes`` names ``expected``'s axes and ``sizes`` the check's sizes, for saying what an answer of another shape
    shows (shapes.py).
    """
    if got is None:
        return Mismatch("missing", f"{label} is missing", f"{label} is missing")
    if numpy and not got.is_tensor and got.kind != "ndarray":
        return Mismatch("type", f"{label} should be a NumPy array, but it is {got.describe()}",
                        f"{label} is not a NumPy array (it is a {got.type_name})")
    if not got.is_tensor and not (numpy and got.kind == "ndarray"):
        if got.kind == "tensor_subclass":
            text = f"{label} is a {got.type_name}, a subclass of torch.Tensor; return a plain torch.Tensor"
        elif got.kind == "ndarray":
            text = f"{label} is a NumPy array; return a torch.Tensor"
        else:
            text = f"{label} should be a torch.Tensor, but it is {got.describe()}"
        hint = f"{label} is not a torch.Tensor (it is a {got.type_name})"
        return Mismatch("type", text, hint)
    if got.shape != expected.shape:
        return _shape_mismatch(label, got, expected, rtol=rtol, atol=atol, axes=axes, sizes=sizes)
    if got.array is None:
        return Mismatch("dtype", f"{label} has dtype {got.dtype}, which the grader cannot compare",
                        f"{label} has dtype {got.dtype}")
    actual = got.array
    if expected.dtype.kind == "f" and actual.dtype.kind != "f":
        text = f"{label} has dtype {got.dtype}; expected a floating-point tensor"
        return Mismatch("dtype", text, text)
    return values_mismatch(label, actual.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=atol)


def _shape_mismatch(label: str, got: Returned, expected: np.ndarray, *, rtol: float, atol: float,
                    axes: Sequence[str] | None, sizes: Mapping[str, int] | None) -> Mismatch:
    story = explain_shape(got.array, tuple(got.shape or ()), expected, axes=axes, sizes=sizes, rtol=rtol, atol=atol)
    message = f"{label} has shape {got.shape}, expected {expected.shape}{story.told}"
    hint = f"{label} has the wrong shape" + (f" ({story.hint})" if story.hint else "")
    if story.reading is None:
        return Mismatch("shape", message, hint)
    wrong = values_mismatch("it", story.reading, expected.astype(np.float64), rtol=rtol, atol=atol)
    if wrong is None:
        return Mismatch("shape", f"{message}; read as {expected.shape}, its values are right",
                        f"{label} has the wrong shape ({story.hint}; read in the expected shape, its values are "
                        "right)", read=True)
    return Mismatch("shape", f"{message}; read as {expected.shape}, {wrong.message}",
                    f"{label} has the wrong shape ({story.hint}; read in the expected shape, its values differ "
                    "too)", read=False)


def values_mismatch(label: str, actual: np.ndarray, expected: np.ndarray, *, rtol: float = 1e-4,
                    atol: float = 1e-5) -> Mismatch | None:
    """Two float64 arrays of one shape: None when equal within ``atol + rtol * |expected|``, else the first of a
    non-finite value where the reference is finite and the values that differ."""
    bad_finite = ~np.isfinite(actual) & np.isfinite(expected)
    if bad_finite.any():
        first = int(np.flatnonzero(bad_finite)[0])
        kind = "NaN" if np.isnan(actual.flat[first]) else "inf"
        count = int(bad_finite.sum())
        return Mismatch("nonfinite",
                        f"{label} has {count} non-finite value{'s' if count > 1 else ''} where the reference is "
                        f"finite ({kind} at {_index(first, expected.shape)})",
                        f"{label} contains NaN or inf")
    error, bad = _errors(actual, expected, rtol=rtol, atol=atol)
    if not bad.any():
        return None
    count, size = int(bad.sum()), expected.size
    worst = int(np.argmax(np.where(bad, error, -1.0)))
    # Relative error only where the reference is not (close to) zero: masked weights are exactly 0.
    sizable = bad & (np.abs(expected) >= 1e-3)
    relative = ""
    if sizable.any():
        relative = f"; largest relative error {float((error[sizable] / np.abs(expected[sizable])).max()):.2g}"
    share = f"{count} of {size} entries ({100 * count / size:.0f}%)"
    return Mismatch(
        "values",
        f"{label} differs from the reference in {share}: largest error {error.flat[worst]:.3g} at "
        f"{_index(worst, expected.shape)} (got {actual.flat[worst]:.4g}, expected {expected.flat[worst]:.4g})"
        f"{relative}",
        f"{label} differs from the reference in {100 * count / size:.0f}% of entries",
    )
