"""Report stage: HTML pages rendered with Jinja2 from the results (the instructor page also shows the submitted
notebook, read again from its file)."""

from grader.report.render import render_dashboard, render_instructor_report, render_student_report

__all__ = ["render_dashboard", "render_instructor_report", "render_student_report"]
