"""The grader parses Python in several threads at once without tripping CPython's AST race (grader/thread_safe_ast.py).

The race: while one thread's ``ast.parse`` converts its tree, a finaliser run by the collector lets another thread
parse from another stack depth, and the first parse fails with ``SystemError: AST constructor recursion depth
mismatch`` (CPython 3.11). The first test makes that interleaving happen every time: a finaliser that runs
inside a parse's conversion lets a second thread parse, and waits for it. Without the grader's lock the first parse
fails (the control run); with it, the second parse waits its turn. The second test is the class run's mix under
stress (tests/parse_race.py), with the lock, as the grader runs.
"""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

import grader  # noqa: F401  (importing the grader is what installs the lock)
from grader import thread_safe_ast

from .conftest import ROOT

SOURCE = (ROOT / "grader" / "check" / "runner.py").read_text()  # a few hundred lines: thousands of AST nodes
CPYTHON_PARSE = thread_safe_ast._unguarded.__code__


def _at_depth(depth: int, work: object) -> object:
    return work() if depth == 0 else _at_depth(depth - 1, work)  # type: ignore[operator]


@pytest.fixture
def collect_often() -> Iterator[None]:
    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # a collection at the first allocations of the conversion
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def parse_while_another_thread_parses() -> tuple[BaseException | None, bool]:
    """Parse SOURCE; inside its conversion, a finaliser lets another thread parse from another depth (waiting up to
    a second for it). What the first parse raised, and whether the other parsed inside it."""
    may_start, finished = threading.Event(), threading.Event()

    class Trap:
        def __init__(self) -> None:
            self.me = self  # a cycle: freed by the collector, which runs the finaliser wherever it happens to run

        def __del__(self) -> None:
            if sys._getframe(1).f_code is not CPYTHON_PARSE:  # collected outside a conversion: set it again
                Trap()
                return
            may_start.set()
            finished.wait(1.0)

    def other() -> None:
        may_start.wait(10)
        _at_depth(25, lambda: ast.parse("x = [a + b for a, b in pairs]\n" * 20))
        finished.set()

    thread = threading.Thread(target=other)
    thread.start()
    raised: BaseException | None = None
    Trap()
    try:
        ast.parse(SOURCE)
    except SystemError as exc:
        raised = exc
    inside = finished.is_set()
    may_start.set()
    thread.join()
    return raised, inside


def test_a_parse_in_another_thread_waits_for_the_one_under_way(collect_often: None) -> None:
    assert thread_safe_ast.installed()
    raised, inside = parse_while_another_thread_parses()
    assert raised is None and not inside


def test_without_the_lock_the_same_interleaving_fails_as_on_the_intel_machine(collect_often: None) -> None:
    """The control: the test above would fail if the lock did nothing."""
    thread_safe_ast.uninstall()
    try:
        raised, inside = parse_while_another_thread_parses()
    finally:
        thread_safe_ast.install()
    assert inside
    assert isinstance(raised, SystemError) and "recursion depth mismatch" in str(raised)


def test_the_class_runs_parsing_under_stress_never_fails() -> None:
    """Threads reading every sample .py submission, formatting tracebacks and reading .npy headers while others
    make garbage with finalisers (tests/parse_race.py), in a fresh interpreter as ``grader grade`` starts."""
    done = subprocess.run([sys.executable, "-m", "tests.parse_race", "--seconds", "6"], cwd=ROOT, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip().splitlines()[-1]
    assert '"guarded": true' in line and '"errors": 0' in line, line
    assert '"rounds": 0' not in line, line
