"""The orchestrator: discover -> execute and check each submission -> record -> report."""

from grader.pipeline.class_run import ClassRun, grade_class
from grader.pipeline.request import RunEvents, RunOptions, RunRequest
from grader.pipeline.submission_run import grade_submission

__all__ = ["ClassRun", "RunEvents", "RunOptions", "RunRequest", "grade_class", "grade_submission"]
