"""Where a class's submissions are graded: the back-ends, one interface, one choice.

Each back-end is built with the run's settings and has ``grade(to_grade, clock) -> Iterator[Arrival]`` (results in
the order they finish, each stage's time added to ``clock``), ``close()``, ``stop()`` (for a run that ends before its
results are in: a signal, a full disk; what is being graded is abandoned, its processes killed, not waited for), and
``processes``/``peak_mib`` (grading processes of this machine besides the run's own, and the largest of their peak
memories):

- ``Threads`` (threads.py): threads of the run's own process, each with a warm worker; a small class's.
- ``Processes`` (processes.py): job processes that also write the students' pages, for a large class; what a job
  process that died left goes to threads.
- ``Dask`` (dask.py): a Dask cluster's workers (``--scheduler``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Protocol

from grader.check.spec import Assignment
from grader.discover import Submission
from grader.pipeline.backends.arrival import Arrival
from grader.pipeline.backends.processes import PROCESSES_FROM, Processes
from grader.pipeline.backends.threads import Threads
from grader.pipeline.settings import PagesSettings, RunSettings
from grader.pipeline.stage_times import StageClock


class Backend(Protocol):
    processes: int
    peak_mib: int

    def grade(self, to_grade: Sequence[Submission], clock: StageClock) -> Iterator[Arrival]: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


@contextmanager
def closing(backend: Backend) -> Iterator[Backend]:
    """``backend``, closed when the block ends, and stopped first when the block ends by an exception."""
    try:
        yield backend
    except BaseException:
        with suppress(Exception):  # what ended the run is what it reports
            backend.stop()
        raise
    finally:
        backend.close()


def choose_backend(spec: Assignment, settings: RunSettings, pages: PagesSettings, *, to_grade: int,
                   jobs: int | None, scheduler: str | None, job_processes: bool | None) -> Backend:
    """The cluster at ``scheduler`` when there is one; else ``jobs`` at a time (default: one per core, never more
    than there are submissions), as processes when ``job_processes`` says so (None: for a class of at least
    PROCESSES_FROM to grade), else as threads."""
    if scheduler:
        from grader.pipeline.backends.dask import Dask  # distributed is imported only for a cluster

        return Dask(scheduler, spec, settings)
    workers = min(jobs or os.cpu_count() or 1, max(1, to_grade))
    if workers > 1 and (job_processes if job_processes is not None else to_grade >= PROCESSES_FROM):
        return Processes(workers, spec, settings, pages)
    return Threads(workers, spec, settings)


def fresh_process(spec: Assignment, settings: RunSettings, pages: PagesSettings) -> Backend:
    """For the submissions the grader failed on: a job process started for them, a fresh interpreter and a fresh warm
    worker, whatever state the first attempt left in this process, its threads or its worker (a cluster's
    included). It writes their files as any job process does; should it die, one thread of this process grades
    them."""
    return Processes(1, spec, settings, pages)


__all__ = ["PROCESSES_FROM", "Arrival", "Backend", "Processes", "Threads", "choose_backend", "closing",
           "fresh_process"]
