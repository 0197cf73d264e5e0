"""cgroups (grader/execute/cgroups.py): the v2 layout on a real cgroup2 hierarchy, and a submission contained.

This machine may mount cgroup v1 with the memory and pids controllers bound there: its cgroup2 hierarchy then offers
neither, and a v2 memory or pids cap cannot be seen working. What needs no controller is tested on a cgroup2
hierarchy mounted here for real (root only): groups made, processes moved, killed (cgroup.kill, and the SIGKILL
loop), a spared zygote, removal, stale groups, delegation to a user, the no-internal-processes rule (with hugetlb,
a domain controller the kernel offers on v2, standing in for memory), and what detect() says when the controllers
are missing. The parsing is tested on real text. The containment of the hostile memory and fork bombs runs on
whichever version this machine gives the grader, each version skipped only where the machine lacks it.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

from grader.discover import read_program
from grader.execute import Limits, StudentProcess, cgroups, isolation
from grader.execute.cgroups import (
    CONTROLLERS,
    DELEGATE_COMMAND,
    GROUP,
    LEAF,
    LOST,
    STUDENTS,
    Cgroup,
    CgroupSupport,
    detect,
    detect_v2,
    flat_keyed,
    own_cgroup,
    prepare_v2,
)
from grader.execute.workers import WorkerPool
from tests.hostile.cases import CASES

NOBODY = 65534
STAND_IN = "hugetlb"  # a domain controller: bound by the no-internal-processes rule as memory is
_names = itertools.count()


# ----- parsing, on real text --------------------------------------------------------------------------------------
# /proc/self/cgroup on a cgroup v2-only machine (Ubuntu 24.04, a user's terminal), on a hybrid one (this kind of
# machine: v1 controllers and the unified hierarchy), and on a v1-only one.
V2_ONLY = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope\n"
HYBRID = ("12:pids:/user.slice/user-1000.slice/session-2.scope\n4:memory:/user.slice/user-1000.slice/session-2.scope\n"
          "1:name=systemd:/user.slice/user-1000.slice/session-2.scope\n0::/user.slice/user-1000.slice/session-2.scope\n")
V1_ONLY = "11:memory:/docker/4f1c\n3:pids:/docker/4f1c\n1:name=systemd:/docker/4f1c\n"


@pytest.mark.parametrize(("text", "expected"), [
    (V2_ONLY, "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-1.scope"),
    (HYBRID, "/user.slice/user-1000.slice/session-2.scope"),
    (V1_ONLY, None),
    ("0::/\n", "/"),
    ("", None),
])
def test_the_grader_s_own_v2_group_is_the_0_line_of_proc_self_cgroup(text: str, expected: str | None) -> None:
    assert own_cgroup(text) == expected


def test_this_machine_s_proc_self_cgroup_parses() -> None:
    text = Path("/proc/self/cgroup").read_text() if Path("/proc/self/cgroup").exists() else ""
    line = next((x for x in text.splitlines() if x.startswith("0::")), None)
    assert own_cgroup(text) == (line[3:] if line else None)


# memory.events of a v2 group whose processes the OOM killer hit three times (kernel 6.8), and v1's oom_control.
MEMORY_EVENTS = "low 0\nhigh 0\nmax 1523\noom 4\noom_kill 3\noom_group_kill 0\n"
OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"


def test_memory_events_and_oom_control_give_the_oom_kill_count() -> None:
    assert flat_keyed(MEMORY_EVENTS) == {"low": 0, "high": 0, "max": 1523, "oom": 4, "oom_kill": 3,
                                         "oom_group_kill": 0}
    assert flat_keyed(OOM_CONTROL)["oom_kill"] == 2
    assert flat_keyed("max 7\n") == {"max": 7}  # pids.events
    real = Path("/sys/fs/cgroup/memory/memory.oom_control")
    if real.exists():  # this machine's own v1 text
        assert "oom_kill" in flat_keyed(real.read_text())


def test_a_v2_worker_group_writes_the_caps_of_the_offered_controllers_and_reads_oom_kills(tmp_path: Path) -> None:
    """On plain folders: which interface files a worker's group writes, and what it reads back."""
    both = CgroupSupport(tuple((name, tmp_path) for name in CONTROLLERS), version=2, group=tmp_path, how="as root")
    group = Cgroup(both, memory_bytes=3 << 30, processes=70)
    path = tmp_path / group.paths[-1].name
    assert group.group == path and group.students == path / STUDENTS and group.paths == [path / STUDENTS, path]
    assert (path / "memory.max").read_text() == str(3 << 30)
    assert (path / "memory.swap.max").read_text() == "0"  # swap does not extend the cap
    assert (path / "pids.max").read_text() == "70"
    assert not (path / "memory.limit_in_bytes").exists()  # v1's names are not v2's
    assert group.oom_kills() == 0  # no memory.events yet: nothing counted
    (path / "memory.events").write_text(MEMORY_EVENTS)
    assert group.oom_kills() == 3

    neither = CgroupSupport((), version=2, group=tmp_path / "bare")
    (tmp_path / "bare").mkdir()
    bare = Cgroup(neither, memory_bytes=1 << 30, processes=10)
    assert sorted(p.name for p in bare.paths[-1].iterdir()) == [STUDENTS]  # no file of a controller not offered
    assert bare.oom_kills() == 0 and bare.memory is None
    assert "cgroup v2 (memory+pids, as root, in " in both.describe()
    assert CgroupSupport((("memory", tmp_path),)).describe() == "cgroup v1 (memory)"


# ----- a real cgroup2 hierarchy -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hierarchy() -> Iterator[Path]:
    """The cgroup v2 hierarchy, mounted here (the same hierarchy as any other cgroup2 mount on this machine), where
    uid 65534 may reach it too."""
    if not sys.platform.startswith("linux"):
        pytest.skip("cgroups exist only on Linux")
    if os.geteuid() != 0:
        pytest.skip("mounting a cgroup2 hierarchy needs root")
    mount = Path(tempfile.mkdtemp(prefix="grader-cgroup2-"))
    mount.chmod(0o755)
    done = subprocess.run(["mount", "-t", "cgroup2", "none", str(mount)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a cgroup2 hierarchy here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode == 0:
            mount.rmdir()


def _all_procs(group: Path) -> set[int]:
    found = set(cgroups._procs(group))
    for child in group.iterdir():
        if child.is_dir():
            found |= _all_procs(child)
    return found


def _destroy(group: Path) -> None:
    """Kill what is in a test's groups, then remove them, deepest first."""
    if not group.is_dir():
        return
    for _ in range(500):
        pids = _all_procs(group)
        if not pids:
            break
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    for child in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with suppress(OSError):
            child.rmdir()
    group.rmdir()


@pytest.fixture
def area(hierarchy: Path) -> Iterator[Path]:
    """A group of this test's own on the real hierarchy, removed afterwards with everything in it."""
    path = hierarchy / f"grader-test-{os.getpid()}-{next(_names)}"
    path.mkdir()
    try:
        yield path
    finally:
        _destroy(path)


@pytest.fixture(scope="module")
def stand_in(hierarchy: Path) -> Iterator[str]:
    """hugetlb enabled for the root's children, standing in for memory (put back as it was afterwards)."""
    if STAND_IN not in (hierarchy / "cgroup.controllers").read_text().split():
        pytest.skip(f"this kernel offers no {STAND_IN} controller on cgroup v2 to stand in for memory")
    control = hierarchy / "cgroup.subtree_control"
    enabled_before = STAND_IN in control.read_text().split()
    if not enabled_before:
        control.write_text(f"+{STAND_IN}")
    try:
        yield STAND_IN
    finally:
        if not enabled_before:
            with suppress(OSError):
                control.write_text(f"-{STAND_IN}")


def _spawn(*argv: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kwargs)


def _move(pid: int, group: Path) -> None:
    (group / "cgroup.procs").write_text(str(pid))


def _wait_until(predicate: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


# A student process that, once told, forks three sleeping children (born in the group it is in by then).
FORKER = "import os, sys, time\nsys.stdin.readline()\n" \
         "for _ in range(3):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n" \
         "print('forked', flush=True)\ntime.sleep(60)\n"


def _worker_group(area: Path) -> Cgroup:
    (area / GROUP).mkdir()
    return Cgroup(CgroupSupport((), version=2, group=area / GROUP), memory_bytes=1 << 30, processes=64)


@pytest.mark.parametrize("with_kill_file", [True, False], ids=["cgroup.kill", "SIGKILL-loop"])
def test_killing_a_submission_kills_the_students_and_what_they_forked_and_spares_the_zygote(
        area: Path, with_kill_file: bool) -> None:
    group = _worker_group(area)
    assert group.group is not None and group.students is not None
    if with_kill_file and not group.kill_file:
        pytest.skip("this kernel has no cgroup.kill (it came in 5.14)")
    group.kill_file = with_kill_file
    zygote = _spawn("sleep", "60")
    group.join(zygote.pid)
    student = _spawn(sys.executable, "-c", FORKER)
    assert group.adopt(student.pid)  # as the worker does right after the zygote forked it
    assert cgroups._procs(group.students) == [student.pid]
    assert student.stdin is not None and student.stdout is not None
    student.stdin.write("go\n")
    student.stdin.flush()
    assert student.stdout.readline() == "forked\n"
    straggler = _spawn("sleep", "60")  # a process forked before it could be moved: still in the worker's group
    group.join(straggler.pid)
    assert len(cgroups._procs(group.students)) == 4  # the student and its three children, born there
    assert group.pids() == {zygote.pid, straggler.pid, *cgroups._procs(group.students)}

    assert group.kill(spare=(zygote.pid,))
    assert student.wait(5) == -signal.SIGKILL and straggler.wait(5) == -signal.SIGKILL
    assert zygote.poll() is None, "the zygote was killed"
    assert group.pids() == {zygote.pid}

    made = group.group
    group.close()  # nothing spared: the zygote too, and the groups removed
    assert zygote.wait(5) == -signal.SIGKILL
    assert made.parent == area / GROUP and not made.exists()


def test_cgroup_kill_alone_empties_the_students_group_and_spares_the_zygote(
        area: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    group = _worker_group(area)
    if not group.kill_file:
        pytest.skip("this kernel has no cgroup.kill (it came in 5.14)")
    assert group.students is not None
    zygote = _spawn("sleep", "60")
    group.join(zygote.pid)
    students = [_spawn("sleep", "60") for _ in range(5)]
    for student in students:
        group.adopt(student.pid)
    real_kill = os.kill
    signalled: list[int] = []

    def no_kill(pid: int, sig: int) -> None:  # the SIGKILL loop does nothing: only cgroup.kill can kill
        if sig == 0:
            real_kill(pid, sig)
        else:
            signalled.append(pid)

    monkeypatch.setattr(cgroups.os, "kill", no_kill)
    try:
        assert group.kill(timeout=5, spare=(zygote.pid,))
        group.kill_file = False
        straggler = _spawn("sleep", "60")
        group.adopt(straggler.pid)
        assert not group.kill(timeout=0.2, spare=(zygote.pid,)), "without cgroup.kill nor signals nothing dies"
    finally:
        monkeypatch.undo()
    assert all(student.wait(5) == -signal.SIGKILL for student in students)
    assert zygote.poll() is None
    straggler.kill()
    straggler.wait()
    group.close()


def test_stale_groups_of_graders_that_died_are_removed_and_others_kept(area: Path) -> None:
    parent = area / GROUP
    parent.mkdir()
    dead = parent / "999999999-0"  # above any pid_max: its grader is not running
    (dead / STUDENTS).mkdir(parents=True)
    live = parent / f"{os.getpid()}-99"
    (live / STUDENTS).mkdir(parents=True)
    busy = parent / "999999999-1"  # a dead grader's group that still holds a process: not removed
    busy.mkdir()
    sleeper = _spawn("sleep", "60")
    _move(sleeper.pid, busy)
    prepare_v2(area, (), may_move=False)
    assert not dead.exists()
    assert (live / STUDENTS).is_dir() and busy.is_dir()
    sleeper.kill()
    sleeper.wait()


def test_detect_on_a_v2_hierarchy_without_memory_and_pids_says_so_and_makes_nothing(hierarchy: Path) -> None:
    offered = (hierarchy / "cgroup.controllers").read_text().split()
    if set(CONTROLLERS) <= set(offered):
        pytest.skip("this hierarchy offers memory and pids (test_a_submission_is_contained... uses them)")
    existed = (hierarchy / GROUP).exists()
    support, why = detect(hierarchy)
    assert support is None
    missing = " and ".join(name for name in CONTROLLERS if name not in offered)
    assert f"cgroup v2 group {hierarchy} does not offer the {missing} controller" in why
    assert why.endswith(LOST)
    assert (hierarchy / GROUP).exists() == existed


def test_as_root_the_groups_go_under_the_hierarchy_s_root_and_no_process_moves(hierarchy: Path, stand_in: str) -> None:
    own_before = Path("/proc/self/cgroup").read_text()
    if cgroups.is_delegated(hierarchy / (own_cgroup(own_before) or "/").lstrip("/"), 0):
        pytest.skip("this test runs in a group systemd delegated: the grader would use that instead")
    existed = (hierarchy / GROUP).exists()
    try:
        support, why = detect_v2(hierarchy, controllers=(stand_in,))
        assert support is not None, why
        assert support.how == "as root"
        assert support.group == hierarchy / GROUP and support.controllers == (stand_in,)
        assert stand_in in (hierarchy / GROUP / "cgroup.subtree_control").read_text().split()
        assert Path("/proc/self/cgroup").read_text() == own_before
        worker = Cgroup(support, memory_bytes=1 << 30, processes=64)
        assert worker.group is not None
        # The controller reaches the worker's group: its limits would apply there and to its students.
        assert stand_in in (worker.group / "cgroup.controllers").read_text().split()
        zygote = _spawn("sleep", "60")
        worker.join(zygote.pid)  # allowed: the worker's group enables nothing for its children
        worker.close()
        assert zygote.wait(5) == -signal.SIGKILL
    finally:
        if not existed:
            _destroy(hierarchy / GROUP)


HELPER = r"""
import importlib.util, json, subprocess, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("cgroups_under_test", sys.argv[1])
cgroups = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = cgroups
spec.loader.exec_module(cgroups)
sys.stdin.readline()  # in its group by now
runs = []
for _ in range(2):  # twice: a second grader in the same group finds the layout made
    support, why = cgroups.detect_v2(Path(sys.argv[2]), controllers=tuple(sys.argv[3].split(",")))
    runs.append({"group": str(support.group) if support else None, "how": support and support.how, "why": why})
worker = {}
if support:
    group = cgroups.Cgroup(support, memory_bytes=2**30, processes=64)
    child = subprocess.Popen(["sleep", "60"])
    group.join(child.pid)
    group.adopt(child.pid)
    worker = {"adopted": cgroups._procs(group.students) == [child.pid], "killed": group.kill()}
    child.wait()
    made = group.group
    group.close()
    worker["removed"] = made.is_relative_to(runs[-1]["group"]) and not made.exists()
print(json.dumps({"runs": runs, "worker": worker, "cgroup": open("/proc/self/cgroup").read()}))
"""


def _python_for(uid: int) -> str:
    """An interpreter ``uid`` may run (this venv's may sit in root's home)."""
    for candidate in (sys.executable, shutil.which("python3"), shutil.which("python3", path="/usr/bin:/bin")):
        with suppress(OSError):
            if candidate and subprocess.run([candidate, "-c", ""], user=uid, capture_output=True,
                                            check=False).returncode == 0:
                return candidate
    pytest.skip(f"no Python here that uid {uid} may run")


def _detect_in(group: Path, hierarchy: Path, controllers: str, uid: int = 0) -> dict:
    """detect_v2 run twice by a process placed in ``group`` (as ``uid``), then a worker group made and used."""
    python = _python_for(uid)
    # The module under test, where ``uid`` may read it: a checkout may sit in a folder only its owner can enter (a
    # home directory, mktemp -d), which another user's process cannot open a file in.
    with tempfile.TemporaryDirectory() as readable:
        os.chmod(readable, 0o755)
        module = Path(shutil.copy(cgroups.__file__, readable))
        module.chmod(0o644)
        helper = _spawn(python, "-c", HELPER, str(module), str(hierarchy), controllers, user=uid, cwd="/")
        _move(helper.pid, group)
        out, _ = helper.communicate("go\n", timeout=30)
    assert helper.returncode == 0
    return json.loads(out)


def _delegate(group: Path, uid: int) -> None:
    """What systemd does for Delegate=yes: the group and the files that arrange it become the user's."""
    for path in (group, group / "cgroup.procs", group / "cgroup.threads", group / "cgroup.subtree_control"):
        os.chown(path, uid, uid)


@pytest.mark.parametrize("uid", [0, NOBODY], ids=["root-delegated-by-systemd", "user-delegated"])
def test_a_delegated_group_is_the_base_and_its_processes_move_to_a_leaf(
        area: Path, hierarchy: Path, stand_in: str, uid: int) -> None:
    if uid == 0:
        os.setxattr(area, "trusted.delegate", b"1")  # systemd's mark on a delegated group
    else:
        _delegate(area, uid)
    shell = _spawn("sleep", "60")  # e.g. the shell the grader was started from, in the same scope
    _move(shell.pid, area)
    result = _detect_in(area, hierarchy, stand_in, uid)
    for run in result["runs"]:
        assert run == {"group": str(area / GROUP), "how": "delegated", "why": ""}
    assert cgroups._procs(area) == []  # no internal processes: everything moved aside...
    assert shell.pid in cgroups._procs(area / LEAF)  # ...to the leaf, the grader too:
    assert own_cgroup(result["cgroup"]) == "/" + str((area / LEAF).relative_to(hierarchy))
    assert not (area / LEAF / LEAF).exists()  # the second detection found the layout, and nested nothing
    assert stand_in in (area / "cgroup.subtree_control").read_text().split()
    assert stand_in in (area / GROUP / "cgroup.subtree_control").read_text().split()
    assert result["worker"] == {"adopted": True, "killed": True, "removed": True}
    shell.kill()
    shell.wait()


def test_a_user_without_a_delegated_group_is_told_what_is_lost_and_the_command(
        area: Path, hierarchy: Path, stand_in: str) -> None:
    result = _detect_in(area, hierarchy, stand_in, NOBODY)
    why = result["runs"][0]["why"]
    assert result["runs"][0]["group"] is None
    assert f"the grader's cgroup {area} is not delegated to uid {NOBODY}" in why
    assert LOST in why and DELEGATE_COMMAND in why
    assert not (area / GROUP).exists() and not (area / LEAF).exists()


def test_a_group_holding_processes_that_are_not_the_grader_s_is_not_rearranged(area: Path, stand_in: str) -> None:
    """The root case never moves a process: a base that holds some and may not be emptied is refused plainly."""
    sleeper = _spawn("sleep", "60")
    _move(sleeper.pid, area)
    with pytest.raises(cgroups.CgroupError, match="holds processes, which are not the grader's to move"):
        prepare_v2(area, (stand_in,), may_move=False)
    assert cgroups._procs(area) == [sleeper.pid]
    sleeper.kill()
    sleeper.wait()


# ----- a submission contained, on this machine's cgroups ----------------------------------------------------------
LIMITS = Limits(call_seconds=5.0, unit_seconds=60.0, submission_seconds=120.0)
# Memory spread over processes, each under the 4 GiB address-space rlimit, 6 GiB together: only the group's cap stops
# it. Fresh interpreters filling their bytes in C, so that the cap is met within seconds even on a busy two-core
# machine (the hostile corpus's memory_bomb_forked touches pages from Python in forks of a threaded process, which
# here takes too long to reach the cap before it kills its children).
SPREAD_MEMORY_BOMB = """
import subprocess, sys
HOG = "import sys, time\\nhog = b'x' * (3 << 29)\\nprint('full', flush=True)\\ntime.sleep(60)\\n"
hogs = [subprocess.Popen([sys.executable, "-c", HOG], stdout=subprocess.PIPE, text=True) for _ in range(4)]
filled = [hog.stdout.readline() for hog in hogs]  # "" where the OOM killer ended it first
for hog in hogs:
    hog.kill()
    hog.wait()
"""
SOURCES = {"memory_spread_over_processes": SPREAD_MEMORY_BOMB,
           "fork_bomb": "".join(next(c for c in CASES if c.name == "fork_bomb").cells)}


def _events(path: Path | None, name: str) -> dict[str, int]:
    with suppress(OSError):
        return flat_keyed((path / name).read_text()) if path else {}
    return {}


@pytest.mark.parametrize("version", [1, 2], ids=["cgroup-v1", "cgroup-v2"])
@pytest.mark.parametrize("case_name", list(SOURCES))
def test_a_hostile_submission_is_contained_by_its_worker_s_cgroup(version: int, case_name: str) -> None:
    sandbox = isolation.detect()
    support = sandbox.cgroups
    if not (support and support.version == version and set(CONTROLLERS) <= set(support.controllers)):
        pytest.skip("needs a cgroup v2 machine with the memory/pids controllers" if version == 2 else
                    "needs a cgroup v1 machine with writable memory/pids hierarchies")
    program = read_program(SOURCES[case_name].encode(), kind="python", name="student.py", written_ids=[])
    with WorkerPool(size=1, sandbox=sandbox, limits=LIMITS) as pool, pool.acquire() as worker:
        worker.start()
        group = worker.cgroup
        assert group is not None and worker.host_pid is not None
        pids_dir = group.group if version == 2 else next(p for p in group.paths if p.parent.parent.name == "pids")
        oom_before = group.oom_kills()
        refused_before = _events(pids_dir, "pids.events").get("max", 0)
        with StudentProcess(limits=LIMITS, deadline=time.monotonic() + 120, worker=worker) as process:
            process.start()
            if version == 2:
                assert process.pid in cgroups._procs(group.students)  # adopted before any student code ran
            process.load(units=program.wire_units(), module_name=program.module_name, stop_on_exit=True,
                         withheld=())
        if case_name == "fork_bomb":
            assert _events(pids_dir, "pids.events").get("max", 0) > refused_before, "no fork was refused"
        else:
            assert group.oom_kills() > oom_before, "6 GiB in four processes should have met the group's 4 GiB cap"
        assert group.pids() == {worker.host_pid}, "something the submission started is still in the group"
        assert worker.alive, "the zygote was killed with the submission"
