"""Every ``ast.parse`` of the grader's process, one at a time: CPython builds AST objects unsafely under threads.

CPython 3.11 keeps the AST converter's recursion counter in interpreter-wide state (python/cpython#106905 and
its follow-ups); the lock is harmless where a later version does not. A parse resets the counter from its own
thread's stack depth; when the collector runs a finaliser in the middle of a conversion, another thread can take
the interpreter and parse from another depth, and the first parse then fails with ``SystemError: AST constructor
recursion depth mismatch``. The grader parses in several threads at once: submissions read as they are graded
(``grader/discover``), NumPy's ``.npy`` header reader (``ast.literal_eval``), and less visibly the ``traceback``
module, which parses each line of a traceback to place its carets. Serialising ``ast.parse`` itself covers all of
them, library callers included (``ast.literal_eval`` and ``traceback`` look ``ast.parse`` up when they run). A
parse takes a millisecond or less, so the lock costs nothing measurable; it is reentrant because a finaliser that
runs during a parse may parse in the same thread.
"""

from __future__ import annotations

import ast
import functools
import threading
from typing import Any

_lock = threading.RLock()
_unguarded = ast.parse


@functools.wraps(_unguarded)
def _guarded_parse(*args: Any, **kwargs: Any) -> Any:
    with _lock:
        return _unguarded(*args, **kwargs)


def install() -> None:
    """Route every ``ast.parse`` of this process through the lock (idempotent)."""
    ast.parse = _guarded_parse


def uninstall() -> None:
    """Back to CPython's own ``ast.parse``: only for the stress test's control run, which shows the race."""
    ast.parse = _unguarded


def installed() -> bool:
    return ast.parse is _guarded_parse
