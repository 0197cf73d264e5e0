"""Exports of the grader itself to other platforms: the Gradescope autograder zip.

Not a stage of the pipeline (discover, execute, check, record, report): it packages the whole pipeline, with one
assignment's solutions, to run where the submissions are collected. What the zip runs there is
``grader gradescope-run`` (grader/pipeline/gradescope_run.py).
"""

from grader.export.autograder_zip import AutograderZip, build_autograder_zip

__all__ = ["AutograderZip", "build_autograder_zip"]
