"""Discover stage: find the submissions in a folder and read each into a program of code units."""

from grader.discover.finder import Skipped, Submission
from grader.discover.layouts import LAYOUTS, Layout, detect_layout, discover
from grader.discover.program import (
    MAX_SUBMISSION_BYTES,
    CodeUnit,
    Program,
    notebook_cells,
    read_program,
    read_submission,
)

__all__ = ["LAYOUTS", "MAX_SUBMISSION_BYTES", "CodeUnit", "Layout", "Program", "Skipped", "Submission", "detect_layout",
           "discover", "notebook_cells", "read_program", "read_submission"]
