"""What a student may see of a result (the ``for_student()`` methods in grader/results.py), the grader's own trace
kept for the instructor, and the status vocabularies written as the plain strings they always were."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest
from markupsafe import escape

from grader.record.autograder_results import autograder_results
from grader.record.result_json import ResultFormatError, result_from_json, result_to_json, to_data
from grader.report import render_instructor_report, render_student_report
from grader.report.summary import outcome
from grader.results import (
    GRADED,
    HIDDEN,
    INTERNAL,
    NOT_RUN,
    PUBLIC,
    CheckResult,
    CheckStatus,
    SmallestCase,
    SubmissionResult,
    SubmissionStatus,
    TensorDiff,
    UnitStatus,
    Visibility,
    status_label,
)

from .test_resume import sample_result

TRACE = 'Traceback (most recent call last):\n  File "checks.py", line 9, in q1_secret\nRuntimeError: a grader bug'


def failed_by_the_grader() -> SubmissionResult:
    return dataclasses.replace(sample_result(), status=INTERNAL, reason="the grader itself failed on this submission",
                               notes=("2 files found",), grader_trace=TRACE)


def test_the_graders_own_trace_is_the_instructors_only() -> None:
    result = failed_by_the_grader()
    assert result.for_student().grader_trace == "" and result.for_student().notes == ("2 files found",)
    student = render_student_report(result, title="A")
    instructor = render_instructor_report(result, title="A")
    assert "q1_secret" not in student and "2 files found" in student
    assert str(escape(TRACE)) in instructor
    output = autograder_results(result)["output"]
    assert "q1_secret" not in output and "Note: 2 files found" in output
    assert "q1_secret" not in json.dumps(autograder_results(result))
    # Stored with the result, so a report made again from the gradebook still has it.
    assert result_from_json(result_to_json(result)).grader_trace == TRACE


def test_an_older_result_keeps_its_trace_out_of_the_students_notes() -> None:
    """Results written before grader_trace existed held the trace as a note (tests/test_regrade.py, resume)."""
    data = to_data(failed_by_the_grader())
    del data["grader_trace"]
    data["notes"] = ["2 files found", TRACE]
    back = result_from_json(json.dumps(data))
    assert back.notes == ("2 files found",) and back.grader_trace == TRACE
    # Only a failure of the grader's had one: a graded result's notes are read as they are.
    data["status"] = GRADED
    assert result_from_json(json.dumps(data)).notes == ("2 files found", TRACE)


def test_a_hidden_checks_student_copy_keeps_no_input_or_value() -> None:
    diff = TensorDiff("weights", (2,), (0.25, 0.75), (0.5, 0.5), (0, 1))
    smallest = SmallestCase((("keys", 2),), (("keys", 9),), "hint", detail="at keys=2 got 0.5",
                            trace=("f(x=[1, 2])",), diff=diff)
    check = CheckResult("q1.random", "q1", "random", HIDDEN, CheckStatus.FAILED, 0.0, 1.0, "hint", "full story", 7,
                        diff=diff, tables=(diff,), trace=("f(x=[1, 2])",), smallest=smallest)
    seen = check.for_student()
    assert (seen.detail, seen.trace, seen.seed, seen.diff, seen.tables) == ("", (), 0, None, ())
    assert seen.smallest == SmallestCase((("keys", 2),), (), "hint", attempts=0)
    public = dataclasses.replace(check, visibility=PUBLIC).for_student()
    assert public.seed == 7 and public.diff == diff and public.detail == "" and public.trace == ()
    assert public.smallest == dataclasses.replace(smallest, detail="")
    assert CheckResult.student_message(HIDDEN, "f([1, 2]) gave 3", "hint") == "hint"
    assert CheckResult.student_message(PUBLIC, "f([1, 2]) gave 3", "hint") == "f([1, 2]) gave 3"


def test_statuses_are_written_as_the_plain_strings_they_always_were() -> None:
    result = dataclasses.replace(sample_result(check_status=NOT_RUN), status=SubmissionStatus.GRADED)
    data = json.loads(result_to_json(result))
    assert data["status"] == "graded" and data["questions"][0]["checks"][0]["status"] == "not_run"
    assert data["questions"][0]["checks"][0]["visibility"] == "public" and data["units"][0]["status"] == "ok"
    back = result_from_json(result_to_json(result))
    assert type(back.status) is SubmissionStatus and type(back.checks[0].status) is CheckStatus
    assert type(back.checks[0].visibility) is Visibility and type(back.units[0].status) is UnitStatus
    with sqlite3.connect(":memory:") as db:
        assert db.execute("SELECT ?, typeof(?)", (NOT_RUN, NOT_RUN)).fetchone() == ("not_run", "text")
    assert f"{INTERNAL}" == str(INTERNAL) == "internal_error" and INTERNAL == SubmissionStatus.INTERNAL
    data["questions"][0]["checks"][0]["status"] = "skipped"  # a unit's status, not a check's
    with pytest.raises(ResultFormatError, match=r"checks\[0\]\.status: expected one of passed, "):
        result_from_json(json.dumps(data))


def test_each_status_has_one_label_for_people() -> None:
    assert status_label(NOT_RUN) == status_label("not_run") == NOT_RUN.label == "not run"
    assert status_label(INTERNAL) == status_label("internal_error") == "grader error"
    assert status_label("exit") == UnitStatus.EXIT.label == "exit" and status_label(GRADED) == "graded"
    assert outcome(NOT_RUN) == "NOT RUN" and outcome("internal_error") == "GRADER ERROR"
    assert outcome("failed") == "FAILED"
    page = render_student_report(sample_result(check_status=NOT_RUN), title="A")
    assert '<span class="badge not_run">not run</span>' in page
