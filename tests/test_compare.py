"""Each way an answer can be wrong has its own message, in a fixed order; hidden-check hints carry no numbers."""

from __future__ import annotations

import numpy as np
import pytest

from grader.check.compare import compare_tensor
from grader.execute.arguments import Returned

EXPECTED = np.array([[0.25, 0.75, 0.0], [0.5, 0.5, 0.0]])


def tensor(array: np.ndarray, type_name: str = "torch.Tensor", dtype: str = "float32") -> Returned:
    array = np.asarray(array)
    return Returned("tensor", type_name, dtype=dtype, shape=array.shape, array=array)


def test_equal_within_float32_tolerance_passes() -> None:
    assert compare_tensor("w", tensor(EXPECTED.astype(np.float32) * (1 + 1e-6)), EXPECTED) is None


@pytest.mark.parametrize(("got", "category", "message"), [
    (None, "missing", "w is missing"),
    (Returned("sequence", "list", length=2), "type", "w should be a torch.Tensor, but it is a list of 2 items"),
    (Returned("ndarray", "numpy.ndarray", dtype="float64", shape=(2, 3), array=EXPECTED), "type", "NumPy array"),
    (Returned("tensor_subclass", "evil.Fake"), "type", "a subclass of torch.Tensor; return a plain torch.Tensor"),
    (tensor(EXPECTED.T), "shape", "w has shape (3, 2), expected (2, 3)"),
    (tensor(np.ones((2, 3), dtype=np.int64), dtype="int64"), "dtype", "dtype int64; expected a floating-point"),
    (tensor(np.where(EXPECTED > 0.6, np.nan, EXPECTED)), "nonfinite", "1 non-finite value where the reference is "
                                                                      "finite (NaN at [0, 1])"),
    (tensor(EXPECTED + np.array([[0, 0, 0.2], [0, 0, 0]])), "values",
     "differs from the reference in 1 of 6 entries (17%): largest error 0.2 at [0, 2] (got 0.2, expected 0)"),
])
def test_mismatch_categories(got: Returned | None, category: str, message: str) -> None:
    mismatch = compare_tensor("w", got, EXPECTED)
    assert mismatch is not None
    assert mismatch.category == category
    assert message in mismatch.message


def test_hidden_hint_reveals_no_values_or_shapes() -> None:
    wrong = compare_tensor("w", tensor(EXPECTED + 0.1), EXPECTED)
    assert wrong is not None and wrong.hint == "w differs from the reference in 100% of entries"
    shaped = compare_tensor("w", tensor(EXPECTED.T), EXPECTED)
    assert shaped is not None and shaped.hint.startswith("w has the wrong shape")
    assert not any(character.isdigit() for character in shaped.hint), shaped.hint
