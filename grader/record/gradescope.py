"""results.json in Gradescope's autograder format (every test tagged with its question id)."""

from __future__ import annotations

from typing import Any

from grader.points import json_number
from grader.record.result_json import to_data
from grader.results import MARKED, PASSED, PUBLIC, ManualMark, SubmissionResult
from grader.times import describe_late


def gradescope_results(result: SubmissionResult) -> dict[str, Any]:
    tests = []
    question_of = {c.check_id: q for q in result.questions for c in q.checks}
    for check in result.checks:
        # Gradescope shows no question notes: a problem the question's checks share is said in each of them.
        lines: tuple[str, ...] = (question_of[check.check_id].said(check),)
        if check.diagnosis is not None:  # as the student's page words it, hidden checks too: it names no input
            lines += (f"Likely cause: {check.diagnosis.name}. {check.diagnosis.said}",)
        lines += check.notes
        if check.smallest is not None:  # its sizes only, which a hidden check may show too
            lines += (f"Smallest failing case: {check.smallest.text}.",)
        if check.override is not None:  # as the student's page says it; who regraded is the instructor's
            lines = (f"Regraded: {json_number(check.score)} of {json_number(check.max_score)} points (the check gave "
                     f"{json_number(check.override.original)}). {check.override.reason}", *lines)
        output = "\n".join(lines)
        tests.append({
            "name": f"{check.question}: {check.title}",
            "score": json_number(check.score),
            "max_score": json_number(check.max_score),
            "status": "passed" if check.status == PASSED else "failed",
            "output": output,
            "tags": [check.question, check.visibility],
            "visibility": "visible" if check.visibility == PUBLIC else "after_published",
            "extra_data": {"check_id": check.check_id, "outcome": check.status, "seed": check.seed},
        })
    manual = tuple(m.for_student() for m in result.manual)  # results.json is the student's to see
    tests += [_manual_test(mark) for mark in manual if mark.max_score]
    per_question = ", ".join(f"{q.id} {json_number(q.score)}/{json_number(q.max_score)}" for q in result.questions)
    per_question += "".join(f", {m.question} {json_number(m.score) if m.state == MARKED else 'not marked'}"
                            f"/{json_number(m.max_score)}" for m in manual if m.max_score)
    summary = f"{result.assignment}: {json_number(result.score)}/{json_number(result.max_score)} ({per_question})"
    if result.late is not None:
        summary += "\n" + describe_late(result.late, result.late_points, result.code_score + result.manual_score)
    if result.reason:
        summary += f"\n{result.status}: {result.reason}"
    return {
        "score": json_number(result.score),
        "execution_time": result.duration_s,
        "output": summary,
        "output_format": "text",
        # Gradescope's default, said outright: each test's output in a <pre>, so "\n" breaks lines and nothing in
        # a message or explanation is read as HTML or Markdown (output_format covers the top-level output only).
        "test_output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "student": result.student,
            "assignment": result.assignment,
            "status": result.status,
            "reason": result.reason,
            "source": result.source,
            "sha256": result.sha256,
            "max_score": json_number(result.max_score),
            "submitted_at": result.submitted_at,
            "graded_at": result.graded_at,
            "questions": [{"id": q.id, "score": json_number(q.score), "max_score": json_number(q.max_score),
                           "notes": list(q.notes), "choices": [c.line for c in q.choices]} for q in result.questions],
            "answers": {a.id: a.text for a in result.answers},
            "notes": list(result.notes),
            "environment": dict(result.student_environment),
            "code_score": json_number(result.code_score),
            "manual": [{"question": m.question, "points": m.points, "max_score": json_number(m.max_score),
                        "comment": m.comment, "state": m.state} for m in manual],
            "late": None if result.late is None else {**to_data(result.late.for_student()),
                                                      "points_deducted": json_number(result.late_points)},
        },
    }


def _manual_test(mark: ManualMark) -> dict[str, Any]:
    """A written answer worth points, as a test: its marks and the instructor's comment once marked."""
    marked = mark.state == MARKED
    test: dict[str, Any] = {
        "name": f"{mark.question}: written answer (marked by hand)",
        "score": json_number(mark.score),
        "max_score": json_number(mark.max_score),
        "output": mark.comment if marked else "Not marked yet." + (f"\n{mark.comment}" if mark.comment else ""),
        "tags": [mark.question, "manual"],
        "visibility": "visible",
        "extra_data": {"state": mark.state},
    }
    if marked:
        test["status"] = "passed" if mark.score >= mark.max_score else "failed"
    return test
