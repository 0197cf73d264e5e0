"""The student kit holds a student's code to the grader's time limit for a call, and leaves the kernel usable: a
`while True` in masked_softmax ends its checks with the grader's own timeout message, and the next check runs."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from grader.kit import run
from grader.kit.bundle import KIT_FILE, KIT_FOLDER
from grader.results import PASSED, TIMEOUT

from .conftest import ROOT

NAME = "attention_scoring"
SOLUTION = ROOT / "tests" / "submissions" / NAME / "einsum_style.py"

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


@pytest.fixture(scope="module")
def quick_kit(kits: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The assignment's kit with a 0.5 s limit for a call in place of the grader's (10 s), to keep the test short."""
    folder = tmp_path_factory.mktemp("kit") / KIT_FOLDER
    shutil.copytree(kits / NAME / KIT_FOLDER, folder)
    data = json.loads((folder / KIT_FILE).read_text())
    assert data["call_seconds"] > 0.5
    data["call_seconds"] = 0.5
    (folder / KIT_FILE).write_text(json.dumps(data))
    return folder


def _namespace(extra: str = "") -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "student"}
    exec(compile(SOLUTION.read_text() + extra, str(SOLUTION), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("loop", [SPINS, CATCHES], ids=["spins", "catches_exceptions"])
def test_a_call_past_the_limit_times_out_as_in_the_grader_and_the_kernel_goes_on(quick_kit: Path, loop: str) -> None:
    threads = threading.active_count()
    report = run("q1", namespace=_namespace(loop), kit=quick_kit)
    checks = report.result.questions[0].checks
    assert checks and {c.status for c in checks} == {TIMEOUT}
    assert all(c.message.startswith("no answer within the time limit (0.5 s) while waiting for masked_softmax(")
               for c in checks), [c.message for c in checks]
    assert not report.passed
    # The same kernel checks the model solution next: nothing left pending, no watcher left running.
    again = run("q1", namespace=_namespace(), kit=quick_kit)
    assert {c.status for c in again.result.questions[0].checks} == {PASSED}
    assert threading.active_count() == threads


def test_the_grader_limit_travels_with_the_kit(kits: Path) -> None:
    from grader.check import load_assignment

    data = json.loads((kits / NAME / KIT_FOLDER / KIT_FILE).read_text())
    assert data["call_seconds"] == load_assignment(NAME).limits.call_seconds


def test_a_long_check_says_it_is_still_running(quick_kit: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from grader.kit import progress

    monkeypatch.setattr(progress, "SHOWN_AFTER", 0.2)  # each check here takes its 0.5 s limit
    report = run("q1", namespace=_namespace(SPINS), kit=quick_kit)
    shown = capsys.readouterr().out
    for check in report.result.questions[0].checks:
        assert f'\rStill checking q1 "{check.title}" (0 s)' in shown, shown
        assert f'\rChecked q1 "{check.title}" in 0.' in shown, shown
    quick = run("q1", namespace=_namespace(), kit=quick_kit)  # quick checks print nothing
    assert quick.passed and capsys.readouterr().out == ""
