"""Sizes on steps: ``ctx.sizes(hiddens=(2, 33, 2))`` draws an even size (one of range(2, 33, 2)), so an instructor
need not draw half a size and double it, and the smallest failing case names the size itself ("hiddens 2", not
"half hiddens 1"). Pairs draw as they always did (the same values for every existing seed), and the search for a
smaller failing case stays on the steps."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.check import load_assignment
from grader.check.context import CheckContext
from grader.check.seeds import check_seed
from grader.check.shrink import candidates
from grader.discover import Submission
from grader.errors import ConfigurationError
from grader.report import render_student_report

from .conftest import write
from .warm_workers import grade_one


class Recorder:  # what CheckContext needs of the student's code to draw sizes: nothing is called
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.replies: list = []

    def start_check(self) -> None:
        pass


def context(seed: int, forced: dict[str, int] | None = None) -> CheckContext:
    return CheckContext(student=Recorder(), seed=seed, forced=forced)  # type: ignore[arg-type]


steps = st.tuples(st.integers(1, 40), st.integers(1, 60), st.integers(1, 9)).filter(lambda t: t[0] < t[1])


@given(bounds=steps, seed=st.integers(0, 2**32 - 1))
def test_a_stepped_size_is_one_of_its_range_and_forced_or_shrunk_sizes_stay_on_its_steps(
        bounds: tuple[int, int, int], seed: int) -> None:
    low, high, step = bounds
    values = range(low, high, step)
    drawn, = context(seed).sizes(size=bounds)
    assert drawn in values
    # Whatever the search forces (any size, below the low or past the high), the size used is on the steps.
    for forced in {0, 1, low - 1, low, drawn // 2, drawn - 1, drawn, high, high + step}:
        size, = context(seed, {"size": forced}).sizes(size=bounds)
        assert size in values
    # The search proposes only sizes on the steps, each smaller than the one it shrinks.
    ctx = context(seed)
    ctx.sizes(size=bounds)
    assert ctx.minimum["size"] == low and ctx.steps.get("size", 1) == step
    for size in values:
        for proposed in candidates(size, ctx.minimum["size"], ctx.steps.get("size", 1)):
            assert proposed in values and proposed < size


@given(bounds=steps, seed=st.integers(0, 2**32 - 1))
def test_a_step_of_one_draws_what_the_pair_draws_and_the_stream_after_it_is_the_same(
        bounds: tuple[int, int, int], seed: int) -> None:
    low, high, _ = bounds
    pair, one = context(seed), context(seed)
    assert pair.sizes(size=(low, high)) == one.sizes(size=(low, high, 1))
    assert pair.rng.normal() == one.rng.normal()


def test_an_existing_checks_seed_draws_the_same_sizes_as_before() -> None:
    # bahdanau_attention's q1.random draws these for these students; recorded before steps existed (then the shrink
    # fixture's pair, and the stream after them).
    recorded = {"alice": (2152627756, (24, 10, 13, 7), (1, 3), 1.9075191765),
                "bob": (1167297978, (14, 4, 7, 8), (6, 4), 0.242805058212),
                "student": (2165346354, (21, 2, 11, 3), (5, 3), -0.886044517452)}
    for student, (seed, sizes, more, after) in recorded.items():
        assert check_seed("bahdanau_attention", student, "q1.random", "hidden") == seed
        ctx = context(seed)
        assert ctx.sizes(keys=(2, 30), input_dim=(2, 12), hidden_dim=(2, 16), value_dim=(2, 9),
                         distinct=("keys", "input_dim", "hidden_dim", "value_dim")) == sizes
        assert ctx.sizes(rows=(1, 7), cols=(2, 7)) == more
        assert round(float(ctx.rng.normal()), 12) == after
        assert ctx.steps == {}


def test_distinct_stepped_sizes_move_along_their_steps() -> None:
    equal = context(1, {"a": 4, "b": 4, "c": 4})
    assert equal.sizes(a=(2, 9, 2), b=(2, 9, 2), c=(2, 9, 2), distinct=("a", "b", "c")) == (4, 6, 8)
    top = context(1, {"a": 8, "b": 8})
    assert top.sizes(a=(2, 9, 2), b=(2, 9, 2), distinct=("a", "b")) == (8, 6)
    for seed in range(100):
        drawn = context(seed).sizes(a=(2, 9, 2), b=(2, 9, 2), c=(2, 9, 2), distinct=("a", "b", "c"))
        assert len(set(drawn)) == 3 and all(v % 2 == 0 for v in drawn)


def test_a_step_that_draws_nothing_is_the_instructors_error() -> None:
    with pytest.raises(ConfigurationError, match="step 0"):
        context(1).sizes(hiddens=(2, 10, 0))
    with pytest.raises(ConfigurationError, match=r"no value in range\(10, 2, 2\)"):
        context(1).sizes(hiddens=(10, 2, 2))


CHECKS = '''
    import numpy as np

    from grader.check import Arg, Assignment, CheckContext, Question

    ASSIGNMENT = Assignment(name="halves", title="Halves",
                            questions=[Question("q1", "swap_halves", defines=("swap_halves",))])


    @ASSIGNMENT.check("q1", points=1, title="random sizes, an even number of hiddens")
    def q1_random(ctx: CheckContext) -> None:
        rows, hiddens = ctx.sizes(rows=(1, 6), hiddens=(2, 33, 2))
        X = ctx.rng.normal(size=(rows, hiddens))
        half = hiddens // 2
        expected = np.concatenate([X[:, half:], X[:, :half]], axis=1)
        ctx.expect_tensor("swap_halves(X)", ctx.student.function("swap_halves")(Arg.tensor(X)), expected)
'''
# Wrong on every even size (the halves are not swapped); an odd size, which the check never draws, ends the process,
# so a search that tried one would stop with a note saying so.
WRONG = """
    import os
    import torch

    def swap_halves(X):
        if X.shape[1] % 2:
            os._exit(3)
        return X.clone()
"""


def test_the_smallest_failing_case_of_a_stepped_size_is_on_its_steps(tmp_path: Path) -> None:
    folder = tmp_path / "solutions"
    write(folder / "halves", "__init__.py", "")
    write(folder / "halves", "checks.py", CHECKS)
    assignment = load_assignment("halves", solutions_dir=folder)
    path = write(tmp_path, "student.py", WRONG)
    result = grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                       assignment=assignment, root=tmp_path)
    check, = result.checks
    assert check.status == "failed" and check.notes == ()  # no odd size was tried: nothing ended the process
    assert check.smallest is not None and check.smallest.sizes == (("rows", 1), ("hiddens", 2))
    assert all(size % 2 == 0 for name, size in check.smallest.original if name == "hiddens")
    assert "<strong>Smallest failing case:</strong> rows 1, hiddens 2" in render_student_report(result, title="H")
