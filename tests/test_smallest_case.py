"""The smallest failing case: a failing random check is run again with smaller sizes until it no longer fails the
same way, in the real sandbox, and the report shows what a student may see of it.

The fixture assignment tests/fixtures/solutions/shrink checks a row-wise softmax on random sizes, once public and
once hidden; the attention_scoring sample class shows the same on the real checks (test_sample_class.py).
"""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from markupsafe import escape

from grader.check import load_assignment
from grader.check.context import CheckContext
from grader.check.runner import SubmissionRunner
from grader.check.seeds import check_seed
from grader.check.shrink import run_at_sizes
from grader.check.spec import Assignment
from grader.check.student import StudentCode
from grader.discover import Submission, read_submission
from grader.errors import ConfigurationError
from grader.pipeline import ClassRun
from grader.record.gradescope import gradescope_results
from grader.record.result_json import result_from_json, result_to_json
from grader.report import render_instructor_report, render_student_report
from grader.results import CheckResult, SmallestCase, SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, SAMPLES, write
from .sample_classes import by_student
from .warm_workers import grade_one

SOFTMAX_OVER_COLUMNS = """
    import torch

    def softmax_rows(X):
        return torch.softmax(X, dim=0)
"""
CORRECT = SOFTMAX_OVER_COLUMNS.replace("dim=0", "dim=-1")
# Wrong on the graded sizes (at least 3 x 3: `grade` picks a student whose hidden case is, and the public case is
# 6 x 5); dies on anything under 3 x 3, which only the search for a smaller case sends.
DIES_WHEN_SMALL = """
    import os
    import torch

    def softmax_rows(X):
        if X.shape[0] * X.shape[1] < 9:
            os._exit(3)
        return torch.softmax(X, dim=0)
"""
HANGS_WHEN_SMALL = DIES_WHEN_SMALL.replace("os._exit(3)", "while True:\n                pass")


@pytest.fixture(scope="module")
def shrink() -> Assignment:
    return load_assignment("shrink", solutions_dir=FIXTURE_SOLUTIONS)


class _Drawn(Exception):
    """The check has drawn its sizes and called the student's code."""


class SizesOnly:  # what CheckContext needs of the student's code to draw sizes; any call ends the check
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.replies: list = []

    def start_check(self) -> None:
        pass

    def __getattr__(self, name: str) -> object:
        raise _Drawn(name)


def submission(tmp_path: Path, source: str, name: str = "student") -> Submission:
    path = write(tmp_path, f"{name}.py", source)
    return Submission(path.stem, path, "python", datetime.now(UTC))


def drawn_sizes(assignment: Assignment, student: str, check_id: str) -> dict[str, int]:
    """The sizes ``check_id`` draws for ``student`` (with the course's secret, as graded): the check run until it
    calls the student's code, which this stand-in does not answer."""
    spec = next(c for c in assignment.checks if c.id == check_id)
    seed = check_seed(assignment.name, student, check_id, spec.visibility, assignment.seed_key)
    ctx = CheckContext(student=SizesOnly(), seed=seed)  # type: ignore[arg-type]
    with contextlib.suppress(_Drawn):
        spec.run(ctx)
    return dict(ctx.drawn)


def student_with_room(assignment: Assignment, check_id: str, minimum: dict[str, int]) -> str:
    """A student id whose hidden draw of ``check_id`` is at least ``minimum`` in each size: hidden cases are keyed
    with the course's secret, so which id draws what is found, not written down."""
    for number in range(500):
        name = f"student{number}"
        drawn = drawn_sizes(assignment, name, check_id)
        if all(drawn[size] >= low for size, low in minimum.items()):
            return name
    raise AssertionError(f"no student id under 500 draws {minimum} for {check_id}")


def grade(tmp_path: Path, shrink: Assignment, source: str, name: str | None = None) -> SubmissionResult:
    """Graded as a student whose hidden case is at least 3 x 3 (room to shrink; DIES_WHEN_SMALL runs there)."""
    name = name or student_with_room(shrink, "q1.random_hidden", {"rows": 3, "cols": 3})
    return grade_one(submission=submission(tmp_path, source, name), assignment=shrink, root=tmp_path)


def checks_of(result: SubmissionResult) -> dict[str, CheckResult]:
    return {c.check_id: c for c in result.checks}


def rerun_fails(assignment: Assignment, sub: Submission, check_id: str, sizes: dict[str, int]) -> bool:
    """The check run again in a fresh process at exactly ``sizes``: does it still fail on values?"""
    program = read_submission(sub, written_ids=[w.id for w in assignment.written])
    runner = SubmissionRunner(assignment=assignment, student=sub.student, program=program, limits=assignment.limits)
    spec = next(c for c in assignment.checks if c.id == check_id)
    question = next(q for q in assignment.questions if q.id == spec.question)
    try:
        runner.load()
        assert runner.process is not None
        files = [f.wire() for f in assignment.provided_files] if question.provided_names else []
        with runner.process.question(provided_files=files, provided_names=question.provided_names) as session:
            seed = check_seed(assignment.name, sub.student, check_id, spec.visibility, assignment.seed_key)
            run, failure = run_at_sizes(spec, seed, StudentCode(session), sizes)
        assert run.drawn == sizes
        return failure is not None
    finally:
        runner.close()


def test_sizes_are_drawn_as_rng_integers_draws_them_and_forced_ones_keep_the_stream() -> None:
    class Recorder:  # what CheckContext needs of the student's code to draw sizes: nothing is called
        def __init__(self) -> None:
            self.calls: list[str] = []
            self.replies: list = []

        def start_check(self) -> None:
            self.calls.clear()

    rng = np.random.default_rng(7)
    expected = (int(rng.integers(2, 5)), int(rng.integers(1, 7)), 4)
    after = rng.normal(size=3)
    ctx = CheckContext(student=Recorder(), seed=7)  # type: ignore[arg-type]
    assert ctx.sizes(batch=(2, 5), keys=(1, 7), features=4) == expected
    assert np.array_equal(ctx.rng.normal(size=3), after)
    assert ctx.drawn == {"batch": expected[0], "keys": expected[1], "features": 4}
    # Forced sizes are clamped to the range's top (a range may depend on another size) and to its low, the check's
    # own minimum (1 for a fixed size); the stream is drawn as before, so the values after the sizes come from the
    # same place.
    forced = CheckContext(student=Recorder(), seed=7, forced={"batch": 1, "keys": 100, "features": 0})
    assert forced.sizes(batch=(2, 5), keys=(1, 7), features=4) == (2, 6, 1)
    assert forced.minimum == {"batch": 2, "keys": 1, "features": 1}
    assert np.array_equal(forced.rng.normal(size=3), after)
    with pytest.raises(ConfigurationError, match="drawn twice"):
        forced.sizes(batch=(1, 2))


def test_distinct_sizes_move_to_the_nearest_free_size_upwards_first() -> None:
    class Recorder:
        def __init__(self) -> None:
            self.calls: list[str] = []
            self.replies: list = []

        def start_check(self) -> None:
            pass

    equal = CheckContext(student=Recorder(), seed=1, forced={"q": 3, "k": 3, "v": 3})  # type: ignore[arg-type]
    assert equal.sizes(q=(2, 9), k=(2, 9), v=(2, 9), distinct=("q", "k", "v")) == (3, 4, 5)
    top = CheckContext(student=Recorder(), seed=1, forced={"q": 4, "k": 4, "v": 4})  # type: ignore[arg-type]
    assert top.sizes(q=(2, 5), k=(2, 5), v=(2, 5), distinct=("q", "k", "v")) == (4, 3, 2)  # no room above: below
    groups = CheckContext(student=Recorder(), seed=1, forced={"a": 2, "b": 2, "x": 2, "y": 2})  # type: ignore
    assert groups.sizes(a=(2, 5), b=(2, 5), x=(2, 5), y=(2, 5), distinct=(("a", "b"), ("x", "y"))) == (2, 3, 2, 3)
    # Every seed's draw: the sizes of a group differ.
    for seed in range(200):
        ctx = CheckContext(student=Recorder(), seed=seed)  # type: ignore[arg-type]
        assert len(set(ctx.sizes(q=(2, 6), k=(2, 6), v=(2, 6), distinct=("q", "k", "v")))) == 3
    with pytest.raises(ConfigurationError, match="distinct"):
        CheckContext(student=Recorder(), seed=1).sizes(q=(2, 5), distinct=("q", "k"))  # type: ignore[arg-type]


def test_a_failing_public_check_shows_its_smallest_case_with_inputs_answers_and_expected_values(
        tmp_path: Path, shrink: Assignment) -> None:
    result = grade(tmp_path, shrink, SOFTMAX_OVER_COLUMNS)
    checks = checks_of(result)
    public, hidden = checks["q1.random_shown"], checks["q1.random_hidden"]
    assert (public.status, hidden.status, checks["q1.uniform"].status) == ("failed", "failed", "passed")
    assert result.score == 1  # the search never changes a score
    # One row: a softmax over the columns axis is all ones; two columns: the row's softmax is not.
    for check in (public, hidden):
        smallest = check.smallest
        assert smallest is not None and smallest.sizes == (("rows", 1), ("cols", 2)), check.check_id
        original = dict(smallest.original)
        assert original["rows"] >= 3 and original["cols"] >= 3 and 0 < smallest.attempts <= 40
        assert smallest.trace[0].startswith("softmax_rows(float64 (1, 2)")
        assert smallest.diff is not None and smallest.diff.shape == (1, 2) and smallest.diff.got == (1.0, 1.0)
        assert smallest.detail.startswith("softmax_rows(X) differs from the reference in 2 of 2 entries")
    assert public.smallest.message == public.smallest.detail
    assert hidden.smallest.message == "softmax_rows(X) differs from the reference in 100% of entries"  # the hint
    assert result_from_json(result_to_json(result)) == result  # the gradebook keeps it

    report = render_student_report(result, title="Shrink")
    instructor = render_instructor_report(result, title="Shrink")
    graded_at = ", ".join(f"{name} {size}" for name, size in public.smallest.original)
    assert f"<strong>Smallest failing case:</strong> rows 1, cols 2 (graded at {graded_at})." in report
    assert str(escape(public.smallest.trace[0])) in report and str(escape(public.smallest.detail)) in report
    # The hidden check: its sizes and hint only; the instructor sees everything.
    assert "<strong>Smallest failing case:</strong> rows 1, cols 2.\n" in report
    assert "This check is hidden, so its inputs are not shown" in report
    for secret in (*hidden.smallest.trace, hidden.smallest.detail):
        assert str(escape(secret)) not in report
        assert str(escape(secret)) in instructor
    outputs = {t["extra_data"]["check_id"]: t["output"] for t in gradescope_results(result)["tests"]}
    assert outputs["q1.random_hidden"] == f"{hidden.message}\nSmallest failing case: rows 1, cols 2."


def test_the_smallest_case_is_deterministic_and_fails_again_at_exactly_its_sizes(tmp_path: Path,
                                                                                 shrink: Assignment) -> None:
    first = grade(tmp_path, shrink, SOFTMAX_OVER_COLUMNS)
    again = grade(tmp_path, shrink, SOFTMAX_OVER_COLUMNS)
    assert [c.smallest for c in first.checks] == [c.smallest for c in again.checks]
    smallest = checks_of(first)["q1.random_hidden"].smallest
    assert smallest is not None
    sub = submission(tmp_path, SOFTMAX_OVER_COLUMNS, first.student)
    assert rerun_fails(shrink, sub, "q1.random_hidden", dict(smallest.sizes))
    # Both at the check's own minimum (one row, two columns): the search goes no lower.
    assert smallest.sizes == (("rows", 1), ("cols", 2))


def test_a_correct_submission_has_no_smallest_case(tmp_path: Path, shrink: Assignment) -> None:
    result = grade(tmp_path, shrink, CORRECT)
    assert result.score == result.max_score
    assert all(c.smallest is None for c in result.checks)
    assert "Smallest failing case" not in render_student_report(result, title="Shrink")


@pytest.mark.parametrize(("source", "what"), [(DIES_WHEN_SMALL, "ended the process"),
                                              (HANGS_WHEN_SMALL, "ran past its time limit")])
def test_a_crash_or_hang_while_searching_costs_no_later_check(tmp_path: Path, shrink: Assignment, source: str,
                                                             what: str) -> None:
    result = grade(tmp_path, shrink, source)
    checks = checks_of(result)
    # Each random check fails as graded, its search stops at the first smaller size, and the next check runs in
    # a fresh process: the uniform case passes as it does for the same code without the crash.
    for check_id in ("q1.random_shown", "q1.random_hidden"):
        check = checks[check_id]
        assert check.status == "failed" and check.smallest is None
        cols = re.search(r"softmax_rows\(float64 \(\d+, (\d+)\)", check.trace[0]).group(1)  # as graded
        where = f"at rows 1, cols {cols}" if check.visibility == "public" else "on smaller inputs"
        assert check.notes == (f"Looking for a smaller failing case, your code {what} {where}, so the search "
                               "stopped.",)
    assert checks["q1.uniform"].status == "passed"
    assert result.score == 1
    assert "your code was started again 2 time(s) after it hung or crashed" in result.notes


# ----- the attention_scoring sample class (graded once per session: slow) -----------------------------------------
def sample_page(run: ClassRun, student: str, name: str = "report.html") -> str:
    return (run.out_dir / "students" / student / name).read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "check_id"), [("mistake_softmax_axis", "q1.random_1d"),
                                                  ("mistake_ignores_2d", "q1.random_2d")])
def test_a_sample_mistake_has_a_smaller_failing_case_that_fails_again_and_stays_hidden(
        tmp_path: Path, sample: str, check_id: str) -> None:
    assignment = load_assignment("attention_scoring")
    # Graded as a student whose hidden case is above the check's minimum, so that there is a smaller one to find.
    student = student_with_room(assignment, check_id, {"batch": 3, "queries": 3, "keys": 3})
    sub = Submission(student, SAMPLES / f"{sample}.py", "python", datetime.now(UTC))
    result = grade_one(submission=sub, assignment=assignment, root=SAMPLES)
    check = checks_of(result)[check_id]
    smallest = check.smallest
    assert check.status == "failed" and check.visibility == "hidden" and smallest is not None
    sizes, original = dict(smallest.sizes), dict(smallest.original)
    assert sizes.keys() == original.keys() == {"batch", "queries", "keys"}
    assert original == drawn_sizes(assignment, student, check_id)
    assert all(sizes[n] <= original[n] for n in sizes) and any(sizes[n] < original[n] for n in sizes)
    if sample == "mistake_softmax_axis":  # the check's generic minimum: at least 2 each, batch, queries, keys distinct
        assert smallest.sizes == (("batch", 2), ("queries", 3), ("keys", 4))
    assert rerun_fails(assignment, sub, check_id, sizes)
    report = render_student_report(result, title=assignment.title)
    instructor = render_instructor_report(result, title=assignment.title, submission=sub)
    assert f"<strong>Smallest failing case:</strong> {smallest.text}.\n" in report
    for secret in (*smallest.trace, smallest.detail, SmallestCase.describe(smallest.original)):
        assert str(escape(secret)) not in report
        assert str(escape(secret)) in instructor


@pytest.mark.slow
def test_sample_pages_show_a_public_checks_smallest_case_and_correct_work_has_none(sample_run: ClassRun) -> None:
    results = by_student(sample_run)
    public = checks_of(results["mistake_no_scaling"])["q3.no_valid_lens"]  # public, random sizes
    assert public.visibility == "public" and public.smallest is not None
    report = sample_page(sample_run, "mistake_no_scaling")
    assert all(str(escape(line)) in report for line in public.smallest.trace)
    assert any(line.startswith("DotProductAttention.forward(float64 (2, ") for line in public.smallest.trace)
    for student in ("textbook", "older_edition", "einsum_style", "magics", "noisy", "folder_student"):
        assert all(c.smallest is None for c in results[student].checks), student
        assert "Smallest failing case" not in sample_page(sample_run, student)


@pytest.mark.parametrize("source", ['''
    def softmax_rows_misnamed(X):
        return X
''', '''
    def softmax_rows(X):
        return [1.0]
'''], ids=["not defined", "a list, not a tensor"])
def test_only_values_that_differ_get_a_smaller_failing_case(tmp_path: Path, shrink: Assignment, source: str) -> None:
    """A missing name or an answer of the wrong kind fails the same way at any size: no search, no smallest case."""
    result = grade(tmp_path, shrink, source)
    random_checks = [c for c in result.checks if c.check_id.startswith("q1.random")]
    assert random_checks and all(c.status == "failed" and c.smallest is None for c in random_checks)
