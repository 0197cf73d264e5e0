"""The background work of ``grader serve``: grading threads that take uploads from the queue (a student's uploads in
the order they came, ServeStore.take_next) and grade each with the grader's own code, in a warm sandboxed worker per
thread and assignment, or on a Dask cluster (``scheduler`` in the configuration, as ``grader grade --scheduler``);
and the score sender, which posts each final score to the platform with AGS and tries again, waiting longer each
time up to a bound, until the platform accepts it.

Both read their work from the serve database, so a restart resumes: uploads left being graded are queued again, and
scores not yet accepted are sent again."""

from __future__ import annotations

import dataclasses
import sys
import threading
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grader.adjust import Adjustments, DeadlineRule
from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.errors import ConfigurationError
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.pipeline import grade_submission
from grader.pipeline.backends.dask import grade_parcel, pack
from grader.pipeline.fingerprint import grading_fingerprint
from grader.pipeline.settings import RunSettings
from grader.pipeline.submission_run import grade_for_run, grader_failed_result
from grader.record.gradebook import Gradebook
from grader.record.output import GRADEBOOK
from grader.record.result_json import result_from_json, result_to_json
from grader.results import INTERNAL, SubmissionResult
from grader.serve.config import ServeConfig
from grader.serve.lti import send_score
from grader.serve.store import FAILED, GRADED, Launch, Score, ServeStore, Upload
from grader.times import utc_iso

FIRST_RETRY_S = 2.0
LONGEST_WAIT_S = 300.0  # the bound of the backoff: a platform down for hours is tried every five minutes
IDLE_POLL_S = 1.0
FAULT_PAUSE_S = 5.0


def retry_delay(attempts: int) -> float:
    """How long to wait after the ``attempts``-th refused try: doubling from 2 s, never more than 5 minutes."""
    return min(FIRST_RETRY_S * 2 ** max(attempts - 1, 0), LONGEST_WAIT_S)


def score_payload(launch: Launch, result: SubmissionResult, graded_at: str) -> dict[str, Any]:
    """What AGS is sent for a graded upload: the final score (activity Completed, grading FullyGraded)."""
    return {"userId": launch.sub, "scoreGiven": round(result.score, 4), "scoreMaximum": round(result.max_score, 4),
            "activityProgress": "Completed", "gradingProgress": "FullyGraded",
            "timestamp": graded_at, "comment": f"{result.score:g}/{result.max_score:g} from the grader",
            "assignment": launch.assignment}


class Background:
    """The grading threads and the score sender; ``start`` them, ``stop`` to end (each finishes what it holds)."""

    def __init__(self, config: ServeConfig, store: ServeStore, conf: Any, *,
                 on_graded: Callable[[Upload], None] | None = None) -> None:
        self.config = config
        self.store = store
        self.conf = conf
        self.stopping = threading.Event()
        self.work = threading.Condition()
        self.threads: list[threading.Thread] = []
        self.assignments: dict[str, Assignment] = {n: load_assignment(n, solutions_dir=config.solutions)
                                                   for n in config.assignments}
        self.sandbox = isolation.detect(config.sandbox)
        self.gradebook_lock = threading.Lock()
        self.on_graded = on_graded
        self.cluster: Any = None  # a Dask client, when the configuration names a scheduler
        self.settings: dict[str, RunSettings] = {}
        if config.scheduler:
            self._connect(config.scheduler)

    def _connect(self, address: str) -> None:
        """Grade on the Dask cluster at ``address`` as ``grader grade --scheduler`` does: each upload travels as its
        bytes (a parcel) with the run's settings, and a worker whose grading would differ (its fingerprint) refuses."""
        from distributed import Client

        try:
            self.cluster = Client(address, timeout="20s")
        except OSError as exc:
            raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
        for name, spec in self.assignments.items():
            self.settings[name] = RunSettings(
                assignment=name, solutions_dir=spec.folder.parent if spec.folder is not None else self.config.solutions,
                root=self.data, device="cpu", limits=spec.limits, sandbox=self.sandbox.mode,
                fingerprint=grading_fingerprint(spec, device="cpu", limits=spec.limits),
                exposed=self.sandbox.exposure())

    @property
    def data(self) -> Path:
        return self.config.data

    def start(self) -> None:
        requeued = self.store.requeue_interrupted()
        if requeued:
            print(f"{requeued} upload(s) left being graded by the last stop: queued again", flush=True)
        if pending := self.store.retry_now():
            print(f"{pending} score(s) not yet accepted by the platform: sent again now", flush=True)
        for name in self.config.assignments:
            held = self.held_until(name)
            if retimed := self.store.retime_unsent(name, held):
                print(f"{retimed} score(s) of {name} not yet sent: to be sent "
                      f"{'at ' + utc_iso(datetime.fromtimestamp(held, UTC)) if held else 'now'}, as its policy says",
                      flush=True)
        for index in range(self.config.graders):
            self.threads.append(threading.Thread(target=self._grade_loop, name=f"grader-{index}", daemon=True))
        self.threads.append(threading.Thread(target=self._send_loop, name="score-sender", daemon=True))
        for thread in self.threads:
            thread.start()

    def wake(self) -> None:
        """A new upload or score: the threads look at once instead of at their next poll."""
        with self.work:
            self.work.notify_all()

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.wake()
        for thread in self.threads:
            thread.join(timeout)
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def _wait(self, seconds: float) -> None:
        with self.work:
            if not self.stopping.is_set():
                self.work.wait(seconds)

    # ----- grading ------------------------------------------------------------------------------------------------
    def _grade_loop(self) -> None:
        workers: dict[str, Worker] = {}
        try:
            while not self.stopping.is_set():
                try:
                    upload = self.store.take_next()
                    if upload is None:
                        self._wait(IDLE_POLL_S)
                        continue
                    self.grade(upload, workers)
                except Exception:  # the database refused (a full disk): said, and the thread goes on
                    self._fault("grading")
        finally:
            for worker in workers.values():
                worker.close()

    def grade(self, upload: Upload, workers: dict[str, Worker]) -> None:
        assignment = self.assignments[upload.assignment]
        launch = self.store.launch(upload.launch)
        assert launch is not None
        path = self.data / upload.file
        # The gradebook's name for the student (their platform's id alone is unique in its issuer only).
        student = self.store.student_of(upload.issuer, upload.context, upload.sub)
        submission = Submission(student=student, path=path, kind=upload.kind,
                                submitted_at=datetime.fromisoformat(upload.submitted_at))
        try:
            if self.cluster is not None:
                result = self._grade_on_cluster(submission, assignment, path.parent)
            else:
                worker = workers.get(assignment.name)
                if worker is None:
                    worker = workers[assignment.name] = Worker(sandbox=self.sandbox, device="cpu",
                                                               limits=assignment.limits, warm_up=assignment.warm_up)
                result = grade_submission(submission=submission, assignment=assignment, root=path.parent,
                                          worker=worker)
        except Exception:
            result = grader_failed_result(submission, assignment, path.parent, detail=traceback.format_exc())
        graded_at = datetime.now(UTC).isoformat(timespec="seconds")
        failed = result.status == INTERNAL
        if not failed:
            result = self.adjusted(result, assignment)
        # A score the grader failed on is not the student's: kept for the instructor, never sent.
        to_send = None if failed else (launch, score_payload(launch, result, graded_at))
        held = self.held_until(upload.assignment)
        self.store.finish(upload, status=FAILED if failed else GRADED, reason=result.reason,
                          score=result.score, max_score=result.max_score, result_json=result_to_json(result),
                          score_to_send=to_send, send_from=held)
        with self.gradebook_lock, Gradebook(self.data / GRADEBOOK) as gradebook:
            gradebook.record(result)
        self.wake()
        if self.on_graded is not None:
            self.on_graded(upload)

    def _grade_on_cluster(self, submission: Submission, assignment: Assignment, root: Path) -> SubmissionResult:
        settings = dataclasses.replace(self.settings[assignment.name], root=root)
        parcel = pack(submission, root)
        if parcel is None:  # refused unread (too large, not a file): said here, nothing run
            return grade_for_run(submission, assignment, settings)
        future = self.cluster.submit(grade_parcel, parcel, settings, pure=False)
        try:
            return result_from_json(future.result())
        finally:
            future.release()

    def held_until(self, assignment: str) -> float | None:
        """When a score of ``assignment`` graded now may be sent: when uploads close (the deadline, or the end of
        the late window), where the hidden checks count after it and it is still ahead; None: at once."""
        policy = self.config.policy(assignment)
        if policy.closes is not None and policy.holds_hidden(datetime.now(UTC)):
            return policy.closes.timestamp()
        return None

    def deadline_rule(self, assignment: str) -> DeadlineRule:
        """The late rule an upload of ``assignment`` is scored under (config.Policy.late_rule)."""
        return self.config.policy(assignment).late_rule(self.assignments[assignment].late)

    def adjusted(self, result: SubmissionResult, assignment: Assignment) -> SubmissionResult:
        """``result`` with the instructor's marks: the review app's (``grader review DATA``: written answers marked,
        checks' points overridden, each with its reason) and manual.csv's in the data folder, as ``grader grade``
        puts them on, and the late penalty of an upload in the late window (``deadline_rule``)."""
        with self.gradebook_lock:
            return Adjustments(self.data, assignment, self.deadline_rule(assignment.name)).apply(result, None)

    def send_marks(self, issuer: str, context: str, assignment: str) -> int:
        """The instructor's marks put on each student's latest graded upload of the course's assignment, and each
        score that changed sent again; how many were queued."""
        spec = self.assignments[assignment]
        with self.gradebook_lock:
            adjustments = Adjustments(self.data, spec, self.deadline_rule(assignment))
        queued = 0
        for upload in self.store.latest_graded(issuer, context, assignment):
            launch = self.store.launch(upload.launch)
            if launch is None or upload.result_json is None:
                continue
            result = adjustments.apply(result_from_json(upload.result_json), None)
            last = self.store.scores_of(upload.id)
            changed = last is None or last.payload.get("scoreGiven") != round(result.score, 4)
            to_send = (launch, score_payload(launch, result, datetime.now(UTC).isoformat(timespec="seconds")))
            self.store.adjusted(upload, score=result.score, max_score=result.max_score,
                                result_json=result_to_json(result), score_to_send=to_send if changed else None,
                                send_from=self.held_until(assignment))
            queued += changed
        self.wake()
        return queued

    # ----- scores -------------------------------------------------------------------------------------------------
    def _send_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                for score in self.store.due_scores():
                    if self.stopping.is_set():
                        return
                    self.send(score)
                due = self.store.next_score_due()
            except Exception:
                self._fault("sending scores")
                due = None
            wait = IDLE_POLL_S if due is None else max(0.05, min(IDLE_POLL_S, due - datetime.now(UTC).timestamp()))
            self._wait(wait)

    def _fault(self, what: str) -> None:
        """An unexpected failure in a background thread: printed with its traceback; the thread waits a moment
        and goes on (what it held is taken again: an upload at the next start, a score at its next try)."""
        print(f"grader serve: {what} failed, going on:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
        self._wait(FAULT_PAUSE_S)

    def send(self, score: Score) -> None:
        # The student's outbox is held from the check to the answer kept: a later upload graded meanwhile waits to
        # supersede this score until it is sent, so no stale score can follow it to the platform.
        with self.store.sending(score) as still_due:
            if not still_due:
                return
            try:
                accepted, status, answer = send_score(self.conf, score.issuer, score.client_id, score.ags,
                                                      score.payload)
            except Exception as exc:  # pylti1p3 says an issuer no longer configured with a plain Exception
                accepted, status, answer = False, None, f"{type(exc).__name__}: {exc}"
            self.store.score_tried(score, accepted=accepted, http_status=status, answer=answer,
                                   retry_in_s=0 if accepted else retry_delay(score.attempts + 1))
