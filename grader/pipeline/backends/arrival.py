"""What every back-end hands back, one submission at a time, in the order they finish."""

from __future__ import annotations

from grader.discover import Submission
from grader.results import SubmissionResult

# (the submission, its result or what the grader raised on it, how long its student and instructor pages took to
# render when the back-end wrote them, else None: the run writes them)
Arrival = tuple[Submission, SubmissionResult | BaseException, tuple[float, float] | None]
