"""Moved to grader/files.py; kept only so that grader/pipeline/class_run.py (another engineer's file in this round)
imports unchanged until the merge points it at grader.files."""

from grader.files import remove_partial_writes, write_text_atomic

__all__ = ["remove_partial_writes", "write_text_atomic"]
