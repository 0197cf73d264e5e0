"""A crash of the student's code during check(), told by the next check(): a segfault in C code the student's code
ran (torch, NumPy, ctypes) ends a Jupyter kernel ("Kernel died") or ``python file.py`` (exit status 139) at once,
and nothing left in the process can say so.

While check() runs, a file of the kit's holds a line that says which check is running, rewritten before a call into
the student's code whenever the check has changed (grader/kit/session.py), and faulthandler writes its dump of the
crash after that line. A check() that ends, whatever the student's code raised, removes the file. The next check()
(after the kernel's restart, or the next ``python file.py``) finds a file whose process has ended and, before it
checks anything, says what happened in the grader's words for a crash: "Your code ended the process during the last
check() (killed by SIGSEGV) while q1 "..." ran: attention_scoring.py, line 28, in masked_softmax."

Where the file lives: a folder of the user's own in the temporary directory (``<tmp>/grader-kit-<uid>/<digest of the
kit folder>/<pid>.running``, the folders mode 0700), not the kit folder. The kit folder may be read-only or shared
(a course drive, a lab machine's common folder: another student would be told of this one's crash), synced to a
cloud drive or handed in with the work; the temporary directory is the user's wherever Python runs, and outlives a
kernel's restart. A process holds a lock on its own file while it checks: a file another process still holds is
another kernel checking the same kit at this moment, not a crash.
"""

from __future__ import annotations

import contextlib
import faulthandler
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

try:
    import fcntl
except ImportError:  # Windows: a file another process holds open cannot be removed there, which tells as much
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".running"
# faulthandler's first line for each fatal signal it catches (Modules/faulthandler.c), and the signal's name.
FATAL = {"Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS", "Illegal instruction": "SIGILL",
         "Floating point exception": "SIGFPE", "Aborted": "SIGABRT"}
_FRAME = re.compile(r'^\s+File "(?P<file>.+)", line (?P<line>\d+) in (?P<function>\S+)', re.MULTILINE)


def records_folder(kit_folder: Path) -> Path | None:
    """This kit's folder for records, the user's alone; None where it cannot be had (no check fails for that)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    user = str(uid) if uid is not None else re.sub(r"\W", "_", os.environ.get("USERNAME", "user"))
    digest = hashlib.sha256(str(kit_folder.resolve()).encode()).hexdigest()[:16]
    base = Path(tempfile.gettempdir()) / f"grader-kit-{user}"
    try:
        for folder in (base, base / digest):
            folder.mkdir(mode=0o700, exist_ok=True)
            info = folder.lstat()  # a link, or another user's folder, in a shared /tmp: not written through
            if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
                return None
        return base / digest
    except OSError:
        return None


class CrashRecord:
    """This process's file while check() runs: which check is running, then faulthandler's dump should it crash."""

    def __init__(self, path: Path, file: IO[str]) -> None:
        self.path = path
        self.file = file
        self.label: str | None = None

    def checking(self, label: str) -> None:
        """``label`` ('q1 "textbook example"') is running: said in the file when it changed."""
        if label == self.label:
            return
        self.label = label
        try:
            self.file.seek(0)
            self.file.truncate()
            self.file.write(json.dumps({"check": label, "pid": os.getpid(), "at": time.time()}) + "\n")
            self.file.flush()  # faulthandler writes at the file's offset: after this line
        except (OSError, ValueError):
            pass


_ACTIVE: ContextVar[CrashRecord | None] = ContextVar("grader_kit_crash_record", default=None)


def checking(check: Any) -> None:
    """Before a call into the student's code: ``check`` (a CheckSpec, or None) is the one running, if check() keeps
    a record."""
    record = _ACTIVE.get()
    if record is not None and check is not None:
        record.checking(f'{check.question} "{check.title}"')


@contextlib.contextmanager
def recorded(kit_folder: Path) -> Iterator[CrashRecord | None]:
    """A record of the running check, with faulthandler's dump of a crash, for the block (check()'s checks);
    faulthandler as it was after it (re-enabled on stderr where it was on: a kernel's, ``python -X faulthandler``)."""
    folder = records_folder(kit_folder)
    record = _open(folder / f"{os.getpid()}{SUFFIX}") if folder is not None else None
    if record is None:
        yield None
        return
    was_enabled = faulthandler.is_enabled()
    token = _ACTIVE.set(record)
    try:
        faulthandler.enable(file=record.file, all_threads=True)
        yield record
    finally:
        _ACTIVE.reset(token)
        faulthandler.disable()
        if was_enabled and sys.__stderr__ is not None:
            with contextlib.suppress(Exception):
                faulthandler.enable(file=sys.__stderr__, all_threads=True)
        record.file.close()
        with contextlib.suppress(OSError):
            record.path.unlink()
            record.path.parent.rmdir()  # the kit's folder, when no other kernel is checking it: nothing left behind


def _open(path: Path) -> CrashRecord | None:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live process of the same pid (another container's): not written over
            os.close(fd)
            return None
    return CrashRecord(path, os.fdopen(fd, "w+", encoding="utf-8"))


def earlier_crashes(kit_folder: Path, student_frame: Callable[[str], bool]) -> list[str]:
    """What ended each process that was checking this kit and left its record (removed once read), one line each;
    none when every check() ended. ``student_frame``: whether a file's frames are the student's code."""
    folder = records_folder(kit_folder)
    if folder is None:
        return []
    found = []
    for path in sorted(folder.glob(f"*{SUFFIX}")):
        text = _left_behind(path)
        if text is not None:
            found.append(describe(text, student_frame))
    return found


def _left_behind(path: Path) -> str | None:
    """The text of a record whose process has ended, the file removed; None for a live process's or one unread."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            if fcntl is not None:
                try:
                    fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    return None  # another kernel is checking this kit now
            text = file.read()
        path.unlink()  # on Windows this fails while the process that writes it runs
    except OSError:
        return None
    return text


def describe(text: str, student_frame: Callable[[str], bool]) -> str:
    """A record as the student is told it: the grader's words for a crash, the check that ran and, from
    faulthandler's dump, the student's line it ran."""
    first, _, dump = text.partition("\n")
    try:
        label = json.loads(first).get("check")
    except (ValueError, AttributeError):
        label = None
    during = f" while {label} ran" if label else ""
    how = _how(dump)
    if how is None:
        return (f"The last check() did not finish: its process ended{during}, with no word of why (the kernel was "
                "restarted or stopped, it ran out of memory, or your code ended it).")
    where = _student_line(dump, student_frame)
    return f"Your code ended the process during the last check() (killed by {how}){during}" + \
        (f": {where}." if where else ".")


def _how(dump: str) -> str | None:
    """'SIGSEGV' from faulthandler's "Fatal Python error: Segmentation fault" (Windows: the exception's name)."""
    found = re.search(r"^Fatal Python error: (.+)$|^Windows fatal exception: (.+)$", dump, re.MULTILINE)
    if found is None:
        return None
    said = (found[1] or found[2]).strip()
    return FATAL.get(said, said)


def _student_line(dump: str, student_frame: Callable[[str], bool]) -> str:
    """'attention_scoring.py, line 28, in masked_softmax': the innermost frame of the crashed thread in the
    student's code ('a cell, line 5, in ...' in a notebook); '' when none is."""
    current = re.search(r"^(?:Current thread|Current thread's|Stack \(most recent call first\)).*?$(.*?)(?:^\S|\Z)",
                        dump, re.MULTILINE | re.DOTALL)
    for frame in _FRAME.finditer(current[1] if current else dump):
        if student_frame(frame["file"]):
            name = "a cell" if "ipykernel_" in frame["file"] else Path(frame["file"]).name
            return f"{name}, line {frame['line']}, in {frame['function']}"
    return ""
