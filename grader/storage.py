"""The machine refusing to store what the grader writes: which failures those are, and how they are told.

A full disk, a used-up quota, a read-only file system or a permission denied is not the grader failing, nor a
submission's doing: writing again, or grading again in a fresh process, fails the same way. So a refused write ends
the run at once as ``Refused`` (a StorageError: exit code 5), naming the file and the cause in plain words; what was
recorded before stays, and the same command, once the cause is fixed, goes on from there. The writes to the output
folder go through ``storing``: files.py's atomic writes, the gradebook, the output folder's lock.
"""

from __future__ import annotations

import errno
import functools
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grader.errors import StorageError

FULL, QUOTA, READ_ONLY, DENIED = "full", "quota", "read-only", "denied"
BY_ERRNO = {errno.ENOSPC: FULL, errno.EDQUOT: QUOTA, errno.EROFS: READ_ONLY, errno.EACCES: DENIED,
            errno.EPERM: DENIED}
CAUSES = {
    FULL: "the disk holding {where} is full",
    QUOTA: "the disk quota for {where} is used up",
    READ_ONLY: "{where} is on a read-only file system",
    DENIED: "permission denied in {where}",
}
# SQLite's codes that say a write was refused without saying why (the file system is asked: ``_probe``).
SQLITE_UNSAID = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_PERM")


class Refused(StorageError):
    """A write of ``path`` refused for ``kind`` (FULL, QUOTA, READ_ONLY, DENIED). ``out``: the output folder, named
    in the cause when ``path`` is in it; ``so_far``: how far the run had got."""

    def __init__(self, path: Path, kind: str, *, out: Path | None = None, so_far: str = "") -> None:
        where = out if out is not None and path.is_relative_to(out) else path.parent
        message = f"cannot write {path}: {CAUSES[kind].format(where=where)}"
        super().__init__(f"{message}; {so_far}" if so_far else message)
        self.path, self.kind, self.out, self.so_far = path, kind, out, so_far

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:  # from a job process, whole
        return functools.partial(Refused, out=self.out, so_far=self.so_far), (self.path, self.kind)

    def told(self, *, out: Path, so_far: str) -> Refused:
        """The same refusal, its cause naming the output folder, with how far the run had got."""
        return Refused(self.path, self.kind, out=out, so_far=so_far)


def _probe(folder: Path) -> str | None:
    """Why ``folder`` refuses writes, asked of its file system (None: it does not seem to)."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return None
    if found.f_flag & os.ST_RDONLY:
        return READ_ONLY
    if found.f_bavail == 0:
        return FULL
    if not os.access(folder, os.W_OK):
        return DENIED
    return None


def refusal(error: BaseException, path: Path) -> Refused | None:
    """``error``, raised while writing ``path``, as a refusal to store; None when it is something else (a file read
    on the way, named in the error, is not ``path``'s refusal)."""
    if isinstance(error, Refused):
        return error
    if isinstance(error, OSError) and error.errno in BY_ERRNO:
        if error.filename is None:  # a write to a file already open
            return Refused(path, BY_ERRNO[error.errno])
        named = Path(os.fsdecode(error.filename))
        if named.parent == path.parent:  # ``path``, or the temporary written in its place
            return Refused(path, BY_ERRNO[error.errno])
        return Refused(named, BY_ERRNO[error.errno]) if path.is_relative_to(named) else None  # a folder made for it
    if isinstance(error, sqlite3.Error):
        name = getattr(error, "sqlite_errorname", "")
        kind = FULL if name == "SQLITE_FULL" else _probe(path.parent) if name.startswith(SQLITE_UNSAID) else None
        return Refused(path, kind) if kind is not None else None
    return None


@contextmanager
def storing(path: Path) -> Iterator[None]:
    """Within the block, a refused write of ``path`` (or of a temporary beside it) raises ``Refused``."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        refused = refusal(exc, path)
        if refused is None or refused is exc:
            raise
        raise refused from exc
