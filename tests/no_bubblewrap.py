"""A machine where bubblewrap was never installed, as the grader sees it: a PATH without ``bwrap``."""

from __future__ import annotations

import os
from pathlib import Path


def path_without_bubblewrap(folder: Path) -> str:
    """A PATH holding every command of this one but ``bwrap``: links in ``folder``, so that the package manager a
    refusal names is still the machine's own."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = folder / entry.name
            if entry.name != "bwrap" and not target.exists() and os.access(entry.path, os.X_OK):
                target.symlink_to(entry.path)
    return str(folder)
