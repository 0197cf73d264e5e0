"""Pictures of large tensors: a matrix larger than the report draws (32 a side) is drawn around its largest error,
the student's and the reference's over the same window, and the caption says which rows and columns are shown
("rows 39-70 of 100, columns 0-31 of 32, around the largest error at [55, 3]"); a matrix that fits is drawn whole,
its caption as before."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.check import load_assignment
from grader.check.context import HEATMAP_MAX_SIDE, CheckContext, heatmap_window, window_span
from grader.discover import Submission
from grader.record.result_json import result_from_json, result_to_json
from grader.report import render_instructor_report, render_student_report
from grader.report.heatmap import heatmap_figure
from grader.results import Heatmap

from .conftest import write
from .warm_workers import grade_one


@st.composite
def shapes_and_errors(draw: st.DrawFn) -> tuple[tuple[int, int], tuple[int, int] | None, int]:
    shape = (draw(st.integers(1, 200)), draw(st.integers(1, 200)))
    focus = draw(st.none() | st.tuples(st.integers(0, shape[0] - 1), st.integers(0, shape[1] - 1)))
    return shape, focus, draw(st.integers(1, 64))


@given(shapes_and_errors())
def test_the_window_holds_the_error_stays_in_the_matrix_and_keeps_to_the_limit(
        case: tuple[tuple[int, int], tuple[int, int] | None, int]) -> None:
    shape, focus, limit = case
    window = heatmap_window(shape, focus, limit)
    for axis, (start, stop) in enumerate(window):
        assert 0 <= start < stop <= shape[axis]
        assert stop - start == min(shape[axis], limit)  # as much as the limit allows: never less
        if focus is not None:
            assert start <= focus[axis] < stop
            # Centred where the matrix leaves room: as many entries before the error as after it, within one.
            if limit // 2 <= focus[axis] <= shape[axis] - (limit - limit // 2):
                assert focus[axis] - start == limit // 2
        elif shape[axis] > limit:
            assert start == 0  # no error: the top-left corner, as before
    assert window_span(60, 55, 32) == (28, 60) and window_span(60, 3, 32) == (0, 32)


CHECKS = '''
    import numpy as np

    from grader.check import Assignment, CheckContext, Question

    ASSIGNMENT = Assignment(name="tables", title="Tables", questions=[Question("q1", "table", defines=("table",))])


    def reference(rows, cols):
        return np.sin(np.arange(rows)[:, None] / (1.0 + np.arange(cols)))


    @ASSIGNMENT.check("q1", points=1, title="a 60 x 32 table")
    def q1_large(ctx: CheckContext) -> None:
        ctx.expect_tensor("table(60, 32)", ctx.student.function("table")(60, 32), reference(60, 32), attention=True)


    @ASSIGNMENT.check("q1", points=1, title="a 6 x 4 table")
    def q1_small(ctx: CheckContext) -> None:
        ctx.expect_tensor("table(6, 4)", ctx.student.function("table")(6, 4), reference(6, 4), attention=True)
'''
# Right everywhere but at row 55, column 3, which only the large table has.
WRONG_AT_55 = """
    import torch

    def table(rows, cols):
        T = torch.sin(torch.arange(rows, dtype=torch.float64)[:, None] / (1.0 + torch.arange(cols)))
        if rows > 55:
            T[55, 3] += 0.5
        return T
"""
CAPTION = "rows 28-59 of 60, columns 0-31 of 32, around the largest error at [55, 3]"


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> object:
    folder = tmp_path_factory.mktemp("solutions")
    write(folder / "tables", "__init__.py", "")
    write(folder / "tables", "checks.py", CHECKS)
    return load_assignment("tables", solutions_dir=folder)


def test_a_large_tables_heatmap_shows_the_rows_around_its_error_and_says_which(tables: object,
                                                                              tmp_path: Path) -> None:
    path = write(tmp_path, "student.py", WRONG_AT_55)
    result = grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                       assignment=tables, root=tmp_path)  # type: ignore[arg-type]
    large, small = result.checks
    assert (large.status, small.status) == ("failed", "passed")
    assert "largest error 0.5 at [55, 3]" in large.message
    # The pages, as the student and the instructor see them: the picture holds row 55, and its caption says so.
    for page in (render_student_report(result, title="Tables"), render_instructor_report(result, title="Tables")):
        # The cells and axes are numbered as in the whole matrix: row 55 is called row 55.
        assert "query 55, key 3: |yours - reference| = " in page
        assert "query 0, key 3:" not in page.split("table(6, 4)")[0]  # the large table's first rows are not drawn
        assert f'<figcaption>table(60, 32) <span class="window">({CAPTION})</span></figcaption>' in page
        assert "<figcaption>table(6, 4)</figcaption>" in page  # the small one is drawn whole, captioned as before
    heatmap, = large.heatmaps
    assert heatmap.student is not None and len(heatmap.student) == len(heatmap.reference) == HEATMAP_MAX_SIDE
    assert heatmap.row_start <= 55 < heatmap.row_start + len(heatmap.reference)
    assert (heatmap.full_shape, heatmap.focus, heatmap.col_start) == ((60, 32), (55, 3), 0)
    # The same window of each: the only cell that differs is row 55, column 3.
    here = 55 - heatmap.row_start
    assert abs(heatmap.student[here][3] - heatmap.reference[here][3] - 0.5) < 1e-6
    assert sum(s != r for srow, rrow in zip(heatmap.student, heatmap.reference) for s, r in zip(srow, rrow)) == 1
    assert heatmap.reference[0][1] == round(float(np.sin(heatmap.row_start / 2.0)), 6)  # row 28's, not row 0's
    assert heatmap.window_text == CAPTION
    assert result_from_json(result_to_json(result)) == result  # the gradebook keeps the window
    # The small table fits: drawn whole, no window in its caption.
    fits, = small.heatmaps
    assert (fits.full_shape, fits.focus, fits.window_text, len(fits.reference)) == ((), (), "", 6)



def test_the_figure_numbers_the_window_as_in_the_whole_matrix() -> None:
    rows = tuple(tuple(float(r * 10 + c) for c in range(2)) for r in range(3))
    heatmap = Heatmap("t", "Keys", "Queries", rows, rows, row_start=40, col_start=7, full_shape=(100, 9))
    html = str(heatmap_figure(heatmap, large=True))
    assert "(rows 40-42 of 100, columns 7-8 of 9)" in html
    assert "query 40, key 7: 0.0</title>" in html and "query 42, key 8: 21.0</title>" in html
    assert ">40</text>" in html and ">8</text>" in html
    one = Heatmap("t", "Keys", "Queries", ((1.0,) * 32,), None, col_start=5, full_shape=(1, 50), focus=(0, 21))
    assert one.window_text == "row 0 of 1, columns 5-36 of 50, around the largest error at [0, 21]"


def test_an_extra_heatmap_is_drawn_around_the_largest_difference_unless_its_reference_is_a_pattern() -> None:
    class Recorder:  # what CheckContext needs of the student's code to draw: nothing is called
        def __init__(self) -> None:
            self.calls: list[str] = []
            self.replies: list = []

        def start_check(self) -> None:
            pass

    reference = np.zeros((50, 40))
    student = reference.copy()
    student[45, 38] = 1.0
    ticks = tuple(f"t{i}" for i in range(40))
    ctx = CheckContext(student=Recorder(), seed=0)  # type: ignore[arg-type]
    ctx.draw("computed", student, reference, xticks=ticks)
    ctx.draw("ideal", student, reference, reference_title="Ideal", xticks=ticks)
    computed, ideal = ctx.heatmaps
    assert computed.window_text == "rows 18-49 of 50, columns 8-39 of 40, around the largest error at [45, 38]"
    assert computed.xticks == ticks[8:40] and computed.student is not None and computed.student[27][30] == 1.0
    assert ideal.window_text == "rows 0-31 of 50, columns 0-31 of 40" and ideal.xticks == ticks[:32]
