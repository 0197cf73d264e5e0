"""results.json as the Gradescope autograder hands it to Gradescope, which shows it to the student right away.

The tests are those of ``gradescope_results`` (public checks ``visible``, hidden ones ``after_published``: Gradescope
shows them once the instructor publishes the grades). Its top-level ``output``, which the student sees at once, is
written for them: how many public checks passed and how many hidden checks there are, never a hidden check's result
or its question's total, and why a submission could not be graded. It is made from ``result.for_student()``, as
the student's page is: never the grader's own trace.
"""

from __future__ import annotations

from typing import Any

from grader.record.gradescope import gradescope_results
from grader.results import GRADED, INTERNAL, PUBLIC, SubmissionResult, status_label


def _student_summary(result: SubmissionResult) -> str:
    """The top-level output: ``result`` as the student may see it (its ``for_student()``)."""
    public = [c for c in result.checks if c.visibility == PUBLIC]
    hidden = len(result.checks) - len(public)
    lines = []
    if result.status == INTERNAL:
        lines.append("The grader itself failed on your submission; this is not your fault. Your instructor can see "
                     "what happened and will grade it again.")
    elif result.status != GRADED:
        lines.append(f"Your submission could not be graded ({status_label(result.status)}): {result.reason}")
    passed = sum(1 for c in public if c.passed)
    lines.append(f"Public checks: {passed} of {len(public)} passed.")
    if hidden:
        lines.append(f"Hidden checks: {hidden}, counted in your score; their results are shown when your instructor "
                     f"publishes the grades.")
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines)


def autograder_results(result: SubmissionResult) -> dict[str, Any]:
    """Gradescope's results.json for one submission graded by the autograder zip."""
    data = gradescope_results(result)
    data["output"] = _student_summary(result.for_student())
    data["output_format"] = "text"
    data["stdout_visibility"] = "hidden"  # the autograder's stdout is for the instructor
    return data
