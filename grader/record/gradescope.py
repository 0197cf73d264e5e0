"""results.json in Gradescope's autograder format (every test tagged with its question id)."""

from __future__ import annotations

from typing import Any

from grader.results import PASSED, PUBLIC, SubmissionResult


def _points(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 4)


def gradescope_results(result: SubmissionResult) -> dict[str, Any]:
    tests = []
    for check in result.checks:
        output = check.message if not check.notes else "\n".join((check.message, *check.notes))
        tests.append({
            "name": f"{check.question}: {check.title}",
            "score": _points(check.score),
            "max_score": _points(check.max_score),
            "status": "passed" if check.status == PASSED else "failed",
            "output": output,
            "tags": [check.question, check.visibility],
            "visibility": "visible" if check.visibility == PUBLIC else "after_published",
            "extra_data": {"check_id": check.check_id, "outcome": check.status, "seed": check.seed},
        })
    per_question = ", ".join(f"{q.id} {_points(q.score)}/{_points(q.max_score)}" for q in result.questions)
    summary = f"{result.assignment}: {_points(result.score)}/{_points(result.max_score)} ({per_question})"
    if result.reason:
        summary += f"\n{result.status}: {result.reason}"
    return {
        "score": _points(result.score),
        "execution_time": result.duration_s,
        "output": summary,
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "student": result.student,
            "assignment": result.assignment,
            "status": result.status,
            "reason": result.reason,
            "source": result.source,
            "sha256": result.sha256,
            "max_score": _points(result.max_score),
            "submitted_at": result.submitted_at,
            "graded_at": result.graded_at,
            "questions": [{"id": q.id, "score": _points(q.score), "max_score": _points(q.max_score),
                           "notes": list(q.notes)} for q in result.questions],
            "answers": {a.id: a.text for a in result.answers},
            "notes": list(result.notes),
            "environment": dict(result.environment),
        },
    }
