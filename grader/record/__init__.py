"""Record stage: results.json (Gradescope format), the SQLite gradebook, grades.csv and lms.csv."""

from grader.record.gradebook import Gradebook
from grader.record.grades_csv import write_grades_csv
from grader.record.gradescope import gradescope_results
from grader.record.lms_csv import write_lms_csv

__all__ = ["Gradebook", "gradescope_results", "write_grades_csv", "write_lms_csv"]
