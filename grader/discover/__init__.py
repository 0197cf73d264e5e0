"""Discover stage: find the submissions in a folder and read each into a program of code units."""

from grader.discover.finder import Skipped, Submission, discover
from grader.discover.program import CodeUnit, Program, read_program

__all__ = ["CodeUnit", "Program", "Skipped", "Submission", "discover", "read_program"]
