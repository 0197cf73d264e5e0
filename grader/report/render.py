"""Render the student report and the class dashboard from results (templates in the top-level templates/)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import jinja2

from grader.layout import TEMPLATES_DIR
from grader.results import PUBLIC, SubmissionResult


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["points"] = lambda value: f"{value:g}"
    return env


def render_student_report(result: SubmissionResult, *, title: str) -> str:
    """The student's page: hidden checks show their name and result only (their message is already safe)."""
    return _environment().get_template("report.html.j2").render(r=result, title=title, PUBLIC=PUBLIC)


def render_dashboard(results: Sequence[SubmissionResult], *, title: str, skipped: Sequence[Any] = (),
                     max_score: float) -> str:
    ordered = sorted(results, key=lambda r: r.student)
    failed_to_run = [r for r in ordered if r.status != "graded"]
    question_ids = [q.id for q in ordered[0].questions] if ordered else []
    averages = {}
    for qid in question_ids:
        scores = [q.score / q.max_score for r in ordered for q in r.questions if q.id == qid and q.max_score]
        averages[qid] = 100 * sum(scores) / len(scores) if scores else 0.0
    return _environment().get_template("dashboard.html.j2").render(
        results=ordered, title=title, failed=failed_to_run, skipped=skipped, question_ids=question_ids,
        averages=averages, max_score=max_score)
