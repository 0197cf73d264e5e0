"""A student's files in the output folder: results.json (Gradescope's format), their page and their instructor page."""

from __future__ import annotations

import json
import time
from pathlib import Path

from grader.discover import Submission
from grader.files import write_text_atomic
from grader.pipeline.stage_times import StageClock
from grader.record import gradescope_results
from grader.record.output import OutputFolder
from grader.report import render_instructor_report, render_student_report
from grader.results import SubmissionResult


def write_student_files(out_dir: Path, result: SubmissionResult, title: str, submission: Submission | None,
                        clock: StageClock | None = None) -> tuple[float, float]:
    """Write a student's files; return how long rendering their page and their instructor page took."""
    folder = OutputFolder(out_dir).student(result.student)
    recording = time.perf_counter()
    write_text_atomic(folder.results_json, json.dumps(gradescope_results(result), indent=2) + "\n")
    started = time.perf_counter()
    if clock is not None:
        clock.add("record", started - recording)
    page = render_student_report(result, title=title, name=submission.name if submission is not None else "")
    rendered = time.perf_counter()
    instructor_page = render_instructor_report(result, title=title, submission=submission)
    done = time.perf_counter()
    write_text_atomic(folder.instructor, instructor_page)
    write_text_atomic(folder.report, page)
    if clock is not None:
        clock.add("report", time.perf_counter() - started)
    return rendered - started, done - rendered
