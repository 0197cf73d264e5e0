"""A rubric that cannot count as meant is a warning when the assignment loads: on a written question worth 0 points
(its marks would never count), or with items whose points do not add up to the question's (markers could never give
full marks, or could give more). Grading goes on; the commands that load an assignment print it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from grader.check import Assignment, Question, RubricItem, WrittenQuestion

from .conftest import FIXTURE_SOLUTIONS, ROOT

item_points = st.lists(st.integers(-3, 5), max_size=5)


def assignment(points: float, rubric: list[int]) -> Assignment:
    return Assignment(name="essay", title="An essay", questions=[Question("q1", "f", defines=("f",))],
                      written=[WrittenQuestion("why", "Why?", points=points,
                                               rubric=tuple(RubricItem(f"item {i}", p) for i, p in enumerate(rubric)))])


@given(st.integers(0, 12), item_points)
def test_a_rubric_warns_exactly_when_it_cannot_count_as_meant(points: int, rubric: list[int]) -> None:
    warnings = assignment(points, rubric).authoring_warnings()
    full = sum(p for p in rubric if p > 0)
    if not rubric:
        assert warnings == []
    elif points == 0:
        assert len(warnings) == 1 and "worth 0 points, so its marks never count" in warnings[0]
    elif full != points:
        assert len(warnings) == 1
        assert f"worth {points} points, but its rubric's items add up to {full}" in warnings[0]
        assert ("never give full marks" if full < points else "more than full marks") in warnings[0]
    else:
        assert warnings == []


def test_grader_assign_and_grade_print_the_warning(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions"
    shutil.copytree(FIXTURE_SOLUTIONS / "written_maps", solutions / "written_maps",
                    ignore=shutil.ignore_patterns("__pycache__"))
    checks = solutions / "written_maps" / "checks.py"
    checks.write_text(checks.read_text().replace('points=4, rubric=(', 'points=5, rubric=('))
    for command in (["grade", "written_maps", str(tmp_path / "none"), "--out", str(tmp_path / "out")],
                    ["assign", "written_maps", "--out", str(tmp_path / "assignments")]):
        done = subprocess.run([sys.executable, "-m", "grader", *command, "--solutions", str(solutions)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert ("warning: written_maps: written question why is worth 5 points, but its rubric's items add up to 4"
                in done.stderr), (command, done.stderr)
