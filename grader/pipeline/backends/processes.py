"""Grading jobs as processes of their own, for a large class: each job grades whole submissions with its own warm
worker and writes each student's files (results.json and the two pages, this run's manual marks and late penalty
applied); the run's process records the results in the gradebook as they arrive.

Why processes: the grader's side of a check (the inputs, the references, the comparisons) is Python, and jobs that
are threads of one process take turns holding its interpreter lock while their students' processes wait for them.
Measured with 200 notebooks on 2 cores (``make bench``): threads leave the cores idle a quarter of the time; two
graders side by side, almost never. The job processes' server costs half a second to start, and results come back
as JSON, so a class with few submissions to grade is graded by threads (``PROCESSES_FROM``).

Jobs are forked from a server process that imported the grader once (multiprocessing's ``forkserver``), never from
the run's own process, which holds threads. The grader's side never imports torch (the checks compare with NumPy
references; only the student's processes, forked from their zygotes, hold torch): preloading it here cost each run
two seconds of one core before the first result. What comes back is the result as JSON (result_json), as from
a Dask worker (dask.py), and each stage's seconds. A job process that dies (killed, out of memory) takes no
result with it: what it left is graded by threads of the run's own process (``Processes``, threads.py).

A job process ends with the run however the run ends: asked to (SIGTERM or SIGHUP, from ``JobProcesses.stop``: it
kills its warm worker and exits at once, whatever it was grading), or on its own when the run's process has ended,
which it watches (grader/execute/lifetime.py: its parent is the job server, not the run). A terminal's Ctrl-C reaches
the job processes too, as members of the run's process group: they leave it to the run, which stops them.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import resource
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from grader.adjust import Adjustments
from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.execute import isolation, lifetime
from grader.execute.workers import WorkerPool
from grader.pipeline.backends.arrival import Arrival
from grader.pipeline.backends.threads import Threads
from grader.pipeline.settings import PagesSettings, RunSettings
from grader.pipeline.stage_times import StageClock
from grader.pipeline.student_files import write_student_files
from grader.pipeline.submission_run import grade_for_run
from grader.record.result_json import result_from_json, result_to_json
from grader.stack_dump import stacks_on_request

PROCESSES_FROM = 40  # submissions to grade, at least, for jobs to be processes rather than threads
STOP_SECONDS = 3.0  # for a job process asked to stop to kill its worker and exit; then it is killed

_job: dict[str, Any] = {}  # in a job process: its settings, assignment and warm worker


def _end_job(signum: int, _frame: object) -> None:
    """In a job process asked to stop: its worker killed (and its groups removed), then out at once, without
    unwinding what it was doing or running multiprocessing's finalizers, which wait for the worker's zygote."""
    pool = _job.get("pool")
    if pool is not None:
        pool.stop()
    os._exit(128 + signum)


def _leave_to_the_run(_signum: int, _frame: object) -> None:
    pass


def _start_job(settings: RunSettings, pages: PagesSettings, run: lifetime.Owner) -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _end_job)
    # The run decides what a Ctrl-C stops, and stops this process. Handled rather than ignored: an ignored signal
    # would stay ignored in the zygotes and students this process starts.
    signal.signal(signal.SIGINT, _leave_to_the_run)
    stacks_on_request()
    lifetime.stop_when_gone(run, STOP_SECONDS)  # a run killed outright does not stop its job processes itself
    spec = load_assignment(settings.assignment, solutions_dir=settings.solutions_dir)
    pool = WorkerPool(size=1, sandbox=isolation.detect(settings.sandbox), device=settings.device,
                      limits=settings.limits, warm_up=spec.warm_up)
    # A job process ends through multiprocessing, which runs its finalizers, not atexit's handlers.
    multiprocessing.util.Finalize(pool, pool.close, exitpriority=10)
    # The files the run read its own from at its start, under the output folder's lock: the same marks here.
    _job.update(settings=settings, pages=pages, pool=pool, spec=spec,
                adjust=Adjustments(pages.out_dir, spec, pages.rule, review=pages.review))


def _grade(submission: Submission) -> tuple[str, dict[str, float], tuple[float, float], int]:
    clock = StageClock()
    with _job["pool"].acquire() as worker:
        result = grade_for_run(submission, _job["spec"], _job["settings"], worker=worker, clock=clock)
    result = _job["adjust"].apply(result, submission)
    rendered = write_student_files(_job["pages"].out_dir, result, _job["spec"].title, submission, clock)
    return result_to_json(result), clock.seconds(), rendered, _peak_mib()


def _peak_mib() -> int:
    """This process's peak memory (its zygote's is the sandbox's, counted apart)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> (20 if sys.platform == "darwin" else 10)


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


class JobProcesses:
    """``jobs`` grading processes, started on first use, each with one warm worker."""

    def __init__(self, jobs: int, settings: RunSettings, pages: PagesSettings) -> None:
        self.executor = ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=_start_job,
                                            initargs=(settings, pages, lifetime.this_process()))
        self.size = jobs
        self.failure = ""  # why the job processes stopped, when they did
        self.peak_mib = 0  # the largest peak memory a job process reported

    def grade(self, submissions: Sequence[Submission], clock: StageClock) -> Iterator[Arrival]:
        """(submission, its result or what failed, how long its two pages took to render or None), in the order
        they finish; each stage's time added to ``clock``. A submission whose job process died comes back with
        BrokenProcessPool: it was not graded."""
        owners: dict[Future[tuple[str, dict[str, float], tuple[float, float], int]], Submission] = {
            self.executor.submit(_grade, submission): submission for submission in submissions}
        for future in as_completed(owners):
            submission = owners.pop(future)
            try:
                text, seconds, rendered, peak = future.result()
            except BrokenProcessPool as exc:
                self.failure = self.failure or str(exc)
                yield submission, exc, None
                continue
            except Exception as exc:  # a grader bug: this submission's result says so
                yield submission, exc, None
                continue
            for stage, spent in seconds.items():
                clock.add(stage, spent)
            self.peak_mib = max(self.peak_mib, peak)
            yield submission, result_from_json(text), rendered

    def stop(self) -> None:
        """End the job processes now, without waiting for what they are grading: each is asked to stop (it kills
        its warm worker), and killed if it has not within STOP_SECONDS. The executor's own shutdown would wait for
        every running submission, and so would its exit handler."""
        running = list((getattr(self.executor, "_processes", None) or {}).values())  # no public way to reach them
        for process in running:
            process.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        while running and time.monotonic() < deadline:
            # Their sentinels say they ended, without reading the exit status that the executor's thread reads.
            ended = multiprocessing.connection.wait([p.sentinel for p in running], deadline - time.monotonic())
            running = [p for p in running if p.sentinel not in ended]
        for process in running:
            process.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


class Processes:
    """The back-end: ``JobProcesses``, and threads of this process (``workers`` of them) for what a job process that
    died, or never started, left."""

    def __init__(self, workers: int, spec: Assignment, settings: RunSettings, pages: PagesSettings) -> None:
        self.jobs = JobProcesses(workers, settings, pages)
        self.fallback = Threads(workers, spec, settings)

    @property
    def processes(self) -> int:
        return self.jobs.size

    @property
    def peak_mib(self) -> int:
        return self.jobs.peak_mib

    def grade(self, to_grade: Sequence[Submission], clock: StageClock) -> Iterator[Arrival]:
        lost: list[Submission] = []
        for submission, outcome, rendered in self.jobs.grade(to_grade, clock):
            if isinstance(outcome, BrokenProcessPool):
                lost.append(submission)
            else:
                yield submission, outcome, rendered
        if lost:
            print(f"warning: the grading processes stopped ({self.jobs.failure or 'no reason given'}); grading "
                  f"the {len(lost)} submission(s) left in this process", file=sys.stderr, flush=True)
            yield from self.fallback.grade(lost, clock)

    def stop(self) -> None:
        self.jobs.stop()
        self.fallback.stop()

    def close(self) -> None:
        self.fallback.close()
        self.jobs.close()
