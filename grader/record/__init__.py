"""Record stage: results.json (Gradescope format), the SQLite gradebook, grades.csv and lms.csv."""

# Re-exported while pipeline/ imports it from here; its home is grader/files.py.
from grader.files import write_text_atomic
from grader.record.gradebook import Gradebook
from grader.record.grades_csv import write_grades_csv
from grader.record.gradescope import gradescope_results
from grader.record.lms_csv import write_lms_csv

__all__ = ["Gradebook", "gradescope_results", "write_grades_csv", "write_lms_csv", "write_text_atomic"]
