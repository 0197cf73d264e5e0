"""Grading on this machine by threads of the run's own process: ``workers`` at a time, each thread with a warm worker
(grader/execute/workers.py) that imports torch once and forks a process per submission. A small class's back-end,
and where the job processes' and a cluster's leftovers are graded."""

from __future__ import annotations

import queue
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from grader.check.spec import Assignment
from grader.discover import Submission
from grader.execute import isolation
from grader.execute.workers import WorkerPool
from grader.pipeline.backends.arrival import Arrival
from grader.pipeline.settings import RunSettings
from grader.pipeline.stage_times import StageClock
from grader.pipeline.submission_run import grade_for_run
from grader.results import SubmissionResult


class Threads:
    """Results in the order they finish, their pages not written (the run writes them)."""

    processes = 0  # grading processes besides the run's own
    peak_mib = 0

    def __init__(self, workers: int, spec: Assignment, settings: RunSettings) -> None:
        self.workers = workers
        self.spec = spec
        self.settings = settings
        self._stack = ExitStack()  # the warm workers and threads, closed with the back-end
        self._warm: list[WorkerPool] = []
        self._threads: list[ThreadPoolExecutor] = []

    def grade(self, to_grade: Sequence[Submission], clock: StageClock) -> Iterator[Arrival]:
        warm = self._stack.enter_context(WorkerPool(size=self.workers, sandbox=isolation.detect(self.settings.sandbox),
                                                    device=self.settings.device, limits=self.settings.limits,
                                                    warm_up=self.spec.warm_up))
        pool = self._stack.enter_context(ThreadPoolExecutor(max_workers=self.workers))  # shut down before the workers
        self._warm.append(warm)
        self._threads.append(pool)

        # Results go through a queue, not the futures: a finished future keeps its result for as long as the future
        # is held, and the whole class's results would stay in memory until the end of the run.
        arrived: queue.Queue[tuple[Submission, SubmissionResult | BaseException]] = queue.Queue()

        def grade(submission: Submission) -> None:
            try:
                with warm.acquire() as worker:
                    arrived.put((submission, grade_for_run(submission, self.spec, self.settings, worker=worker,
                                                           clock=clock)))
            except Exception as exc:  # a grader bug on one submission must not cost the class its results
                arrived.put((submission, exc))

        for submission in to_grade:
            pool.submit(grade, submission)
        for _ in to_grade:
            submission, outcome = arrived.get()
            yield submission, outcome, None

    def stop(self) -> None:
        """Grade nothing more, and end what is being graded: its worker killed, the thread grading it ends at once
        (``close`` then waits for it); the executor's own shutdown would wait for every submission started."""
        for pool in self._threads:
            pool.shutdown(wait=False, cancel_futures=True)
        for warm in self._warm:
            warm.stop()

    def close(self) -> None:
        self._stack.close()
