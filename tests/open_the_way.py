"""The folders that keep another uid from a path, and the shell lines that open the way through them inside a
mount namespace of the test's own (root only): each such folder covered by a tmpfs that holds only bind mounts of
what leads on. Nothing on the machine changes, and the namespace dies with its process."""

from __future__ import annotations

import itertools
import shlex
import stat
from collections.abc import Iterable
from pathlib import Path


def blocked_folders(paths: Iterable[Path]) -> list[tuple[Path, set[str]]]:
    """The folders on the way to ``paths`` that others may not enter, outermost first, each with the names under
    it that lead on."""
    blocked: dict[Path, set[str]] = {}
    for path in paths:
        chain = [*reversed(path.parents), path]
        for folder, inner in itertools.pairwise(chain):
            if not folder.stat().st_mode & stat.S_IXOTH:
                blocked.setdefault(folder, set()).add(inner.name)
    return sorted(blocked.items(), key=lambda item: len(item[0].parts))


def opening_script(paths: Iterable[Path]) -> list[str]:
    """Shell lines (for ``sh -c`` in ``unshare --mount --propagation private``) that let everyone reach ``paths``."""
    script = ['stash=$(mktemp -d)']
    for index, (folder, names) in enumerate(blocked_folders(paths)):
        hidden = f'"$stash/{index}"'
        script += [f"mkdir {hidden}", f"mount --bind {shlex.quote(str(folder))} {hidden}",
                   f"mount -t tmpfs -o mode=0755,size=1m none {shlex.quote(str(folder))}"]
        for name in sorted(names):
            inside, origin = shlex.quote(str(folder / name)), f'{hidden}/{shlex.quote(name)}'
            script += [f"if [ -d {origin} ]; then mkdir {inside}; else touch {inside}; fi",
                       f"mount --bind {origin} {inside}"]
    return script
