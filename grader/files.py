"""Write a file so that readers see the old version or the new one, never half of it.

The new content goes to a hidden temporary file next to the target (``.<name>.<random>.tmp``), is flushed to disk,
and replaces the target in one rename. A process killed mid-write leaves at most such a temporary file, never a
truncated target; ``remove_partial_writes`` clears them at the start of the next run. Every file the grader leaves
for people (pages, CSV files, zips, the kit's wheel) is written this way. A write the machine refuses (a full disk, a
read-only folder) raises grader.storage.Refused, naming the file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from grader.storage import storing

TEMP_SUFFIX = ".tmp"


@contextmanager
def atomic_writer(path: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into: it replaces ``path`` when the block ends, and is removed
    if the block raises. For content written piece by piece (a zip of a class's pages) rather than held whole."""
    with storing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o644)  # mkstemp makes files only their owner can read; these are meant to be shared
            with os.fdopen(fd, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def write_bytes_atomic(path: Path, data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` as UTF-8, its line ends as they are (no translation: a CSV's \\r\\n stays)."""
    write_bytes_atomic(path, text.encode("utf-8"))


def remove_partial_writes(folder: Path) -> list[Path]:
    """Delete the temporaries that writes cut short (by a kill) left under ``folder``; returns what was removed.

    Only safe while no other process writes there: the class run holds the output folder's lock when it calls this.
    """
    removed = []
    for parent, _dirs, files in os.walk(folder):
        for name in files:
            if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                path = Path(parent) / name
                with storing(path):
                    path.unlink(missing_ok=True)
                removed.append(path)
    return removed
