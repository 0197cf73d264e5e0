"""Warm workers for the tests that grade one submission at a time (``grade_one``).

``grade_submission`` without a worker starts one for that submission alone: a zygote that imports torch, 2-3 s of a
core, which was most of what such a test took. Here a test module's submissions are forked from one warm worker per
(limits, device), as a class run's are: the worker is cleaned between two submissions and replaced when it cannot be
(``WorkerPool.acquire``). The workers are closed when the module's tests end (``conftest.py``), so no zygote of one
module is alive while another runs: the tests that look for a run's leftover processes see only their own.
"""

from __future__ import annotations

from pathlib import Path

from grader.check.spec import Assignment
from grader.discover import Submission
from grader.execute.limits import Limits
from grader.execute.workers import WorkerPool
from grader.pipeline import grade_submission
from grader.results import SubmissionResult

_pools: dict[tuple[Limits, str], WorkerPool] = {}


def grade_one(*, submission: Submission, assignment: Assignment, root: Path, limits: Limits | None = None,
              device: str = "cpu") -> SubmissionResult:
    """``grade_submission`` with the module's warm worker for these limits, started on first use."""
    limits = limits or assignment.limits
    pool = _pools.get((limits, device))
    if pool is None:
        pool = _pools[limits, device] = WorkerPool(size=1, device=device, limits=limits)
    with pool.acquire() as worker:
        return grade_submission(submission=submission, assignment=assignment, root=root, limits=limits,
                                device=device, worker=worker)


def close_all() -> None:
    """Stop every warm worker (its zygote and sandbox)."""
    while _pools:
        _pools.popitem()[1].close()
