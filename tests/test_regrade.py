"""A submission the grader fails on is graded again once, in a fresh process, before its result is recorded (in a
class run and on Gradescope); a second failure is recorded as internal_error. The fixture assignment ``flaky`` fails
on purpose: once per process for a student whose code defines ``flaky`` (so a retry in the same process would fail
again), always for one whose code defines ``always_fails``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from grader.check.load import load_assignment
from grader.check.seeds import check_seed
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.pipeline.gradescope_run import grade_gradescope_submission
from grader.results import HIDDEN, INTERNAL

from .conftest import FIXTURE_SOLUTIONS

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

CORRECT = "def scale(x):\n    return x * 2\n\ndef shift(x):\n    return x + 1\n"
FLAKES = Path(__import__("tempfile").gettempdir()) / "grader-test-flakes"


@pytest.fixture
def students(tmp_path: Path) -> dict[str, str]:
    """Three students with ids new to this run (the flake's marker is named from the id): one the grader fails on
    once, one it always fails on, one it grades without trouble."""
    tag = uuid.uuid4().hex[:8]
    names = {"flaky": f"flaky_{tag}", "always": f"always_{tag}", "steady": f"steady_{tag}"}
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / f"{names['flaky']}.py").write_text(CORRECT + "\nflaky = True\n")
    (folder / f"{names['always']}.py").write_text(CORRECT + "\nalways_fails = True\n")
    (folder / f"{names['steady']}.py").write_text(CORRECT)
    yield names
    key = load_assignment("flaky", solutions_dir=FIXTURE_SOLUTIONS).seed_key
    for name in names.values():
        (FLAKES / str(check_seed("flaky", name, "q1.scale", HIDDEN, key))).unlink(missing_ok=True)


@pytest.mark.parametrize("job_processes", [False, True], ids=["threads", "job processes"])
def test_a_submission_the_grader_failed_on_is_graded_again_in_a_fresh_process(
        students: dict[str, str], tmp_path: Path, job_processes: bool, capsys: pytest.CaptureFixture[str]) -> None:
    run = grade_class(RunRequest(assignment="flaky", submissions_dir=tmp_path / "class", out_dir=tmp_path / "out",
                                 solutions_dir=FIXTURE_SOLUTIONS), RunOptions(jobs=2, job_processes=job_processes))
    by_student = {r.student: r for r in run.results}
    assert set(run.regraded) == {students["flaky"], students["always"]}
    assert "grading them again in a fresh process" in capsys.readouterr().err

    flaky = by_student[students["flaky"]]
    assert (flaky.status, flaky.score) == ("graded", 2)  # the second attempt, in another process, is recorded
    always = by_student[students["always"]]
    assert [c.status for c in always.checks if c.check_id == "q1.scale"] == [INTERNAL]
    assert always.score == 1  # its second failure is recorded as it is: the check the grader failed on, only
    assert run.internal_errors == 1
    steady = by_student[students["steady"]]
    assert (steady.status, steady.score) == ("graded", 2)
    # Each student is recorded once, with the pages of the result recorded.
    assert sorted(r.student for r in run.summaries) == sorted(students.values())
    assert '"status": "passed"' in (tmp_path / "out" / "students" / students["flaky"] / "results.json").read_text()


@pytest.mark.parametrize("student", ["flaky", "always"])
def test_on_gradescope_a_failure_is_graded_again_by_a_fresh_interpreter(
        students: dict[str, str], tmp_path: Path, student: str, capfd: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "work.py").write_bytes((tmp_path / "class" / f"{students[student]}.py").read_bytes())
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": students[student]}]}))
    written = grade_gradescope_submission(root=root, assignment="flaky", solutions_dir=FIXTURE_SOLUTIONS)
    assert "grading it again in a fresh process" in capfd.readouterr().out
    assert json.loads((root / "results" / "results.json").read_text()) == written
    outcomes = {t["name"].split(" ")[0]: t["extra_data"]["outcome"] for t in written["tests"]}
    if student == "flaky":  # the fresh interpreter got past the failure of the first
        assert written["score"] == 2 and set(outcomes.values()) == {"passed"}, outcomes
    else:
        assert written["score"] == 1 and "internal_error" in outcomes.values(), outcomes
