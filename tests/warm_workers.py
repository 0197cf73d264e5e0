"""Warm workers shared by a test module: for the tests that grade one submission at a time (``grade_one``), and for
the modules that grade many small classes (``warm_class_runs``).

``grade_submission`` without a worker starts one for that submission alone, and a class run starts its own pool: a
zygote that imports torch, 2-3 s of a core each, which was most of what such a test took. Here a test module's
submissions are forked from warm workers kept for the module, one pool per (size, sandbox, device, limits), as a
class run's students are forked from its pool: a worker is cleaned between two submissions and replaced when it
cannot be (``WorkerPool.acquire``), so a class run reusing the module's workers grades exactly as with its own. The
workers are closed when the module's tests end (``conftest.py``), so no zygote of one module is alive while another
runs: the tests that look for a run's leftover processes see only their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from grader.check.spec import Assignment
from grader.discover import Submission
from grader.execute import isolation
from grader.execute.isolation import Sandbox
from grader.execute.limits import Limits
from grader.execute.workers import WarmUp, Worker, WorkerPool
from grader.pipeline import grade_submission
from grader.pipeline.backends import threads
from grader.results import SubmissionResult


def grade_one(*, submission: Submission, assignment: Assignment, root: Path, limits: Limits | None = None,
              device: str = "cpu") -> SubmissionResult:
    """``grade_submission`` with the module's warm worker for these limits, started on first use."""
    limits = limits or assignment.limits
    pool = module_pool(size=1, sandbox=isolation.detect(), device=device, limits=limits, warm_up=assignment.warm_up)
    with pool.acquire() as worker:
        return grade_submission(submission=submission, assignment=assignment, root=root, limits=limits,
                                device=device, worker=worker)


class ModulePool(WorkerPool):
    """A class run's pool that outlives the run: the run's ``close`` leaves its workers warm for the module's next
    class run; ``stop`` (a run interrupted) ends them for good, and the next run gets a fresh pool.

    Its workers are started by a thread of the pool's own: a sandbox dies with the thread that started it
    (bubblewrap's --die-with-parent is the kernel's parent-death signal, which follows the starting thread, not its
    process), and a run's grading threads end with the run."""

    def __init__(self, *, size: int, sandbox: Sandbox, device: str, limits: Limits, warm_up: WarmUp = "") -> None:
        super().__init__(size=size, sandbox=sandbox, device=device, limits=limits, warm_up=warm_up)
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="module-workers")

    @contextmanager
    def acquire(self) -> Iterator[Worker]:
        with super().acquire() as worker:
            if not worker.alive and not worker.retired:
                self._starter.submit(worker.start).result()
            yield worker

    def close(self) -> None:
        pass  # close_all ends it, with the module

    def stop(self) -> None:
        super().stop()
        _class_pools.pop(self.key, None)
        self.end()

    def end(self) -> None:
        WorkerPool.close(self)
        self._starter.shutdown()

    @property
    def key(self) -> tuple[int, Sandbox, str, Limits, bool]:
        return len(self._all), self.sandbox, self.device, self.limits, self._all[0].warm_up


_class_pools: dict[tuple[int, Sandbox, str, Limits, bool], ModulePool] = {}


def module_pool(*, size: int, sandbox: Sandbox, device: str, limits: Limits, warm_up: WarmUp = "") -> ModulePool:
    """The module's pool for a class run's workers (what the threads back-end asks ``WorkerPool`` for)."""
    key = (max(1, size), sandbox, device, limits, warm_up)
    if key not in _class_pools:
        _class_pools[key] = ModulePool(size=size, sandbox=sandbox, device=device, limits=limits, warm_up=warm_up)
    return _class_pools[key]


@contextmanager
def class_runs_on_module_workers() -> Iterator[None]:
    """In-process class runs (the threads back-end: fewer than 40 submissions) fork their students from the
    module's warm workers instead of starting a pool each (conftest.py's ``warm_class_runs``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threads, "WorkerPool", module_pool)
        yield


def close_all() -> None:
    """Stop every warm worker (its zygote and sandbox)."""
    while _class_pools:
        _class_pools.popitem()[1].end()
