"""Grading on a Dask distributed cluster (``grader grade ... --scheduler ADDRESS``), for a course of thousands.

Each Dask worker grades whole submissions exactly as a local run does: the same warm workers (one per Dask worker
thread, started on first use), the same sandbox, the same checks. What travels is plain data: the submission's bytes
and where it came from one way, the result as JSON the other (result_json), so a worker needs no shared file system,
only this grader and the same solutions installed. A worker whose solutions, grader, torch, NumPy, device or limits
differ from the client's would grade differently: it refuses, and the submission is reported as a grader error.

Start a scheduler on one machine and workers on every machine (each with this checkout and `make install`)::

    .venv/bin/dask scheduler                                    # prints tcp://HOST:8786
    .venv/bin/dask worker tcp://HOST:8786 --nworkers 1 --nthreads 8 --name "$(hostname)"
"""

from __future__ import annotations

import atexit
import functools
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import MAX_SUBMISSION_BYTES, Submission
from grader.errors import ConfigurationError
from grader.execute import isolation
from grader.execute.limits import Limits
from grader.execute.workers import WorkerPool
from grader.layout import SOLUTIONS_DIR
from grader.pipeline.fingerprint import grading_fingerprint
from grader.pipeline.resume import source_of
from grader.pipeline.submission_run import grade_submission
from grader.record.result_json import result_from_json, result_to_json
from grader.results import SubmissionResult


@dataclass(frozen=True)
class Parcel:
    """A submission as it travels to a Dask worker: its bytes and what discovery knew about it."""

    student: str
    source: str  # its path relative to the submissions folder, as results record it
    kind: str
    content: bytes
    submitted_at: str
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Grading:
    """What decides a result besides the submission; the worker checks that it would grade the same way."""

    assignment: str
    fingerprint: str
    device: str
    limits: Limits
    sandbox: str


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
def _warm_pool(sandbox: str, device: str, limits: Limits, size: int) -> WorkerPool:
    """This Dask worker's warm workers, one per thread, kept for every task it runs."""
    pool = WorkerPool(size=size, sandbox=isolation.detect(sandbox), device=device, limits=limits)
    atexit.register(pool.close)
    return pool


def _threads() -> int:
    try:
        from distributed import get_worker

        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):  # called outside a Dask worker (the tests, a local call)
        return 1


def grade_parcel(parcel: Parcel, grading: Grading) -> str:
    """Grade one submission on this machine; the result as JSON. Runs on a Dask worker."""
    spec = _assignment(grading.assignment)
    mine = grading_fingerprint(spec, device=grading.device, limits=grading.limits)
    if mine != grading.fingerprint:
        raise ConfigurationError(
            f"this Dask worker would grade {grading.assignment} differently from the machine that sent it (its "
            "solutions, grader version, torch, NumPy, device or limits differ): install the same checkout on "
            "every worker")
    pool = _warm_pool(grading.sandbox, grading.device, grading.limits, _threads())
    with tempfile.TemporaryDirectory(prefix="grader-parcel-") as folder:
        root = Path(folder)
        path = root / parcel.source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(parcel.content)
        submission = Submission(parcel.student, path, parcel.kind, datetime.fromisoformat(parcel.submitted_at),
                                parcel.notes)
        with pool.acquire() as worker:
            result = grade_submission(submission=submission, assignment=spec, root=root, device=grading.device,
                                      limits=grading.limits, sandbox=worker.sandbox, worker=worker)
    return result_to_json(result)


# ----- on the client ----------------------------------------------------------------------------------------------
class DaskGrading:
    """Sends submissions to the cluster at ``address`` and hands back each result as it arrives."""

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - distributed is pinned in requirements.txt
            raise ConfigurationError("--scheduler needs the distributed package (make install)") from exc
        try:
            self.client = Client(address, timeout="20s")
        except OSError as exc:
            raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc

    def grade(self, submissions: Sequence[Submission], *, root: Path, grading: Grading,
              ) -> Iterator[tuple[Submission, SubmissionResult | BaseException]]:
        """(submission, its result or the exception grading it raised), in the order they finish."""
        from distributed import as_completed

        owners, refused = {}, []
        for submission in submissions:
            parcel = pack(submission, root)
            if parcel is None:
                refused.append(submission)
                continue
            future = self.client.submit(grade_parcel, parcel, grading, pure=False,
                                        key=f"grade-{grading.assignment}-{submission.student}-{id(submission)}")
            owners[future.key] = (submission, future)
        for submission in refused:  # refused unread: graded here, without running anything
            yield submission, grade_submission(submission=submission, assignment=_assignment(grading.assignment),
                                               root=root, device=grading.device, limits=grading.limits)
        for future in as_completed([future for _, future in owners.values()]):
            submission = owners[future.key][0]
            try:
                yield submission, result_from_json(future.result())
            except Exception as exc:  # the worker's own failure: this submission's result says so
                yield submission, exc
            finally:
                future.release()

    def close(self) -> None:
        self.client.close()
