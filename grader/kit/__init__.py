"""The student kit: the assignment's public checks run in the student's own kernel, from their notebook.

    from grader.kit import check
    check("q1")   # one question; check() for all of them

The kit folder (``grader-kit/``, beside the notebook, written by ``grader kit``) holds the public checks and what the
references return on their inputs; nothing of the hidden checks or of the reference code. The checks call the
names the notebook defined, compare with the grader's own comparison and tolerances, and the result shows inline
(HTML in Jupyter and VS Code, text in a terminal). In a notebook the grader grades, ``grader`` is a stand-in whose
``check`` does nothing (grader/execute/child/stubs.py).
"""

from __future__ import annotations

import os
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.kit import crash
from grader.kit.display import KitReport
from grader.kit.runner import cached_kit, find_kit, kit_notes, run_kit
from grader.kit.session import student_frame

__all__ = ["KitReport", "check", "run"]


def run(*questions: str, namespace: dict[str, Any] | None = None, kit: str | Path | None = None,
        announce: Callable[[list[str]], None] | None = None) -> KitReport:
    """The public checks of ``questions`` (all when none) on ``namespace`` (the caller's globals): the report.

    When the student's code ended the process during an earlier check() (a crash, grader/kit/crash.py), that is said
    first: to ``announce``, before anything is checked (the same code may end this process too), else in the
    report's notes."""
    started = time.perf_counter()
    namespace = namespace if namespace is not None else sys._getframe(1).f_globals
    folder = Path(kit) if kit is not None else Path(os.environ["GRADER_KIT"]) if os.environ.get("GRADER_KIT") \
        else find_kit()
    loaded = cached_kit(folder if folder.name != "kit.json" else folder.parent)
    crashed = crash.earlier_crashes(loaded.folder, student_frame)
    if crashed and announce is not None:
        announce(crashed)
    with crash.recorded(loaded.folder):
        result = run_kit(loaded, namespace, questions)
    unchecked = tuple(item for item in loaded.unchecked if not questions or item[0] in questions)
    return KitReport(result, loaded.title, unchecked, loaded.has_hidden, time.perf_counter() - started,
                     (*(crashed if announce is None else ()), *kit_notes(loaded, questions)),
                     loaded.identity.label() if loaded.identity else "", loaded.out_of)


def _in_kernel() -> bool:
    shell = sys.modules.get("IPython")
    return shell is not None and getattr(shell, "get_ipython", lambda: None)() is not None


def _script_top_level(frame: types.FrameType) -> bool:
    """Whether ``frame`` is the top level of the file Python was started with (``python attention_scoring.py``)."""
    return frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__"


def _say_at_once(lines: list[str]) -> None:
    """Lines shown before the checks run, so that they stay on the screen should the process end during them: a
    notebook's output reaches the browser from a thread of the kernel's, given a moment."""
    print("\n".join(lines), flush=True)
    if _in_kernel():
        time.sleep(0.2)


def check(*questions: str, kit: str | Path | None = None) -> KitReport | None:
    """Check your work: the public checks of ``questions`` ("q1", ...; all when none), shown inline in a notebook
    and printed in a terminal. Returns the report when not in a notebook (a script may look at ``.passed``).

    Called at the top level of a file run with ``python``, as the templates end, a check that does not pass ends
    the run with exit status 1 once the report is printed, so that a shell, a script or CI can tell."""
    caller = sys._getframe(1)
    report = run(*questions, namespace=caller.f_globals, kit=kit, announce=_say_at_once)
    if _in_kernel():
        from IPython.display import display

        display(report)
        return None
    print(report)
    if not report.passed and _script_top_level(caller):
        sys.stdout.flush()
        raise SystemExit(1)
    return report
