"""Report stage: HTML pages rendered with Jinja2 from the results alone."""

from grader.report.render import render_dashboard, render_instructor_report, render_student_report

__all__ = ["render_dashboard", "render_instructor_report", "render_student_report"]
