"""Write a file so that readers see the old version or the new one, never half of it.

The new text goes to a hidden temporary file next to the target (``.<name>.<random>.tmp``), is flushed to disk, and
replaces the target in one rename. A process killed mid-write leaves at most such a temporary file, never a truncated
target; ``remove_partial_writes`` clears them at the start of the next run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TEMP_SUFFIX = ".tmp"


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o644)  # mkstemp makes files only their owner can read; reports are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def remove_partial_writes(folder: Path) -> list[Path]:
    """Delete the temporaries that writes cut short (by a kill) left under ``folder``; returns what was removed.

    Only safe while no other process writes there: the class run holds the output folder's lock when it calls this.
    """
    removed = []
    for parent, _dirs, files in os.walk(folder):
        for name in files:
            if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                path = Path(parent) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed
