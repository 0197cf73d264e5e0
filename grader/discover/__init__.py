"""Discover stage: find the submissions in a folder and read each into a program of code units."""

from grader.discover.finder import Skipped, Submission, discover
from grader.discover.program import MAX_SUBMISSION_BYTES, CodeUnit, Program, read_program, read_submission

__all__ = ["MAX_SUBMISSION_BYTES", "CodeUnit", "Program", "Skipped", "Submission", "discover", "read_program",
           "read_submission"]
