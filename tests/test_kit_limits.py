"""The student kit holds a student's code to the grader's time limit for a call, and leaves the kernel usable: a
`while True` in masked_softmax ends its checks with the grader's own timeout message, and the next check runs.

A runaway function costs one time limit, not one per check that calls it, in the kit as in the grader (the same
points); a call blocked in C (`time.sleep`) stops at the limit too; and a crash that ends the process (a segfault) is
told by the next check(), in a terminal and in a Jupyter kernel, with the check that ran and the student's line."""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover.finder import KINDS, Submission
from grader.execute import isolation
from grader.execute.limits import Limits
from grader.execute.workers import Worker
from grader.kit import run
from grader.kit.bundle import KIT_FILE, KIT_FOLDER
from grader.kit.crash import SUFFIX, records_folder
from grader.pipeline.self_check import public_only
from grader.pipeline.submission_run import grade_submission
from grader.results import PASSED, TIMEOUT, SubmissionResult

from .conftest import ROOT

NAME = "attention_scoring"
SOLUTION = ROOT / "tests" / "submissions" / NAME / "einsum_style.py"
LIMIT = 0.5  # the quick kit's limit for a call

SPINS = """
def masked_softmax(X, valid_lens):
    while True:
        pass
"""
# `except Exception` in the loop: the interruption is no Exception, so it gets through.
CATCHES = """
def masked_softmax(X, valid_lens):
    while True:
        try:
            X = X + 0
        except Exception:
            pass
"""
# Blocked in C: an asynchronous exception waits for the call to return; a signal interrupts it.
SLEEPS = """
def masked_softmax(X, valid_lens):
    import time
    time.sleep(30)
"""
CRASHES = """
def masked_softmax(X, valid_lens):
    import ctypes
    return ctypes.string_at(0)  # reads address 0: SIGSEGV
"""
FIRST = 'q1 "textbook example: valid_lens [2, 3] (1-D)"'  # attention_scoring's first check, the first to call it


@pytest.fixture(scope="module")
def quick_kit(kits: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The assignment's kit with a 0.5 s limit for a call in place of the grader's (10 s), to keep the test short."""
    folder = tmp_path_factory.mktemp("kit") / KIT_FOLDER
    shutil.copytree(kits / NAME / KIT_FOLDER, folder)
    data = json.loads((folder / KIT_FILE).read_text())
    assert data["call_seconds"] > LIMIT
    data["call_seconds"] = LIMIT
    (folder / KIT_FILE).write_text(json.dumps(data))
    return folder


def _source(extra: str = "") -> str:
    """The model solution without its examples (they would call the function under test first), and ``extra``."""
    text = SOLUTION.read_text()
    return text[:text.index('if __name__ == "__main__":')] + extra


def _namespace(extra: str = "") -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "student"}
    exec(compile(_source(extra), str(SOLUTION), "exec"), namespace)
    return namespace


def _not_called_again(where: str = FIRST, limit: float = LIMIT) -> str:
    return f"not called again: your masked_softmax did not answer within the time limit ({limit:g} s) in {where}"


@pytest.mark.parametrize("loop", [SPINS, CATCHES, SLEEPS], ids=["spins", "catches_exceptions", "sleeps_in_c"])
def test_a_call_past_the_limit_times_out_as_in_the_grader_and_the_kernel_goes_on(quick_kit: Path, loop: str) -> None:
    threads = threading.active_count()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGURG)}
    report = run("q1", namespace=_namespace(loop), kit=quick_kit)
    first, *later = report.result.questions[0].checks
    assert later and {c.status for c in (first, *later)} == {TIMEOUT}
    assert first.message.startswith("no answer within the time limit (0.5 s) while waiting for masked_softmax("), \
        first.message
    assert [c.message for c in later] == [_not_called_again()] * len(later)
    assert not report.passed
    # The same kernel checks the model solution next: nothing left pending, no watcher left running, no handler.
    again = run("q1", namespace=_namespace(), kit=quick_kit)
    assert {c.status for c in again.result.questions[0].checks} == {PASSED}
    assert threading.active_count() == threads
    assert {number: signal.getsignal(number) for number in handlers} == handlers


@pytest.mark.parametrize("loop", [SPINS, SLEEPS], ids=["spins", "sleeps_in_c"])
def test_a_runaway_q1_costs_check_one_time_limit_and_the_grader_the_same_points(quick_kit: Path, loop: str,
                                                                                 tmp_path: Path) -> None:
    """Every check that calls the runaway masked_softmax after the first fails at once, saying where it ran away:
    q1's other checks, and the later questions' runs with the student's own masked_softmax (graded with the
    reference's, they pass). Before, each waited its own limit: about 13 limits (130 s with the grader's 10 s);
    a call blocked in C, its whole 30 s each."""
    run(namespace=_namespace(), kit=quick_kit)  # the kit read, torch warm: what is timed is the checking
    started = time.perf_counter()
    run(namespace=_namespace(), kit=quick_kit)
    normal = time.perf_counter() - started
    started = time.perf_counter()
    report = run(namespace=_namespace(loop), kit=quick_kit)
    took = time.perf_counter() - started
    assert took < 2 * LIMIT + normal + 1.0, (took, normal)  # one limit, and room to spare (13 limits fail it)
    questions = {q.id: q for q in report.result.questions}
    first, *later = questions["q1"].checks
    assert first.status == TIMEOUT and first.message.startswith("no answer within the time limit (0.5 s)")
    assert [(c.status, c.message) for c in later] == [(TIMEOUT, _not_called_again())] * len(later)
    for question in ("q2", "q3", "q4"):  # graded with the reference: they pass, and say why yours was not run
        assert {c.status for c in questions[question].checks} == {PASSED}
        assert (f"Not run with your own masked_softmax: it did not answer within the time limit (0.5 s) in {FIRST}, "
                "so it was not called again; the result with the reference counts.") in questions[question].notes

    # The grader (`grader check`'s path: public checks, in its sandbox) gives each check the same status and points.
    spec = load_assignment(NAME)
    limits = dataclasses.replace(spec.limits, call_seconds=1.0)  # its process's calls: 1 s, room for a busy machine
    graded = _graded(_source(loop), public_only(spec), limits, tmp_path)
    assert {c.check_id: (c.status, c.score) for c in graded.checks} == \
        {c.check_id: (c.status, c.score) for c in report.result.checks}
    grader_first, *grader_later = graded.questions[0].checks
    assert grader_first.message.startswith("no answer within the time limit (1 s) while waiting for masked_softmax(")
    assert [c.message for c in grader_later] == [_not_called_again(limit=1.0)] * len(grader_later)


def _graded(source: str, assignment: Assignment, limits: Limits, folder: Path) -> SubmissionResult:
    """The grader's result on ``source`` as a submitted .py, graded as the parity test grades (grade_submission)."""
    path = folder / "runaway.py"
    path.write_text(source)
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=limits)
    try:
        return grade_submission(submission=Submission("runaway", path, KINDS[".py"], datetime.now(UTC)),
                                assignment=assignment, root=folder, limits=limits, worker=worker)
    finally:
        worker.close()


def test_the_grader_waits_once_for_a_runaway_function_hidden_checks_too(tmp_path: Path) -> None:
    """The whole grading, hidden checks included: one call waits out the limit (the process is killed and started
    again), every later call of the same function fails at once, naming where it ran away."""
    spec = load_assignment(NAME)
    limits = dataclasses.replace(spec.limits, call_seconds=1.0)
    graded = _graded(_source(SPINS), spec, limits, tmp_path)
    timed_out = [c for c in graded.checks if c.message.startswith("no answer within")]
    assert [c.check_id for c in timed_out] == [graded.questions[0].checks[0].check_id]
    later = list(graded.questions[0].checks[1:])
    assert len(later) >= 5 and {(c.status, c.score) for c in later} == {(TIMEOUT, 0.0)}
    # A hidden check's message is its hint: the same words, which name a public check (it ran first).
    assert {c.message for c in later} == {_not_called_again(limit=1.0)}


def test_the_grader_limit_travels_with_the_kit(kits: Path) -> None:
    from grader.check import load_assignment

    data = json.loads((kits / NAME / KIT_FOLDER / KIT_FILE).read_text())
    assert data["call_seconds"] == load_assignment(NAME).limits.call_seconds


def test_a_long_check_says_it_is_still_running(quick_kit: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from grader.kit import progress

    monkeypatch.setattr(progress, "SHOWN_AFTER", 0.2)  # the first check takes its 0.5 s limit
    report = run("q1", namespace=_namespace(SPINS), kit=quick_kit)
    shown = capsys.readouterr().out
    first, *later = report.result.questions[0].checks
    assert f'\rStill checking q1 "{first.title}" (0 s)' in shown, shown
    assert f'\rChecked q1 "{first.title}" in 0.' in shown, shown
    for check in later:  # not called again: at once
        assert check.title not in shown, shown
    quick = run("q1", namespace=_namespace(), kit=quick_kit)  # quick checks print nothing
    assert quick.passed and capsys.readouterr().out == ""


# ----- a crash: the process ends, the next check() tells it -----------------------------------------------------------
def _records(tmp: Path, kit: Path) -> Path:
    """Where a child process whose temporary directory is ``tmp`` keeps its crash records for ``kit``."""
    folder = records_folder(kit)  # this process's: the same names under its own temporary directory
    assert folder is not None
    return tmp / folder.parent.name / folder.name


def _as_script(source: str, folder: Path) -> Path:
    path = folder / "attention_scoring.py"
    path.write_text(source + "\n\nfrom grader.kit import check\n\ncheck()\n")
    return path


def _python(script: Path, kit: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRADER_KIT": str(kit), "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=script.parent, env=env,
                          timeout=120)


def test_a_crash_in_a_terminal_is_told_first_by_the_next_check(quick_kit: Path, tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = _as_script(_source(CRASHES), tmp_path)
    crashed = _python(script, quick_kit, tmp)
    assert crashed.returncode == -signal.SIGSEGV, crashed.stdout + crashed.stderr
    (left,) = _records(tmp, quick_kit).glob(f"*{SUFFIX}")  # which check ran, and faulthandler's dump
    assert FIRST.split('"')[1] in left.read_text() and "Fatal Python error: Segmentation fault" in left.read_text()
    line = script.read_text().splitlines().index("    return ctypes.string_at(0)  # reads address 0: SIGSEGV") + 1
    told = (f"Your code ended the process during the last check() (killed by SIGSEGV) while {FIRST} ran: "
            f"attention_scoring.py, line {line}, in masked_softmax.")
    # The same code again: the first line says what happened, before the checks run (and it ends the process again).
    again = _python(script, quick_kit, tmp)
    assert again.returncode == -signal.SIGSEGV
    assert again.stdout.splitlines()[0] == told, again.stdout
    # Fixed: the crash before is told, then the report; nothing left behind.
    script.write_text(script.read_text().replace(CRASHES, ""))
    fixed = _python(script, quick_kit, tmp)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.splitlines()[0] == told
    assert fixed.stdout.count("Your code ended the process") == 1
    assert not list(_records(tmp, quick_kit).glob("*"))  # the file, and its folder, removed
    # And a check() after that has nothing to tell.
    quiet = _python(script, quick_kit, tmp)
    assert quiet.returncode == 0 and "ended the process" not in quiet.stdout


def test_a_check_leaves_faulthandler_and_no_record_behind(quick_kit: Path) -> None:
    was = faulthandler.is_enabled()
    report = run("q1", namespace=_namespace(), kit=quick_kit)
    assert report.passed and not report.notes
    assert faulthandler.is_enabled() == was
    folder = records_folder(quick_kit)
    assert folder is not None and not list(folder.glob(f"*{SUFFIX}"))


def test_a_crash_in_a_jupyter_kernel_is_told_by_the_check_after_the_restart(quick_kit: Path, tmp_path: Path) -> None:
    """The kernel dies ("Kernel died"): the check cell after the restart says so first, in the grader's words."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "GRADER_KIT": str(quick_kit), "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}

    def kernel(code: str) -> nbformat.NotebookNode:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(code), nbformat.v4.new_code_cell("from grader.kit import check\n"
                                                                                    "check()")]
        client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=env)
        return notebook

    with pytest.raises(DeadKernelError):
        kernel(_source(CRASHES))
    notebook = kernel(_source())
    outputs = notebook.cells[-1].outputs
    said = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert re.match(rf"Your code ended the process during the last check\(\) \(killed by SIGSEGV\) while "
                    rf"{re.escape(FIRST)} ran: a cell, line \d+, in masked_softmax\.\n", said), said
    assert any("text/html" in o.get("data", {}) for o in outputs)  # the report after it
