"""A class run's settings: what decides a result besides the submission (``RunSettings``), and where the students'
pages go with the deadline rule applied to them (``PagesSettings``).

Both are built once, in ``grade_class``, and travel as they are: to the threads grading on this machine, to the job
processes (pickled), and to a Dask cluster's workers, which refuse to grade when their own fingerprint differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.adjust import DeadlineRule
from grader.adjust.review_marks import ReviewMarks
from grader.execute.limits import Limits


@dataclass(frozen=True)
class RunSettings:
    """Every result of a run depends on the submission and these alone."""

    assignment: str
    solutions_dir: Path  # the folder holding the assignment's solutions folder
    root: Path  # the submissions folder, which results name files relative to
    device: str
    limits: Limits  # the assignment's, with the run's --limit overrides
    sandbox: str  # the isolation mode (require, partial, off); each machine detects its own layers for it
    fingerprint: str  # grading_fingerprint of the above and the solutions' files (fingerprint.py)
    # What student code could reach on this machine for want of a sandbox layer (Sandbox.exposure; "" when nothing
    # is missing): a result graded with less isolation than this is graded again.
    exposed: str = ""


@dataclass(frozen=True)
class PagesSettings:
    """Where the students' files go, and the deadline rule the run applies (with OUT's manual marks, extensions)."""

    out_dir: Path
    rule: DeadlineRule
    # The review app's marks and overrides as the run read them at its start: job processes apply these, and never
    # open the gradebook for them (a job process waiting on its lock would not stop at once).
    review: ReviewMarks = field(default_factory=ReviewMarks)
