"""`make soak` in short: two fast sample classes graded through threads and job processes while every core is kept
busy by a competing load, each student's results.json as in a calm run; and the comparison it relies on catches a
difference, so the soak cannot pass by comparing nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import MEASURED
from tests.soak import Bad, Difference, bad_statuses, compare_class, new_bad, read_class, soak, summary


def results_json(student: str = "ana") -> dict[str, Any]:
    """A results.json as grader/record/gradescope.py writes it, cut to two checks."""
    tests = [{"name": f"q1: check {i}", "score": 8, "max_score": 8, "status": "passed", "output": "passed",
              "tags": ["q1", "public"], "visibility": "visible",
              "extra_data": {"check_id": f"q1.check_{i}", "outcome": "passed", "seed": 1000 + i}} for i in (1, 2)]
    return {"score": 16, "execution_time": 0.304, "output": "toy: 16/16 (q1 16/16)", "output_format": "text",
            "test_output_format": "text", "stdout_visibility": "hidden", "tests": tests,
            "extra_data": {"student": student, "assignment": "toy", "status": "graded", "reason": "", "source":
                           f"{student}.py", "sha256": "ab" * 32, "max_score": 16,
                           "submitted_at": "2026-01-01T00:00:00+00:00", "graded_at": "2026-01-02T10:00:00+00:00",
                           "questions": [{"id": "q1", "score": 16, "max_score": 16, "notes": []}], "answers": {},
                           "notes": [], "environment": {"python": "3.11.7"}, "code_score": 16, "manual": [],
                           "late": None}}


def test_times_are_left_out_and_everything_else_is_compared() -> None:
    calm = results_json()
    later = copy.deepcopy(calm)
    later["execution_time"] = 9.9
    later["extra_data"]["graded_at"] = "2026-01-03T11:11:11+00:00"
    assert compare_class({"ana": calm}, {"ana": later}) == []

    later["tests"][1].update(score=0, status="failed", output="wrong weights")
    later["extra_data"]["submitted_at"] = "2026-01-01T00:00:01+00:00"  # the file's time: not a time of the run
    assert compare_class({"ana": calm}, {"ana": later}) == [
        Difference("ana", "tests[1] (q1: check 2).score", "8", "0"),
        Difference("ana", "tests[1] (q1: check 2).status", "'passed'", "'failed'"),
        Difference("ana", "tests[1] (q1: check 2).output", "'passed'", "'wrong weights'"),
        Difference("ana", "extra_data.submitted_at", "'2026-01-01T00:00:00+00:00'", "'2026-01-01T00:00:01+00:00'")]


def test_a_missing_student_check_or_key_is_a_difference() -> None:
    calm = {"ana": results_json("ana"), "ben": results_json("ben")}
    later = copy.deepcopy(calm)
    del later["ben"]
    later["ana"]["tests"].pop()
    later["ana"]["extra_data"]["new_key"] = 1
    found = {(d.student, d.field, d.before, d.after) for d in compare_class(calm, later)}
    assert found == {("ben", "results.json", "written", "(missing)"), ("ana", "tests length", "2", "1"),
                     ("ana", "extra_data.new_key", "(missing)", "1")}


def test_a_long_message_is_shown_where_it_changes() -> None:
    calm = results_json()
    later = copy.deepcopy(calm)
    calm["tests"][0]["output"] = "x" * 300 + " took 1.2 s" + "y" * 100
    later["tests"][0]["output"] = "x" * 300 + " took 3.4 s" + "y" * 100
    (difference,) = compare_class({"ana": calm}, {"ana": later})
    assert "took 1.2 s" in difference.before and "took 3.4 s" in difference.after
    assert len(difference.before) < 150


def test_new_bad_statuses_are_those_the_calm_run_did_not_have(tmp_path: Path) -> None:
    calm = {"ana": results_json("ana"), "ben": results_json("ben")}
    calm["ben"]["extra_data"].update(status="timeout", reason="ran out of time")
    later = copy.deepcopy(calm)
    later["ana"]["tests"][0]["extra_data"]["outcome"] = "internal_error"
    later["ana"]["tests"][0]["output"] = "the grader failed"
    for run, results in (("calm", calm), ("later", later)):  # through the files, as the soak reads them
        for student, data in results.items():
            (tmp_path / run / "students" / student).mkdir(parents=True)
            (tmp_path / run / "students" / student / "results.json").write_text(json.dumps(data))
    calm_bad, later_bad = bad_statuses(read_class(tmp_path / "calm")), bad_statuses(read_class(tmp_path / "later"))
    assert calm_bad == [Bad("ben", "submission", "timeout", "ran out of time")]
    assert new_bad(calm_bad, later_bad) == [Bad("ana", "q1.check_1", "internal_error", "the grader failed")]
    assert [d.field for d in compare_class(read_class(tmp_path / "calm"), read_class(tmp_path / "later"))] == [
        "tests[0] (q1: check 1).output", "tests[0] (q1: check 1).extra_data.outcome"]


@pytest.mark.slow
def test_two_classes_grade_under_a_competing_load_as_they_do_calm(tmp_path: Path) -> None:
    report = soak(assignments=("attention_scoring", "keras_additive_attention"), paths=("threads", "processes"),
                  rounds=1, load=True, work_dir=tmp_path)
    text = summary(report)
    MEASURED["short soak"] = text.replace("\n", "\n    ")
    assert report.ok, text
    assert [(r.assignment, r.path) for r in report.loaded] == [
        ("attention_scoring", "threads"), ("attention_scoring", "processes"),
        ("keras_additive_attention", "threads"), ("keras_additive_attention", "processes")]
    assert all(r.submissions == {"attention_scoring": 19, "keras_additive_attention": 8}[r.assignment]
               for r in report.rows)
    assert report.load_cpu_s > 0.1 * report.loaded_s  # the load did run beside the grader
