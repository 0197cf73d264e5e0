"""The test modules' shared warm workers (tests/warm_workers.py): small class runs in a module that opts in fork
their students from the module's workers, grade exactly as a run with its own pool does, and a worker outlives the
run's threads that used it."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.execute import isolation
from grader.execute.workers import Worker, WorkerPool
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class
from grader.pipeline.backends import threads

from .conftest import SAMPLES
from .warm_workers import module_pool

pytestmark = pytest.mark.usefixtures("warm_class_runs")

CLASS = ("textbook.ipynb", "mistake_softmax_axis.py")  # a correct notebook, a q1 mistake


def verdicts(run: ClassRun) -> dict[str, dict[str, tuple[str, float, str]]]:
    return {r.student: {c.check_id: (c.status, c.score, c.message) for c in r.checks} for r in run.results}


def test_class_runs_in_a_module_share_its_workers_and_grade_as_with_their_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in CLASS:
        shutil.copy2(SAMPLES / name, tmp_path / name)
    started: list[Worker] = []
    start = Worker.start

    def counted(self: Worker, *args: object, **kwargs: object) -> None:
        started.append(self)
        start(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Worker, "start", counted)
    shared = [grade_class(RunRequest(assignment="attention_scoring", submissions_dir=tmp_path,
                                     out_dir=tmp_path / f"out{i}"), RunOptions(jobs=2)) for i in range(3)]
    assert len(started) == 2, "the second and third runs started workers of their own"
    monkeypatch.setattr(threads, "WorkerPool", WorkerPool)  # a run with a pool of its own, as outside the tests
    own = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=tmp_path, out_dir=tmp_path / "own"),
                      RunOptions(jobs=2))
    assert len(started) == 4
    assert {r.student for r in own.results} == {Path(name).stem for name in CLASS}
    for run in shared:
        assert verdicts(run) == verdicts(own)
    assert any(status != "passed" for checks in verdicts(own).values() for status, _, _ in checks.values())


def test_a_worker_outlives_the_thread_that_first_graded_with_it() -> None:
    """A run's grading threads end with the run; the module's next run must find the worker alive."""
    limits = load_assignment("attention_scoring").limits
    pool = module_pool(size=1, sandbox=isolation.detect(), device="cpu", limits=limits)
    used: list[Worker] = []

    def grade_in_a_thread() -> None:
        with pool.acquire() as worker:
            if not worker.alive:  # what a submission's first load does (check/runner.py)
                worker.start()
            used.append(worker)

    thread = threading.Thread(target=grade_in_a_thread)
    thread.start()
    thread.join()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and used[0].alive:
        time.sleep(0.05)
    assert used[0].alive, "the worker died with the thread that started it"


def test_a_stopped_run_leaves_the_next_one_a_fresh_pool() -> None:
    limits = load_assignment("attention_scoring").limits
    sandbox = isolation.detect()
    pool = module_pool(size=1, sandbox=sandbox, device="cpu", limits=limits)
    with pool.acquire() as worker:
        assert worker.alive
    pool.stop()  # a run interrupted (Ctrl-C) stops its pool
    assert not worker.alive
    fresh = module_pool(size=1, sandbox=sandbox, device="cpu", limits=limits)
    assert fresh is not pool
    with fresh.acquire() as again:
        assert again.alive and again is not worker
