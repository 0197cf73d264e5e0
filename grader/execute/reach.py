"""Whether another uid can reach the Python runtime: the folders that would stop it, read from their modes.

Without bubblewrap, a grader run by root still makes each student process uid 65534, which then sees the real
filesystem. The zygote imports NumPy and torch before it forks, but a student process imports more as it runs
(``torch._dynamo`` when an optimizer is made, ``cProfile`` under it): where uid 65534 cannot enter a folder on the way
(a checkout in a 0700 home or ``mktemp -d`` folder, a pyenv under /root), those imports fail in the student's process
and would read as the student's mistake. So the run refuses at start instead, naming each folder and the permission
that lets it through.

Modes are read, not tried: trying would need a process of that uid, which cannot start where the interpreter itself
is out of its reach. Access control lists are not read (they are rare on the folders of a Python installation).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Enough to say what to change: a tree installed with a private umask has thousands of such folders.
MOST = 5


@dataclass(frozen=True)
class Blocked:
    """A folder ``uid`` cannot use as it needs to: enter it (on the way to a runtime folder), or enter and list it
    (inside one, where imports look for modules)."""

    folder: Path
    mode: int  # the permission bits
    owner: int
    inside: Path  # the runtime folder it is on the way to, or inside
    on_the_way: bool

    @property
    def fix(self) -> str:
        """The permission that lets another uid through, and no more."""
        if self.on_the_way:
            return f"chmod o+x {self.folder}"  # enter only: neither list nor read what is in it
        return f"chmod -R o+rX {self.inside}"

    def describe(self) -> str:
        where = f"on the way to {self.inside}" if self.on_the_way else f"inside {self.inside}"
        return f"{self.folder} (mode {self.mode:04o}, owner uid {self.owner}) {where}"


def _allows(st: os.stat_result, uid: int, gid: int, wanted: int) -> bool:
    """``wanted`` (a combination of 4 read, 1 enter) granted to ``uid``/``gid`` by the class of bits that applies:
    the owner's, the group's, or everyone else's (the kernel uses the first that matches, not the most generous)."""
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid == gid:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & wanted == wanted


def _folders_inside(root: Path) -> Iterator[tuple[Path, os.stat_result]]:
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    yield Path(entry.path), entry.stat(follow_symlinks=False)
                    stack.append(Path(entry.path))
            except OSError:
                continue


def blocked(roots: Iterable[str | Path], uid: int, gid: int, *, most: int = MOST) -> list[Blocked]:
    """The folders that keep ``uid`` (group ``gid``, no other groups) from the runtime under ``roots``: every folder
    above a root that it may not enter, then up to ``most`` in all inside the roots that it may not enter and list."""
    found: list[Blocked] = []
    seen: set[Path] = set()
    roots = [Path(r) for r in roots]
    for root in roots:
        for folder in [*reversed(root.parents)][1:]:  # "/" aside
            if folder in seen:
                continue
            seen.add(folder)
            st = folder.stat()
            if not _allows(st, uid, gid, stat.S_IXOTH):
                found.append(Blocked(folder, stat.S_IMODE(st.st_mode), st.st_uid, root, on_the_way=True))
    for root in roots:
        for folder, st in [(root, root.stat()), *_folders_inside(root)]:
            if len(found) >= most:
                return found
            if not _allows(st, uid, gid, stat.S_IROTH | stat.S_IXOTH):
                found.append(Blocked(folder, stat.S_IMODE(st.st_mode), st.st_uid, root, on_the_way=False))
    return found
