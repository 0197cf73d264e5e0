"""cgroup v1 memory and pids groups: one per student process, so its memory and process count are capped together.

rlimits cap each process; a group caps the submission as a whole (a fork bomb, or many processes each under the
address-space limit) and lets the grader kill every process in it, whatever it did with sessions and groups.
Only cgroup v1 hierarchies the grader may write (root, or a delegated tree) are used; elsewhere this layer is absent.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import time
from collections.abc import Collection
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup")
GROUP = "attention-grader"
CONTROLLERS = ("memory", "pids")
_counter = itertools.count()


@dataclass(frozen=True)
class CgroupSupport:
    """The writable parent group of each controller, e.g. /sys/fs/cgroup/memory/attention-grader."""

    parents: tuple[tuple[str, Path], ...]

    @property
    def controllers(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.parents)


def detect() -> tuple[CgroupSupport | None, str]:
    """The usable controllers, or None and why not."""
    if not sys.platform.startswith("linux"):
        return None, "cgroups exist only on Linux"
    if (V1_ROOT / "cgroup.controllers").exists():
        return None, "this machine has cgroup v2 only, which the grader does not manage yet"
    parents = []
    for name in CONTROLLERS:
        base = V1_ROOT / name
        if not (base / "cgroup.procs").exists():
            continue
        parent = base / GROUP
        try:
            parent.mkdir(exist_ok=True)
        except OSError:
            continue
        if os.access(parent, os.W_OK):
            _remove_stale(parent)
            parents.append((name, parent))
    if not parents:
        return None, f"no writable cgroup v1 memory or pids hierarchy under {V1_ROOT}"
    return CgroupSupport(tuple(parents)), ""


def _grader_alive(group: str) -> bool:
    """Whether the grader that made group ``<pid>-<n>`` still runs: another grader on this machine may have just
    made it, and not yet put its student's process in it."""
    pid = group.partition("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(parent: Path) -> None:
    """Empty groups left by a grader that was killed before it could remove them."""
    for child in parent.iterdir():
        if child.is_dir() and not _grader_alive(child.name):
            with suppress(OSError):
                if not (child / "cgroup.procs").read_text().strip():
                    child.rmdir()


class Cgroup:
    """The groups of one student process. Create it before the process starts; ``close()`` kills and removes."""

    def __init__(self, support: CgroupSupport, *, memory_bytes: int, processes: int) -> None:
        name = f"{os.getpid()}-{next(_counter)}"
        self.paths: list[Path] = []
        self.memory: Path | None = None
        for controller, parent in support.parents:
            path = parent / name
            path.mkdir()
            self.paths.append(path)
            if controller == "memory":
                self.memory = path
                (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with suppress(OSError):  # absent without swap accounting
                    (path / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            elif controller == "pids":
                (path / "pids.max").write_text(str(processes))

    def join(self, pid: int) -> None:
        """Move process ``pid`` into the groups (before it starts any process of its own)."""
        for path in self.paths:
            (path / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.paths:
            with suppress(OSError, ValueError):
                found.update(int(line) for line in (path / "cgroup.procs").read_text().split())
        return found

    def kill(self, timeout: float = 5.0, *, spare: Collection[int] = ()) -> bool:
        """SIGKILL every process in the groups but ``spare`` (a warm worker's zygote) until none is left; True when
        none is."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids() - set(spare)
            if not pids:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in pids:
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)  # SIGKILL takes effect in microseconds; a group empties in a round or two

    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer has killed in the memory group so far (it only counts up)."""
        if self.memory is None:
            return 0
        with suppress(OSError, ValueError):
            for line in (self.memory / "memory.oom_control").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def close(self) -> None:
        self.kill()
        for path in self.paths:
            for _ in range(50):  # the kernel frees a group a moment after its last process is reaped
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.paths = []
