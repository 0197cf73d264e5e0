"""A seccomp filter for the student's process: system calls that attention code never needs are refused (EPERM).

Namespaces and the uid switch already keep the student away from the grader; the filter shrinks what is left to
attack in the kernel: no new namespaces (nested user namespaces included, which the root layout cannot forbid
otherwise), no mounts, no ptrace or cross-process memory access, no kernel keyrings, BPF, perf events,
userfaultfd, io_uring or module loading. ``clone3`` answers ENOSYS so that the C library falls back to ``clone``,
whose namespace flags the filter can see. bubblewrap loads the program (``--seccomp FD``) just before it execs.

Only x86-64 is described here; elsewhere this layer is reported missing.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_NEW_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

# x86-64 numbers, from the kernel's syscall_64.tbl.
REFUSED = {
    "ptrace": 101, "pivot_root": 155, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
    "init_module": 175, "delete_module": 176, "kexec_load": 246, "add_key": 248, "request_key": 249,
    "keyctl": 250, "unshare": 272, "perf_event_open": 298, "open_by_handle_at": 304, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313, "bpf": 321, "userfaultfd": 323,
    "kexec_file_load": 320, "io_uring_setup": 425, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433,
}
CLONE, CLONE3 = 56, 435

# Classic BPF, as seccomp reads it: struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}.
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_KILL_PROCESS = 0x7FFF0000, 0x80000000
OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0 = 0, 4, 16


def _ret_errno(code: int) -> int:
    return 0x00050000 | code


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")


@functools.cache
def program() -> bytes:
    """The filter as bytes, for bubblewrap's --seccomp."""
    insns: list[tuple[int, int, int, int]] = []
    eperm, enosys = _ret_errno(errno.EPERM), _ret_errno(errno.ENOSYS)
    refused = sorted(REFUSED.values())
    # Layout: arch check; nr; x32 check; one jeq per refused call; clone; clone3; then the shared returns and the
    # clone flags test, whose indices are known once the checks are counted.
    first_ret = 4 + len(refused) + 2
    label = {"allow": first_ret, "eperm": first_ret + 1, "enosys": first_ret + 2, "kill": first_ret + 3,
             "clone_flags": first_ret + 4}

    def jump(at: int, target: str) -> int:
        return label[target] - at - 1

    insns.append((LD_W_ABS, 0, 0, OFFSET_ARCH))
    insns.append((JEQ_K, 0, jump(1, "kill"), AUDIT_ARCH_X86_64))
    insns.append((LD_W_ABS, 0, 0, OFFSET_NR))
    at = len(insns)
    insns.append((JGE_K, jump(at, "eperm"), 0, X32_SYSCALL_BIT))
    for number in refused:
        at = len(insns)
        insns.append((JEQ_K, jump(at, "eperm"), 0, number))
    at = len(insns)
    insns.append((JEQ_K, jump(at, "clone_flags"), 0, CLONE))
    at = len(insns)
    insns.append((JEQ_K, jump(at, "enosys"), 0, CLONE3))
    assert len(insns) == first_ret, (len(insns), first_ret)
    insns.append((RET_K, 0, 0, RET_ALLOW))
    insns.append((RET_K, 0, 0, eperm))
    insns.append((RET_K, 0, 0, enosys))
    insns.append((RET_K, 0, 0, RET_KILL_PROCESS))
    # clone: refuse any namespace flag in its first argument (the low 32 bits hold them all).
    insns.append((LD_W_ABS, 0, 0, OFFSET_ARG0))
    insns.append((JSET_K, 0, 1, CLONE_NEW_FLAGS))
    insns.append((RET_K, 0, 0, eperm))
    insns.append((RET_K, 0, 0, RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *insn) for insn in insns)


def program_fd() -> int:
    """A file descriptor holding the program from its start, for one bubblewrap to read."""
    fd = os.memfd_create("grader-seccomp", 0)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
