"""results.json as the Gradescope autograder hands it to Gradescope, which shows it to the student right away.

The tests are those of ``gradescope_results`` (public checks ``visible``, hidden ones ``after_published``: Gradescope
shows them once the instructor publishes the grades). Its top-level ``output``, which the student sees at once, is
written for them: how many public checks passed and how many hidden checks there are, never a hidden check's result
or its question's total, and why a submission could not be graded.
"""

from __future__ import annotations

from typing import Any

from grader.record.gradescope import gradescope_results
from grader.results import GRADED, INTERNAL, PUBLIC, SubmissionResult


def _student_summary(result: SubmissionResult) -> str:
    public = [c for c in result.checks if c.visibility == PUBLIC]
    hidden = len(result.checks) - len(public)
    lines = []
    if result.status == INTERNAL:
        lines.append("The grader itself failed on your submission; this is not your fault. Your instructor can see "
                     "what happened and will grade it again.")
    elif result.status != GRADED:
        lines.append(f"Your submission could not be graded ({result.status}): {result.reason}")
    passed = sum(1 for c in public if c.passed)
    lines.append(f"Public checks: {passed} of {len(public)} passed.")
    if hidden:
        lines.append(f"Hidden checks: {hidden}, counted in your score; their results are shown when your instructor "
                     f"publishes the grades.")
    notes = [n for n in result.notes if "Traceback (most recent call last)" not in n]  # the grader's own, if any
    lines += [f"Note: {note}" for note in notes]
    return "\n".join(lines)


def autograder_results(result: SubmissionResult) -> dict[str, Any]:
    """Gradescope's results.json for one submission graded by the autograder zip."""
    data = gradescope_results(result)
    data["output"] = _student_summary(result)
    data["output_format"] = "text"
    data["stdout_visibility"] = "hidden"  # the autograder's stdout is for the instructor
    return data
