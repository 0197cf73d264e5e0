"""A student's files in the output folder: results.json (Gradescope's format), their page and their instructor page."""

from __future__ import annotations

import html
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from grader import points
from grader.discover import Submission
from grader.files import write_text_atomic
from grader.names import terminal_text
from grader.pipeline.stage_times import StageClock
from grader.record import gradescope_results
from grader.record.output import OutputFolder
from grader.report import render_instructor_report, render_student_report
from grader.results import SubmissionResult

FALLBACK_MARK = "<!-- grader: fallback page -->"


def _drawn(render: Callable[[], str], result: SubmissionResult) -> str:
    """The page ``render`` draws; should drawing fail on something of this one student's (a name, a message the
    templates did not expect), a plain page with the score, marked so that the run's accounting lists it: one
    student's odd data never stops the class."""
    try:
        return render()
    except Exception as exc:  # any failure to draw one student's page is that page's
        print(f"warning: the page of {terminal_text(result.student)} could not be drawn ({type(exc).__name__}: "
              f"{terminal_text(str(exc))[:200]}); a plain page with the score is written instead", file=sys.stderr)
        reason = html.escape(f"{type(exc).__name__}: {exc}"[:500])
        score = f"{points.shown(result.score)} / {points.shown(result.max_score)}"
        return (f"{FALLBACK_MARK}<!doctype html><meta charset=\"utf-8\"><title>{html.escape(result.assignment)}"
                f"</title><p>Score: {score} ({html.escape(result.status)}).</p><p>The full page could not be drawn: "
                f"{reason}.</p>")


def write_student_files(out_dir: Path, result: SubmissionResult, title: str, submission: Submission | None,
                        clock: StageClock | None = None) -> tuple[float, float]:
    """Write a student's files; return how long rendering their page and their instructor page took."""
    folder = OutputFolder(out_dir).student(result.student)
    recording = time.perf_counter()
    write_text_atomic(folder.results_json, json.dumps(gradescope_results(result), indent=2) + "\n")
    started = time.perf_counter()
    if clock is not None:
        clock.add("record", started - recording)
    page = _drawn(lambda: render_student_report(result, title=title,
                                                name=submission.name if submission is not None else ""), result)
    rendered = time.perf_counter()
    instructor_page = _drawn(lambda: render_instructor_report(result, title=title, submission=submission), result)
    done = time.perf_counter()
    write_text_atomic(folder.instructor, instructor_page)
    write_text_atomic(folder.report, page)
    if clock is not None:
        clock.add("report", time.perf_counter() - started)
    return rendered - started, done - rendered
