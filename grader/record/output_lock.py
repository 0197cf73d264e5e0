"""One grader at a time per output folder: an exclusive ``flock`` on ``OUT/.grader.lock``.

The kernel drops the lock when its holder exits, however it exits (SIGKILL included), so a killed run never leaves
the folder locked; the lock file itself stays (removing it would race with the next run taking it).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grader.errors import ConfigurationError
from grader.record.output import OutputFolder
from grader.storage import storing


@contextmanager
def output_lock(out_dir: Path) -> Iterator[None]:
    path = OutputFolder(out_dir).lock
    with storing(path):  # the first write of a run: a read-only or full OUT is said here
        out_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise ConfigurationError(f"another grader (pid {holder}) is writing to {out_dir}; "
                                     "wait for it to finish or grade into another --out folder") from None
        with storing(path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)
