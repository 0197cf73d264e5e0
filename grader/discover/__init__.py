"""Discover stage: find the submissions in a folder and read each into a program of code units."""

from grader.discover.finder import Skipped, Submission
from grader.discover.layouts import LAYOUTS, Discovery, Layout, detect_layout, discover, discover_all
from grader.discover.program import (
    MAX_SUBMISSION_BYTES,
    CodeUnit,
    Program,
    notebook_cells,
    read_program,
    read_submission,
)

__all__ = ["LAYOUTS", "MAX_SUBMISSION_BYTES", "CodeUnit", "Discovery", "Layout", "Program", "Skipped", "Submission",
           "detect_layout", "discover", "discover_all", "notebook_cells", "read_program", "read_submission"]
