"""The layers around a student's process, chosen once per run from what this machine offers.

* bubblewrap (Linux): new pid, network, mount, IPC and UTS namespaces around each warm worker (a zygote that forks
  the students' processes, see workers.py); only the Python installation and the child runtime are visible
  (read-only, the root too); a private tmpfs for /tmp; no network at all (its loopback is its own); the whole pid
  namespace dies with the grader or when it is killed. Run by root, the zygote is uid 0 inside with only the
  capabilities to switch uids, and each student process it forks becomes uid 65534 for real with no capabilities,
  an empty bounding set and no_new_privs (child/privileges.py, checked before any student code runs); run by anyone
  else, the worker gets a user namespace (uid 65534 inside, no capabilities, no nested user namespaces), where the
  students share the zygote's uid. In both the zygote is the pid namespace's init, which no signal from a student
  reaches (see BWRAP_COMMON); what a shared uid still allows (its rlimits, its priority) is checked after each
  submission, and a worker found changed is replaced (child/zygote.py).
* cgroup memory and pids groups, v1, or v2 as root or in a delegated group (see cgroups.py): memory and process
  count for the submission as a whole.
* rlimits, everywhere: address space, CPU time, file size, open files, no core dumps (and the process count
  where no pids cgroup exists and the grader does not run as root).

Modes. ``require``, the default, uses every layer that works and refuses to run student code without the namespace
layer: a machine that lacks bubblewrap fails closed, with the command that installs it and the explicit way on.
``partial`` (unsafe for untrusted code) goes on without it with every other layer, for a throwaway container such as
Gradescope's: as root, student processes are then uid 65534 on the real filesystem, so the run first checks that
uid 65534 can reach the Python runtime (reach.py) and refuses, naming the folders, where it cannot. ``off`` keeps only
rlimits and process groups (for debugging a submission one trusts). Whatever is missing is said in the terminal
and recorded with every result (``Sandbox.exposure``), and the instructor's pages show it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ConfigurationError, SandboxUnavailable
from grader.execute import cgroups, reach, seccomp
from grader.execute.limits import Limits
from grader.paths import PROJECT_ROOT

MODES = ("require", "partial", "off")
DEFAULT_MODE = "require"
# For every command's --sandbox: the unsafe modes say so where they are chosen.
MODES_HELP = ("isolation of student code: require (the default: refuse to run it without the namespace layer, "
              "bubblewrap), partial (UNSAFE for untrusted code: every other layer this machine has, for a throwaway "
              "container such as Gradescope's), off (UNSAFE: rlimits only, student code runs as your user; for "
              "debugging a submission you trust)")
CHILD_DIR = Path(__file__).resolve().parent / "child"
SANDBOX_CHILD_DIR = "/grader-child"
SANDBOX_UID = 65534  # "nobody" inside the user namespace
BWRAP_NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try")
# --as-pid-1: the zygote is the pid namespace's init, not a child of bubblewrap's. The kernel then drops every signal
# sent from inside the namespace that init has no handler for, SIGKILL and SIGSTOP included, and kill(-1) skips it:
# a student cannot kill or stop the zygote even where it shares the zygote's uid (the user-namespace layout). It
# also makes the zygote the parent of every orphan, so a sweep can wait until nothing else is left.
BWRAP_COMMON = ("--die-with-parent", "--new-session", "--as-pid-1")
# Run by root, bubblewrap sets up the sandbox with privileges and keeps for the zygote only what it needs to make each
# student process uid 65534 for real (outside the sandbox too); the fork drops those before any student code runs.
ROOT_CAPS = ("--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP")
# Anyone else gets a user namespace: uid 65534 inside, their own uid (without capabilities) outside.
USER_NS = ("--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--cap-drop", "ALL")


@dataclass(frozen=True)
class Sandbox:
    mode: str
    bwrap: str | None = None  # path of a bubblewrap that works here
    bwrap_flags: tuple[str, ...] = ()
    # Set when the grader runs as root: each student process becomes this uid for real (with bubblewrap, or without
    # it in ``auto`` mode, e.g. in a container that refuses namespaces: then at least not root).
    student_uid: int | None = None
    seccomp: bool = False  # bubblewrap loads grader/execute/seccomp.py's filter
    cgroups: cgroups.CgroupSupport | None = None
    missing: tuple[str, ...] = ()  # layers that could not be used, each with the reason
    python_roots: tuple[str, ...] = ()

    @property
    def layers(self) -> tuple[str, ...]:
        active = []
        if self.bwrap:
            user = (f"uid {SANDBOX_UID}" if self.student_uid else f"uid {SANDBOX_UID} in a user namespace")
            active += [f"namespaces (bubblewrap: pid, mount, ipc, uts{'' if self.student_uid else ', user'})",
                       "no network", "private filesystem view", user, "no capabilities"]
            if self.seccomp:
                active.append("seccomp (no namespaces, mounts, ptrace, keyrings, BPF)")
        elif self.student_uid is not None:
            active += [f"uid {self.student_uid} (no namespaces)", "no capabilities"]
        if self.cgroups:
            active.append(self.cgroups.describe())
        active += ["rlimits", "process group"]
        return tuple(active)

    def describe(self) -> str:
        """One line for the terminal and the results: what is active, and what is not."""
        text = "sandbox: " + ", ".join(self.layers)
        if self.missing:
            text += "; NOT active: " + "; ".join(self.missing)
        return text

    def exposure(self) -> str:
        """What student code could reach because of the layers missing here, in one sentence for the instructor's
        pages (recorded with every result); empty when every layer is active."""
        reach: list[str] = []
        if not self.bwrap:
            if self.student_uid is not None:
                reach += [f"every file that all users may read (as uid {self.student_uid}; the solutions and hidden "
                          "checks too where their folders let others in)", "the network",
                          "every process's command line"]
            else:
                reach += ["every file the grader's user can read or write (the solutions, the hidden checks, the "
                          "gradebook and other students' work included)", "the network",
                          "the grader's own processes (to signal or trace them)"]
        elif not self.seccomp:
            reach.append("the kernel calls the seccomp filter refuses (ptrace, BPF, keyrings, new namespaces)")
        if not self.cgroups:
            reach.append("more memory and processes than the limits allow, spread over several processes")
        if not reach:
            return ""
        return "student code could reach " + "; ".join(reach)

    def summary(self) -> str:
        """Short form recorded with every result."""
        parts = ["bubblewrap"] if self.bwrap else []
        parts += [f"uid-{self.student_uid}"] if self.student_uid is not None and not self.bwrap else []
        parts += ["seccomp"] if self.seccomp else []
        parts += [f"cgroup-{c}" for c in self.cgroups.controllers] if self.cgroups else []
        return ", ".join([*parts, "rlimits"])

    # ----- starting a warm worker ------------------------------------------------------------------------------
    def settings(self) -> dict[str, object]:
        """What the zygote needs to know about the layers around it (child/zygote.py)."""
        # Without bubblewrap (whose --die-with-parent ties the sandbox to the grader) the zygote ties itself to the
        # process starting it, this one.
        return {"student_uid": self.student_uid, "namespaced": bool(self.bwrap),
                "seccomp": self.seccomp, "die_with_parent": not self.bwrap,
                "parent": None if self.bwrap else os.getpid()}

    def command(self, control_fd: int, *, env: dict[str, str], device: str, limits: Limits,
                seccomp_fd: int | None = None) -> list[str]:
        """The argv that starts a zygote (child/zygote.py) on ``control_fd`` inside every active layer.

        ``seccomp_fd`` (from seccomp.program_fd(), passed to the process) is required when ``self.seccomp``.
        """
        child_args = [str(control_fd), json.dumps(self.settings())]
        if not self.bwrap:
            return [sys.executable, "-s", "-P", str(CHILD_DIR / "zygote.py"), *child_args]
        argv = [self.bwrap, *self.bwrap_flags, *self._mounts(device, limits), "--chdir", "/tmp", "--clearenv"]
        if self.seccomp:
            if seccomp_fd is None:
                raise ValueError("this sandbox loads a seccomp filter: pass its file descriptor")
            argv += ["--seccomp", str(seccomp_fd)]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return [*argv, "--", sys.executable, "-s", "-P", f"{SANDBOX_CHILD_DIR}/zygote.py", *child_args]

    def _mounts(self, device: str, limits: Limits) -> list[str]:
        mounts: list[str] = []
        for top in ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin"):
            if os.path.islink(top):
                mounts += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                mounts += ["--ro-bind", top, top]
        mounts += ["--ro-bind", "/usr", "/usr"]
        for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                     "/etc/alternatives"):
            mounts += ["--ro-bind-try", path, path]
        # The mounts of our own first: a Python installation under /tmp (a venv in a checkout there) is then bound
        # inside the scratch tmpfs rather than hidden by it.
        mounts += ["--proc", "/proc", "--dev", "/dev",
                   "--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", "/tmp",
                   "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm"]
        for folder in _ancestors(self.python_roots):
            if folder not in ("/tmp", "/dev", "/proc"):
                mounts += ["--perms", "0755", "--dir", folder]  # else made 0700, closed to uid 65534
        for root in self.python_roots:
            mounts += ["--ro-bind", root, root]
        for secret in _secrets_inside(self.python_roots):
            mounts += ["--tmpfs", secret]  # e.g. a non-editable install of this grader in site-packages
        mounts += ["--ro-bind", str(CHILD_DIR), SANDBOX_CHILD_DIR]
        if device.startswith("cuda"):
            # GPU grading needs the NVIDIA device nodes and sysfs. Not exercised on a GPU machine yet.
            for node in sorted(Path("/dev").glob("nvidia*")):
                mounts += ["--dev-bind", str(node), str(node)]
            mounts += ["--ro-bind", "/sys", "/sys"]
        return [*mounts, "--remount-ro", "/"]  # the folders bubblewrap made for its mount points, too


def _ancestors(paths: tuple[str, ...]) -> list[str]:
    """Every folder above the given paths, outermost first: /root, /root/.pyenv, ..."""
    found: set[str] = set()
    for path in paths:
        found.update(str(p) for p in Path(path).parents if str(p) != "/")
    return sorted(found, key=lambda p: (p.count("/"), p))


def _secrets_inside(roots: tuple[str, ...]) -> list[str]:
    secrets = [Path(__file__).resolve().parents[1], PROJECT_ROOT / "solutions", PROJECT_ROOT / "tests"]
    return sorted({str(s) for s in secrets for r in roots if s.is_relative_to(r)})


def _python_roots() -> tuple[str, ...]:
    """Folders the child's Python needs: the interpreter, its standard library, the venv, NumPy and torch."""
    candidates = {sys.prefix, sys.base_prefix, str(Path(os.path.realpath(sys.executable)).parents[1])}
    for name in ("numpy", "torch"):
        # Found, not imported: importing torch here would cost the run 2 s before its first submission.
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            candidates.add(str(Path(spec.origin).resolve().parents[1]))
    ordered = sorted(os.path.realpath(c) for c in candidates)
    # Keep only outermost folders: binding one inside another would hide nothing but costs a mount.
    roots: list[str] = []
    for path in ordered:
        if not any(Path(path).is_relative_to(r) for r in roots):
            roots.append(path)
    # Paths as the interpreter sees them (a venv's own path may be a symlink); bind those that differ too.
    for path in (sys.prefix, sys.base_prefix):
        if not any(Path(path).is_relative_to(r) for r in roots):
            roots.append(path)
    return tuple(roots)


def _probe_bwrap(bwrap: str, flags: tuple[str, ...], command: list[str], *, with_seccomp: bool = False) -> str:
    """Empty when bubblewrap can create its namespaces here (and run ``command`` in them), else its complaint."""
    argv = [bwrap, *flags, "--ro-bind", "/", "/"]
    fds: tuple[int, ...] = ()
    if with_seccomp:
        fds = (seccomp.program_fd(),)
        argv += ["--seccomp", str(fds[0])]
    try:
        done = subprocess.run([*argv, "--", *command], capture_output=True, timeout=20, check=False, pass_fds=fds)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    finally:
        for fd in fds:
            os.close(fd)
    return "" if done.returncode == 0 else (done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}")


@functools.cache
def detect(mode: str = DEFAULT_MODE) -> Sandbox:
    """What this machine offers; cached, so a class is graded under one set of layers.

    Raises SandboxUnavailable where ``mode`` cannot be had here: ``require`` without the namespace layer, ``partial``
    as root where uid 65534 cannot reach the Python runtime. Nothing is ever dropped later, at run time."""
    if mode not in MODES:
        raise ConfigurationError(f"--sandbox must be one of {', '.join(MODES)}, not {mode!r}")
    missing: list[str] = []
    bwrap_path, flags, student_uid, use_seccomp = None, (), None, False
    namespaces_why = ""  # why there is no namespace layer, for the refusal
    if mode == "off":
        missing.append("namespaces and cgroups (turned off with --sandbox off)")
    elif not sys.platform.startswith("linux"):
        namespaces_why = f"bubblewrap needs Linux, and this is {sys.platform}"
        missing.append(f"namespaces: not available on {sys.platform}; student code can read your files and use "
                       "the network")
    else:
        found = shutil.which("bwrap")
        if not found:
            namespaces_why = "bubblewrap is not installed"
            missing.append("namespaces: bubblewrap is not installed; student code can read files your user can "
                           "read, use the network and signal your processes")
        else:
            candidates = []
            if os.geteuid() == 0:
                candidates.append((*BWRAP_NAMESPACES, *BWRAP_COMMON, *ROOT_CAPS, "--hostname", "sandbox"))
            user_ns = (*BWRAP_NAMESPACES, *BWRAP_COMMON, *USER_NS, "--hostname", "sandbox")
            # --disable-userns (no nested user namespaces) needs bubblewrap >= 0.8.
            candidates += [(*user_ns, "--disable-userns"), user_ns]
            problem, chosen = "", ["/bin/true"]
            for candidate in candidates:
                problem = _probe_bwrap(found, candidate, chosen)
                if not problem:
                    bwrap_path, flags = found, candidate
                    student_uid = SANDBOX_UID if "--unshare-user" not in candidate else None
                    break
            if problem:
                namespaces_why = f"bubblewrap ({found}) cannot create namespaces here: {problem[:200]}"
                missing.append(f"namespaces: bubblewrap cannot create them here ({problem[:200]})")
            elif not seccomp.supported():
                missing.append(f"seccomp: the grader's filter is written for x86-64, not {platform.machine()}")
            else:
                problem = _probe_bwrap(found, flags, chosen, with_seccomp=True)
                use_seccomp = not problem
                if problem:
                    missing.append(f"seccomp: bubblewrap could not load the filter ({problem[:200]})")
    if mode == "require" and bwrap_path is None:
        raise SandboxUnavailable(refusal(namespaces_why))
    support = None
    if mode != "off":
        support, why = cgroups.detect()
        if support is None:
            missing.append(f"cgroups: {why}")
    if mode == "partial" and bwrap_path is None and _can_switch_uid():
        student_uid = SANDBOX_UID  # no namespaces, but a student process that is not root
        if stopped := reach.blocked(_python_roots(), SANDBOX_UID, SANDBOX_UID):
            raise SandboxUnavailable(unreachable(stopped))
    return Sandbox(mode=mode, bwrap=bwrap_path, bwrap_flags=flags, student_uid=student_uid, seccomp=use_seccomp,
                   cgroups=support,
                   missing=tuple(missing),
                   python_roots=_python_roots() if bwrap_path else ())


GOING_ON = ("To grade anyway, knowingly: --sandbox partial (UNSAFE for untrusted code: every other layer this "
            "machine has) or --sandbox off (rlimits only); the dashboard then says what student code could reach. "
            "See docs/security.md.")


def refusal(why: str) -> str:
    """Why ``require`` refuses here: what is missing, the command that gives it on this system, the way on."""
    return (f"refusing to run student code without the namespace layer (bubblewrap: a private view of the files, "
            f"no network): {why}. {namespaces_fix(why)} {GOING_ON}")


def namespaces_fix(why: str) -> str:
    """The command that gives this system the namespace layer, as far as the machine tells."""
    if not sys.platform.startswith("linux"):
        return "On macOS and Windows, grade in a Linux virtual machine that has it (docs/security.md)."
    sudo = "" if os.geteuid() == 0 else "sudo "
    if "not installed" in why:
        for tool, command in (("apt-get", "apt-get install bubblewrap"), ("dnf", "dnf install bubblewrap"),
                              ("yum", "yum install bubblewrap"), ("zypper", "zypper install bubblewrap"),
                              ("pacman", "pacman -S bubblewrap"), ("apk", "apk add bubblewrap")):
            if shutil.which(tool):
                also = " (or `make system-deps` in the grader's folder)" if tool == "apt-get" else ""
                return f"Install it: {sudo}{command}{also}."
        return "Install bubblewrap with this system's package manager."
    for setting, good, fix in (
            ("kernel/apparmor_restrict_unprivileged_userns", "0",
             f"AppArmor forbids unprivileged user namespaces here (Ubuntu 23.10 and later): run the grader as root, "
             f"or allow them with {sudo}sysctl kernel.apparmor_restrict_unprivileged_userns=0."),
            ("kernel/unprivileged_userns_clone", "1",
             f"This kernel forbids unprivileged user namespaces: {sudo}sysctl kernel.unprivileged_userns_clone=1."),
            ("user/max_user_namespaces", None,
             f"User namespaces are switched off: {sudo}sysctl user.max_user_namespaces=15000.")):
        try:
            value = Path("/proc/sys", setting).read_text().strip()
        except OSError:
            continue
        if (good is not None and value != good and os.geteuid() != 0) or (good is None and value == "0"):
            return fix
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return ("This looks like a container, whose defaults refuse namespaces: grade on the host or in a virtual "
                "machine.")
    return "bubblewrap's own message above says what stopped it."


def unreachable(stopped: list[reach.Blocked]) -> str:
    """Why ``partial`` refuses as root without bubblewrap: the folders uid 65534 cannot get through."""
    folders = "; ".join(b.describe() for b in stopped)
    fixes = " and ".join(f"`{f}`" for f in dict.fromkeys(b.fix for b in stopped))
    return (f"--sandbox partial without bubblewrap runs student code as uid {SANDBOX_UID} on this machine's files, "
            f"and uid {SANDBOX_UID} cannot reach the Python runtime it imports from: {folders}. Correct code would "
            f"fail there (a module not found), so nothing is graded. Let it through with {fixes} (to enter only, "
            f"neither list nor read a folder above), or install bubblewrap and use the default --sandbox require, "
            f"or --sandbox off (student code then runs as root).")


def _can_switch_uid() -> bool:
    return sys.platform.startswith("linux") and os.geteuid() == 0


def nproc_limit(limits: Limits, sandbox: Sandbox) -> int | None:
    """RLIMIT_NPROC for the child, where it helps: no pids cgroup, and the student's uid is not root (whom the
    kernel exempts).

    The kernel counts every process of the uid, the instructor's own included, so the limit is what runs now
    plus the submission's allowance.
    """
    if sandbox.cgroups and "pids" in sandbox.cgroups.controllers:
        return None
    uid = sandbox.student_uid if sandbox.student_uid is not None else os.geteuid()
    if uid == 0 or not Path("/proc").is_dir():
        return None
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count + limits.processes
