"""The layers around a student's process, chosen once per run from what this machine offers.

* bubblewrap (Linux): new user, pid, network, mount, IPC and UTS namespaces; no capabilities; uid 65534 inside;
  only the Python installation and the child runtime are visible (read-only); a private tmpfs for /tmp; no
  network at all (its loopback is its own); the whole pid namespace dies with the grader or when it is killed.
* cgroup v1 memory and pids groups (see cgroups.py): memory and process count for the submission as a whole.
* rlimits, everywhere: address space, CPU time, file size, open files, no core dumps (and the process count
  where no pids cgroup exists and the grader does not run as root).

``auto`` uses every layer that works and says which are missing; ``require`` refuses to grade without the
namespace layer; ``off`` keeps only rlimits and process groups (for debugging a submission).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import ConfigurationError
from grader.execute import cgroups
from grader.execute.limits import Limits
from grader.layout import PROJECT_ROOT

MODES = ("auto", "require", "off")
CHILD_DIR = Path(__file__).resolve().parent / "child"
SANDBOX_CHILD_DIR = "/grader-child"
SANDBOX_UID = 65534  # "nobody" inside the user namespace
BWRAP_NAMESPACES = ("--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                    "--unshare-cgroup-try")


@dataclass(frozen=True)
class Sandbox:
    mode: str
    bwrap: str | None = None  # path of a bubblewrap that works here
    bwrap_flags: tuple[str, ...] = ()
    cgroups: cgroups.CgroupSupport | None = None
    missing: tuple[str, ...] = ()  # layers that could not be used, each with the reason
    python_roots: tuple[str, ...] = field(default=())

    @property
    def layers(self) -> tuple[str, ...]:
        active = []
        if self.bwrap:
            active += ["namespaces (bubblewrap: user, pid, mount, ipc, uts)", "no network",
                       "private filesystem view", f"uid {SANDBOX_UID}", "no capabilities"]
        if self.cgroups:
            active.append(f"cgroup v1 ({'+'.join(self.cgroups.controllers)})")
        active += ["rlimits", "process group"]
        return tuple(active)

    def describe(self) -> str:
        """One line for the terminal and the results: what is active, and what is not."""
        text = "sandbox: " + ", ".join(self.layers)
        if self.missing:
            text += "; NOT active: " + "; ".join(self.missing)
        return text

    def summary(self) -> str:
        """Short form recorded with every result."""
        parts = (["bubblewrap"] if self.bwrap else []) + [f"cgroup-{c}" for c in
                                                          (self.cgroups.controllers if self.cgroups else ())]
        return ", ".join([*parts, "rlimits"])

    # ----- starting a process ----------------------------------------------------------------------------------
    def command(self, child_args: list[str], *, env: dict[str, str], device: str, scratch: Path | None,
                limits: Limits, procs_files: list[str]) -> list[str]:
        """The argv that starts the child runtime with ``child_args`` inside every active layer."""
        if self.bwrap:
            inner = [sys.executable, "-s", "-P", f"{SANDBOX_CHILD_DIR}/main.py", *child_args]
            argv = [self.bwrap, *self.bwrap_flags, *self._mounts(device, limits), "--chdir", "/tmp", "--clearenv"]
            for key, value in env.items():
                argv += ["--setenv", key, value]
            argv += ["--", *inner]
        else:
            argv = [sys.executable, "-s", "-P", str(CHILD_DIR / "main.py"), *child_args]
        if procs_files:
            # The launcher joins the groups and then becomes the process, so nothing runs outside them.
            joins = " && ".join(f'echo $$ > "${i + 1}"' for i in range(len(procs_files)))
            argv = ["/bin/sh", "-c", f'{joins} && shift {len(procs_files)} && exec "$@"', "grader-launch",
                    *procs_files, *argv]
        return argv

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
        for root in self.python_roots:
            mounts += ["--ro-bind", root, root]
        for secret in _secrets_inside(self.python_roots):
            mounts += ["--tmpfs", secret]  # e.g. a non-editable install of this grader in site-packages
        mounts += ["--ro-bind", str(CHILD_DIR), SANDBOX_CHILD_DIR, "--proc", "/proc", "--dev", "/dev",
                   "--size", str(limits.scratch_bytes), "--tmpfs", "/tmp",
                   "--size", str(64 << 20), "--tmpfs", "/dev/shm"]
        if device.startswith("cuda"):
            # GPU grading needs the NVIDIA device nodes and sysfs. Not exercised on a GPU machine yet.
            for node in sorted(Path("/dev").glob("nvidia*")):
                mounts += ["--dev-bind", str(node), str(node)]
            mounts += ["--ro-bind", "/sys", "/sys"]
        return [*mounts, "--remount-ro", "/"]  # the folders bubblewrap made for its mount points, too


def _secrets_inside(roots: tuple[str, ...]) -> list[str]:
    secrets = [Path(__file__).resolve().parents[1], PROJECT_ROOT / "solutions", PROJECT_ROOT / "tests"]
    return sorted({str(s) for s in secrets for r in roots if s.is_relative_to(r)})


def _python_roots() -> tuple[str, ...]:
    """Folders the child's Python needs: the interpreter, its standard library, the venv, NumPy and torch."""
    import numpy
    import torch

    candidates = {sys.prefix, sys.base_prefix, str(Path(os.path.realpath(sys.executable)).parents[1])}
    for module in (numpy, torch):
        candidates.add(str(Path(module.__file__).resolve().parents[1]))
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


def _probe_bwrap(bwrap: str, flags: tuple[str, ...]) -> str:
    """Empty when bubblewrap can create its namespaces here, else its complaint."""
    argv = [bwrap, *flags, "--ro-bind", "/", "/", "--", "/bin/true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return "" if done.returncode == 0 else (done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}")


@functools.cache
def detect(mode: str = "auto") -> Sandbox:
    """What this machine offers; cached, so a class is graded under one set of layers."""
    if mode not in MODES:
        raise ConfigurationError(f"--sandbox must be one of {', '.join(MODES)}, not {mode!r}")
    missing: list[str] = []
    bwrap_path, flags = None, ()
    if mode == "off":
        missing.append("namespaces and cgroups (turned off with --sandbox off)")
    elif not sys.platform.startswith("linux"):
        missing.append(f"namespaces: not available on {sys.platform}; student code can read your files and use "
                       "the network")
    else:
        found = shutil.which("bwrap")
        if not found:
            missing.append("namespaces: bubblewrap is not installed (apt-get install bubblewrap); student code can "
                           "read files your user can read, use the network and signal your processes")
        else:
            base = (*BWRAP_NAMESPACES, "--die-with-parent", "--new-session", "--cap-drop", "ALL",
                    "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--hostname", "sandbox")
            problem = ""
            for candidate in ((*base, "--disable-userns"), base):  # --disable-userns needs bubblewrap >= 0.8
                problem = _probe_bwrap(found, candidate)
                if not problem:
                    bwrap_path, flags = found, candidate
                    break
            if problem:
                missing.append(f"namespaces: bubblewrap cannot create them here ({problem[:200]})")
    support = None
    if mode != "off":
        support, why = cgroups.detect()
        if support is None:
            missing.append(f"cgroups: {why}")
    if mode == "require" and bwrap_path is None:
        raise ConfigurationError("--sandbox require: " + "; ".join(missing))
    return Sandbox(mode=mode, bwrap=bwrap_path, bwrap_flags=flags, cgroups=support, missing=tuple(missing),
                   python_roots=_python_roots() if bwrap_path else ())


def nproc_limit(limits: Limits, sandbox: Sandbox) -> int | None:
    """RLIMIT_NPROC for the child, where it helps: no pids cgroup, and not root (whom the kernel exempts).

    The kernel counts every process of the user, the instructor's own included, so the limit is what runs now
    plus the submission's allowance.
    """
    if sandbox.cgroups and "pids" in sandbox.cgroups.controllers:
        return None
    if os.geteuid() == 0 or not Path("/proc").is_dir():
        return None
    uid = os.geteuid()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                continue
    return count + limits.processes
