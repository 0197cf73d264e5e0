"""Grading on a Dask distributed cluster (``grader grade ... --scheduler ADDRESS``), for a course of thousands.

Each Dask worker grades whole submissions exactly as a local run does: the same warm workers (one per Dask worker
thread, started on first use), the same sandbox, the same checks. What travels is plain data: the submission's bytes
and where it came from one way, the result as JSON the other (result_json), so a worker needs no shared file system,
only this grader and the same solutions installed. A worker whose solutions, grader, torch, NumPy, device or limits
differ from the client's would grade differently (the run's fingerprint, in its RunSettings, says so): it refuses,
and the submission is reported as a grader error.

Start a scheduler on one machine and workers on every machine (each with this checkout and `make install`)::

    .venv/bin/dask scheduler                                    # prints tcp://HOST:8786
    .venv/bin/dask worker tcp://HOST:8786 --nworkers 1 --nthreads 8 --name "$(hostname)"
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import MAX_SUBMISSION_BYTES, Submission
from grader.errors import ConfigurationError
from grader.execute import isolation
from grader.execute.limits import Limits
from grader.execute.workers import WarmUp, WorkerPool
from grader.paths import SOLUTIONS_DIR
from grader.pipeline.backends.arrival import Arrival
from grader.pipeline.fingerprint import grading_fingerprint
from grader.pipeline.resume import source_of
from grader.pipeline.settings import RunSettings
from grader.pipeline.stage_times import StageClock
from grader.pipeline.submission_run import grade_for_run
from grader.record.result_json import result_from_json, result_to_json


@dataclass(frozen=True)
class Parcel:
    """A submission as it travels to a Dask worker: its bytes and what discovery knew about it."""

    student: str
    source: str  # its path relative to the submissions folder, as results record it
    kind: str
    content: bytes
    submitted_at: str
    notes: tuple[str, ...]


def pack(submission: Submission, root: Path) -> Parcel | None:
    """The parcel for ``submission``, or None for a file that will be refused unread (a link out of the folder, a
    pipe, an unreadable or oversized file): the client grades those itself, at no cost."""
    if submission.problem:
        return None
    try:
        with open(submission.path, "rb") as handle:
            content = handle.read(MAX_SUBMISSION_BYTES + 1)
    except OSError:
        return None
    if len(content) > MAX_SUBMISSION_BYTES:
        return None
    return Parcel(submission.student, source_of(submission, root), submission.kind, content,
                  submission.submitted_at.isoformat(), submission.notes)


# ----- on a Dask worker -------------------------------------------------------------------------------------------
@functools.cache
def _assignment(name: str) -> Assignment:
    return load_assignment(name, solutions_dir=SOLUTIONS_DIR)


@functools.cache
def _warm_pool(sandbox: str, device: str, limits: Limits, size: int, warm_up: WarmUp) -> WorkerPool:
    """This Dask worker's warm workers, one per thread, kept for every task it runs."""
    pool = WorkerPool(size=size, sandbox=isolation.detect(sandbox), device=device, limits=limits, warm_up=warm_up)
    atexit.register(pool.close)
    return pool


def _threads() -> int:
    try:
        from distributed import get_worker

        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):  # called outside a Dask worker (the tests, a local call)
        return 1


def grade_parcel(parcel: Parcel, settings: RunSettings) -> str:
    """Grade one submission on this machine (its own solutions folder, its own sandbox's layers); the result as
    JSON. Runs on a Dask worker."""
    spec = _assignment(settings.assignment)
    mine = grading_fingerprint(spec, device=settings.device, limits=settings.limits)
    if mine != settings.fingerprint:
        raise ConfigurationError(
            f"this Dask worker would grade {settings.assignment} differently from the machine that sent it (its "
            "solutions, grader version, torch, NumPy, device or limits differ): install the same checkout on "
            "every worker")
    pool = _warm_pool(settings.sandbox, settings.device, settings.limits, _threads(), spec.warm_up)
    with tempfile.TemporaryDirectory(prefix="grader-parcel-") as folder:
        root = Path(folder)
        path = root / parcel.source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(parcel.content)
        submission = Submission(parcel.student, path, parcel.kind, datetime.fromisoformat(parcel.submitted_at),
                                parcel.notes)
        with pool.acquire() as worker:
            result = grade_for_run(submission, spec, dataclasses.replace(settings, root=root), worker=worker)
    return result_to_json(result)


# ----- on the client ----------------------------------------------------------------------------------------------
class Dask:
    """The back-end: sends submissions to the cluster at ``address`` and hands back each result as it arrives; the
    client writes the pages."""

    processes = 0  # grading processes of this machine besides the run's own
    peak_mib = 0

    def __init__(self, address: str, spec: Assignment, settings: RunSettings) -> None:
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - distributed is pinned in requirements.txt
            raise ConfigurationError("--scheduler needs the distributed package (make install)") from exc
        try:
            self.client = Client(address, timeout="20s")
        except OSError as exc:
            raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
        self.spec = spec
        self.settings = settings
        self._waiting: dict[str, Any] = {}  # this run's futures on the cluster, by key, until each is taken

    def grade(self, to_grade: Sequence[Submission], clock: StageClock) -> Iterator[Arrival]:
        """The stages' times are the workers' own, not added to ``clock``."""
        from distributed import as_completed

        owners, refused = {}, []
        for submission in to_grade:
            parcel = pack(submission, self.settings.root)
            if parcel is None:
                refused.append(submission)
                continue
            future = self.client.submit(grade_parcel, parcel, self.settings, pure=False,
                                        key=f"grade-{self.settings.assignment}-{submission.student}-{id(submission)}")
            owners[future.key] = (submission, future)
            self._waiting[future.key] = future
        for submission in refused:  # refused unread: graded here, without running anything
            yield submission, grade_for_run(submission, self.spec, self.settings), None
        for future in as_completed([future for _, future in owners.values()]):
            submission = owners[future.key][0]
            try:
                yield submission, result_from_json(future.result()), None
            except Exception as exc:  # the worker's own failure: this submission's result says so
                yield submission, exc, None
            finally:
                self._waiting.pop(future.key, None)
                future.release()

    def stop(self) -> None:
        """Cancel this run's tasks: the scheduler forgets those not started, and a task running on a worker runs to
        its end there (a thread cannot be interrupted), its result dropped. Closing the client, or losing it (the run
        killed), releases them all the same: the scheduler forgets every task no client wants."""
        self.client.cancel(list(self._waiting.values()), force=True)

    def close(self) -> None:
        self.client.close()
