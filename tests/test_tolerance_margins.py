"""Every tensor verdict of every assignment's sample classes is far from its tolerance bound, so another CPU's
rounding (a few units in float32's last place) cannot flip it (docs/writing-checks.md states the rule: a float32
pass under 25% of its bound, a failure over 4 times it)."""

from __future__ import annotations

import numpy as np
import pytest

from .bundled_classes import BundledClasses
from .conftest import SUBMISSIONS, with_templates
from .tolerance_margins import error_ratio

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_class_runs")]


def test_the_ratio_is_the_worst_entrys_share_of_its_bound() -> None:
    expected = np.array([1.0, 100.0, 0.0])
    got = np.array([1.0 + 1.1e-4, 100.0, 5e-6], dtype=np.float64)
    assert error_ratio(got, expected, rtol=1e-4, atol=1e-5) == pytest.approx(1.1e-4 / 1.1e-4)
    assert error_ratio(expected, expected, rtol=1e-4, atol=1e-5) == 0.0


@pytest.mark.parametrize("assignment", with_templates())  # every assignment, a new one too
def test_passes_and_failures_are_far_from_the_bound(bundled: BundledClasses, assignment: str) -> None:
    margins = bundled.margins(assignment)["float32"]
    # At least a comparison per sample file on the whole: the margins were recorded from the classes' grading. (A
    # new assignment's class may be its model solution alone.)
    assert margins.compared >= len(list((SUBMISSIONS / assignment).glob("*.*"))), margins
    # Measured on an AMD EPYC: the closest pass used 0.05 of its bound, the closest failure exceeded it 200 times.
    assert margins.passed[0] < 0.25, margins.passed
    assert margins.failed[0] > 4, margins.failed
