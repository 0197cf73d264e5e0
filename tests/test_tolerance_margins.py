"""Every tensor verdict of the fast sample classes is far from its tolerance bound, so another CPU's rounding
(a few units in float32's last place) cannot flip it (tests/tolerance_margins.py measures all four classes)."""

from __future__ import annotations

import numpy as np
import pytest

from .tolerance_margins import error_ratio, measure

pytestmark = pytest.mark.slow


def test_the_ratio_is_the_worst_entrys_share_of_its_bound() -> None:
    expected = np.array([1.0, 100.0, 0.0])
    got = np.array([1.0 + 1.1e-4, 100.0, 5e-6], dtype=np.float64)
    assert error_ratio(got, expected, rtol=1e-4, atol=1e-5) == pytest.approx(1.1e-4 / 1.1e-4)
    assert error_ratio(expected, expected, rtol=1e-4, atol=1e-5) == 0.0


@pytest.mark.parametrize("assignment", ["attention_scoring", "keras_additive_attention"])
def test_passes_and_failures_are_far_from_the_bound(assignment: str) -> None:
    margins = measure(assignment)["float32"]
    assert margins.compared > 100
    # Measured on an AMD EPYC: the closest pass used 0.05 of its bound, the closest failure exceeded it 200 times.
    assert margins.passed[0] < 0.25, margins.passed
    assert margins.failed[0] > 4, margins.failed
