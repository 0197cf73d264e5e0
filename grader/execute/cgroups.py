"""memory and pids cgroups: one group per warm worker, so a submission's processes are capped together.

rlimits cap each process; a group caps the submission as a whole (a fork bomb, or many processes each under the
address-space limit) and lets the grader kill every process in it, whatever it did with sessions and groups.
The zygote joins its worker's group once, so that every student process it forks is born there.

cgroup v1 (a ``memory`` and a ``pids`` hierarchy the grader may write: root): ``<hierarchy>/attention-grader/
<grader pid>-<n>``, one group per worker in each hierarchy.

cgroup v2 (one unified hierarchy). Its rules shape the layout:

* "no internal processes": a group that holds processes cannot give its children the memory controller (nor any
  domain controller), and a process cannot move into a group that gives its children one. So the groups that
  enable ``+memory +pids`` for their children hold no process, and the worker groups enable nothing.
* limits are hierarchical: a worker's ``memory.max`` and ``pids.max`` cap its child groups too.

The layout, under a *base* group::

    <base>/                         +memory +pids for its children; no process of its own
      attention-grader-leaf/        the processes that were in <base> (only when <base> had to be emptied)
      attention-grader/             +memory +pids; no process; stale groups removed as in v1
        <grader pid>-<n>/           one per worker: memory.max, memory.swap.max 0, pids.max; holds the zygote
          students/                 each forked student process is moved here before it runs student code

``students`` lets ``cgroup.kill`` (kernel >= 5.14) kill a submission's processes at once, fork bombs included (the
kernel stops new forks in a group being killed), while sparing the zygote, which is not in it; the zygote cannot be
moved out instead, since forks are born in their parent's group. Anything found in the worker's group beside the
zygote (a process forked before it could be moved) is killed by the SIGKILL loop v1 uses, which also covers
kernels without ``cgroup.kill``.

The base is, in order:

1. the grader's own group (``0::`` in /proc/self/cgroup) when it is delegated to it: for a user, when the user may
   write the group and its ``cgroup.procs`` and ``cgroup.subtree_control`` (``systemd-run --user --scope -p
   Delegate=yes grader grade ...``); for root, when systemd marked it delegated (the ``trusted.delegate`` or
   ``user.delegate`` attribute). Its processes (the grader, and e.g. a shell it was started from) are moved to
   ``attention-grader-leaf`` first if needed: a delegated group is its owner's to arrange, and v2 allows no other
   way to cap children of a group that holds processes.
2. as root otherwise, the root of the hierarchy, as in v1: the root is exempt from the no-internal-processes rule,
   so nothing is moved, whatever else runs in the grader's own group (a login session or a service is not the
   grader's to rearrange). In a container with its own cgroup namespace that root is the container's group,
   delegated to it: its processes are moved to the leaf as above.

A user without a delegated group gets no cgroups, and the reason says the command that gives one. The grader does
not re-run itself under systemd-run: that changes its process tree, terminal and exit status, and needs a user
manager that containers and CI machines do not have; one plain command is more robust.
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import signal
import sys
import time
from collections.abc import Collection, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_ROOT = CGROUP_ROOT
GROUP = "attention-grader"
LEAF = "attention-grader-leaf"
STUDENTS = "students"
CONTROLLERS = ("memory", "pids")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
DELEGATE_COMMAND = "systemd-run --user --scope -p Delegate=yes grader grade ..."
LOST = "no memory or process cap across a submission's processes (per-process rlimits only)"
_counter = itertools.count()


class CgroupError(Exception):
    """A cgroup v2 group could not be prepared (the reason is for the person running the grader)."""


@dataclass(frozen=True)
class CgroupSupport:
    """Where the grader makes its groups: the writable parent of each controller, e.g.
    /sys/fs/cgroup/memory/attention-grader (v1); or one parent for all (v2)."""

    parents: tuple[tuple[str, Path], ...]
    version: int = 1
    group: Path | None = None  # v2: the parent of the worker groups (…/attention-grader)
    how: str = ""  # v2: "as root" or "delegated"

    @property
    def controllers(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.parents)

    def describe(self) -> str:
        """For the line of active layers."""
        names = "+".join(self.controllers)
        if self.version == 1:
            return f"cgroup v1 ({names})"
        return f"cgroup v2 ({names}, {self.how}, in {self.group})"


# ----- parsing -------------------------------------------------------------------------------------------------
def own_cgroup(text: str) -> str | None:
    """The cgroup v2 path in /proc/<pid>/cgroup text (its ``0::/path`` line), or None where it has none."""
    for line in text.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "" and path.startswith("/"):
            return path
    return None


def flat_keyed(text: str) -> dict[str, int]:
    """A "key value" per line interface file (memory.events, memory.oom_control, pids.events)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        with suppress(ValueError):
            found[key] = int(value)
    return found


def _procs(group: Path) -> list[int]:
    with suppress(OSError, ValueError):
        return [int(line) for line in (group / "cgroup.procs").read_text().split()]
    return []


# ----- detection -----------------------------------------------------------------------------------------------
def detect(root: Path = CGROUP_ROOT, *, self_cgroup: Path = PROC_SELF_CGROUP,
           controllers: Sequence[str] = CONTROLLERS) -> tuple[CgroupSupport | None, str]:
    """The usable controllers, or None and why not (the reason names what is lost and what to do)."""
    if not sys.platform.startswith("linux"):
        return None, _lost("cgroups exist only on Linux")
    if (root / "cgroup.controllers").exists():  # the unified hierarchy alone (cgroup v2)
        support, why = detect_v2(root, self_cgroup=self_cgroup, controllers=controllers)
        return support, "" if support else _lost(why)
    support, why = _detect_v1(root)
    if support is not None:
        return support, ""
    unified = root / "unified"  # the hybrid layout; controllers bound to v1 are not offered here
    if (unified / "cgroup.controllers").exists():
        support, why_v2 = detect_v2(unified, self_cgroup=self_cgroup, controllers=controllers)
        if support is not None:
            return support, ""
        why = f"{why}; cgroup v2 at {unified}: {why_v2}"
    return None, _lost(why)


def _lost(why: str) -> str:
    return why if LOST in why else f"{why}, so {LOST}"


def _detect_v1(root: Path) -> tuple[CgroupSupport | None, str]:
    parents = []
    for name in CONTROLLERS:
        base = root / name
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
        return None, f"no writable cgroup v1 memory or pids hierarchy under {root}"
    return CgroupSupport(tuple(parents)), ""


def detect_v2(root: Path, *, self_cgroup: Path = PROC_SELF_CGROUP, controllers: Sequence[str] = CONTROLLERS,
              euid: int | None = None) -> tuple[CgroupSupport | None, str]:
    """The grader's groups on the cgroup v2 hierarchy mounted at ``root`` (see the module's note), or None and why.

    ``controllers`` and ``euid`` are for tests (a machine whose hierarchy lacks memory and pids)."""
    try:
        return _detect_v2(root, self_cgroup, controllers, os.geteuid() if euid is None else euid)
    except OSError as exc:  # a folder it may not enter, a file gone: no cgroups, never a crash
        return None, f"cgroup v2 at {root}: {exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")


def _detect_v2(root: Path, self_cgroup: Path, controllers: Sequence[str],
               euid: int) -> tuple[CgroupSupport | None, str]:
    try:
        own_path = own_cgroup(self_cgroup.read_text())
    except OSError as exc:
        return None, f"cannot read {self_cgroup}: {exc.strerror}"
    if own_path is None:
        return None, f"{self_cgroup} names no cgroup v2 group for the grader"
    own = root / own_path.lstrip("/")
    if own.name == LEAF:  # a grader before this one moved the base group's processes aside: that is our base
        own = own.parent
    if not own.is_dir():
        return None, f"the grader's own cgroup {own} is not under {root} (another cgroup namespace?)"
    if is_delegated(own, euid):
        base, how = own, "delegated"
    elif euid == 0:
        base, how = root, "as root"
    else:
        return None, (f"cgroup v2, and the grader's cgroup {own} is not delegated to uid {euid} (only root may make "
                      f"groups elsewhere), so {LOST}; {_delegation_hint(euid)}")
    try:
        offered = (base / "cgroup.controllers").read_text().split()
    except OSError as exc:
        return None, f"cannot read {base / 'cgroup.controllers'}: {exc.strerror}"
    missing = [name for name in controllers if name not in offered]
    if missing:
        where = ("the delegation does not include them (systemd: Delegate=memory pids)" if how == "delegated" else
                 "the kernel lacks them, or they are bound to a cgroup v1 hierarchy")
        return None, (f"cgroup v2 group {base} does not offer the {' and '.join(missing)} controller"
                      f"{'s' if len(missing) > 1 else ''} (it offers: {' '.join(offered) or 'none'}); {where}")
    try:
        group = prepare_v2(base, controllers, may_move=base == own)
    except (OSError, CgroupError) as exc:
        text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, f"cgroup v2: cannot prepare {base / GROUP}: {text}"
    return CgroupSupport(tuple((name, group) for name in controllers), version=2, group=group, how=how), ""


def is_delegated(group: Path, euid: int) -> bool:
    """Whether ``group`` is the grader's to arrange: systemd's mark of delegation (which root needs, since root may
    write anything), or, for a user, the files delegation hands over."""
    if euid == 0:
        for name in ("trusted.delegate", "user.delegate"):
            with suppress(OSError):
                if os.getxattr(group, name) == b"1":
                    return True
        return False
    return all(os.access(path, os.W_OK)
               for path in (group, group / "cgroup.procs", group / "cgroup.subtree_control"))


def _delegation_hint(euid: int) -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{euid}"
    if shutil.which("systemd-run") and Path(runtime, "systemd", "private").exists():
        return f"to have one, run the grader as: {DELEGATE_COMMAND}"
    return (f"run the grader as root, or where a systemd user manager runs, as: {DELEGATE_COMMAND} "
            "(no systemd-run or user manager was found here)")


def prepare_v2(base: Path, controllers: Sequence[str], *, may_move: bool) -> Path:
    """Make ``base/attention-grader``, both enabling ``controllers`` for their children; returns it.

    ``may_move``: ``base`` is the grader's own group, delegated to it, whose processes may be moved to
    ``base/attention-grader-leaf`` when it holds any (v2 refuses to enable a controller there otherwise)."""
    _enable(base, controllers, may_move=may_move)
    group = base / GROUP
    group.mkdir(exist_ok=True)
    _enable(group, controllers, may_move=False)  # it never holds a process
    _remove_stale(group)
    return group


def _enable(group: Path, controllers: Sequence[str], *, may_move: bool) -> None:
    control = group / "cgroup.subtree_control"
    wanted = [name for name in controllers if name not in control.read_text().split()]
    if not wanted:
        return
    line = " ".join(f"+{name}" for name in wanted)
    try:
        control.write_text(line)
        return
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise CgroupError(f"cannot enable {line} in {control}: {exc.strerror}") from None
        if not may_move:
            raise CgroupError(f"cannot enable {line} in {control}: it holds processes, which are not the "
                              "grader's to move") from None
    move_processes(group, group / LEAF)
    try:
        control.write_text(line)
    except OSError as exc:
        raise CgroupError(f"cannot enable {line} in {control}: {exc.strerror}") from None


def move_processes(group: Path, leaf: Path, rounds: int = 20) -> None:
    """Move every process of ``group`` into its child ``leaf`` (made if needed), those it forks meanwhile too."""
    leaf.mkdir(exist_ok=True)
    for _ in range(rounds):
        pids = _procs(group)
        if not pids:
            return
        for pid in pids:
            try:
                (leaf / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                continue  # it ended
            except OSError as exc:
                raise CgroupError(f"cannot move process {pid} from {group} to {leaf}: {exc.strerror}") from None
    raise CgroupError(f"{group} still holds processes after {rounds} rounds of moving them to {leaf}")


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


def _remove_tree(group: Path) -> None:
    """Remove ``group`` and its child groups, deepest first, where they hold no process."""
    with suppress(OSError):
        for child in group.iterdir():
            if child.is_dir():
                _remove_tree(child)
        if not (group / "cgroup.procs").read_text().strip():
            group.rmdir()


def _remove_stale(parent: Path) -> None:
    """Empty groups left by a grader that was killed before it could remove them."""
    for child in parent.iterdir():
        if child.is_dir() and not _grader_alive(child.name):
            _remove_tree(child)


# ----- one worker's group ----------------------------------------------------------------------------------------
class Cgroup:
    """The groups of one warm worker. Create it before the zygote forks; ``close()`` kills and removes."""

    def __init__(self, support: CgroupSupport, *, memory_bytes: int, processes: int) -> None:
        name = f"{os.getpid()}-{next(_counter)}"
        self.version = support.version
        self.paths: list[Path] = []  # every group, children before their parents (the order they are removed)
        self.memory: Path | None = None
        self.group: Path | None = None  # v2: the worker's group, which the zygote joins
        self.students: Path | None = None  # v2: its child group, which the forked student processes are moved to
        self.kill_file = False  # v2: cgroup.kill exists (kernel >= 5.14)
        try:
            if support.version == 2:
                self._make_v2(support, name, memory_bytes, processes)
            else:
                self._make_v1(support, name, memory_bytes, processes)
        except BaseException:
            self.close()
            raise

    def _make_v1(self, support: CgroupSupport, name: str, memory_bytes: int, processes: int) -> None:
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

    def _make_v2(self, support: CgroupSupport, name: str, memory_bytes: int, processes: int) -> None:
        if support.group is None:
            raise ValueError("a cgroup v2 CgroupSupport needs its group")
        path = support.group / name
        path.mkdir()
        self.paths.append(path)
        self.group = path
        # Interface files exist only for the controllers the parent enabled; write only those.
        if "memory" in support.controllers:
            self.memory = path
            (path / "memory.max").write_text(str(memory_bytes))
            # memory.max caps RAM alone: no swap, as v1's memsw limit equal to the memory limit. The file is
            # absent without swap accounting, and then there is nothing to extend the cap.
            with suppress(OSError):
                (path / "memory.swap.max").write_text("0")
        if "pids" in support.controllers:
            (path / "pids.max").write_text(str(processes))
        students = path / STUDENTS
        students.mkdir()  # enables no controller: the zygote may stay in its parent
        self.paths.insert(0, students)
        self.students = students
        self.kill_file = (students / "cgroup.kill").exists()

    def join(self, pid: int) -> None:
        """Move process ``pid`` (the zygote) into the groups, before it starts any process of its own."""
        for path in [self.group] if self.group is not None else self.paths:
            (path / "cgroup.procs").write_text(str(pid))

    def adopt(self, pid: int) -> bool:
        """v2: move a student process the zygote just forked into ``students``, before it runs student code (its
        later children are born there). False where it could not be (v1 has no such group; it ended): it is then
        still in the worker's group, and ``kill`` still finds it."""
        if self.students is None:
            return False
        try:
            (self.students / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.paths:
            found.update(_procs(path))
        return found

    def kill(self, timeout: float = 5.0, *, spare: Collection[int] = ()) -> bool:
        """SIGKILL every process in the groups but ``spare`` (a warm worker's zygote) until none is left; True when
        none is."""
        deadline = time.monotonic() + timeout
        spared = set(spare)
        while True:
            if self.kill_file and self.students is not None and self.group is not None:
                # cgroup.kill kills a whole group at once, and refuses forks in it meanwhile; only for groups
                # without the zygote: the students' group always, the worker's own when nothing is spared.
                for path in (self.students,) if spared else (self.students, self.group):
                    with suppress(OSError):
                        (path / "cgroup.kill").write_text("1")
            pids = self.pids() - spared
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
        # v2's memory.events counts the group's child groups too (the students').
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        with suppress(OSError):
            return flat_keyed((self.memory / name).read_text()).get("oom_kill", 0)
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
        self.group = self.students = None
