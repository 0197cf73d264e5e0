"""The hostile corpus: submissions that attack or break the grader, each with the result it must get.

Each case is a correct attention_scoring solution with one hostile twist, so the twist's cost is visible: the
questions it touches lose points (or none do), every other question keeps full marks. Sources are templates:
``{OUT}``, ``{SUBMISSIONS}``, ``{PROJECT}``, ``{PORT}`` and ``{MARKER}`` are filled in by the test, as an
attacker who knows the course's layout would write them.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

QUESTIONS = ("q1", "q2", "q3", "q4")
DAEMON_TAG = "987654"  # the sleep that the daemon case leaves behind; nothing may run with it afterwards

PRELUDE = """
import math
import os
import signal
import sys
import time
import torch
from torch import nn
"""

MASKED_SOFTMAX = """
def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1])
    mask = torch.arange(shape[-1])[None, :] < valid_lens[:, None]
    X = X.masked_fill(~mask, -1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)
"""

ADDITIVE = """
class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
"""

DOT = """
class DotProductAttention(nn.Module):
    def __init__(self, dropout, **kwargs):
        super().__init__(**kwargs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
"""

BILINEAR = """
class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(torch.matmul(queries, self.W), keys.transpose(1, 2))
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
"""

ANSWERS = '''
ANSWER_EX1 = "No: with random keys the two scoring functions give different weights."
ANSWER_EX3 = "No: sum(q + k) = sum(q) + sum(k), and sum(q) cancels in the softmax."
'''


# With nothing else in reach (the worker is its namespace's init), kill(-1) finds no process: ESRCH. Whether it does
# depends on whether an earlier question's fork is still being reaped, so the case does not let it count.
KILL_ALL_BUT_ME = """
try:
    os.kill(-1, signal.SIGKILL)
except ProcessLookupError:
    pass
"""
# Each attempt may be refused (another uid, in the root layout) or ignored (the worker is its namespace's init).
SIGNAL_THE_WORKER = """
for target in (os.getppid(), 1):
    for number in [*range(1, 32), signal.SIGKILL]:
        for send in (os.kill, lambda pid, sig: os.killpg(os.getpgid(pid), sig)):
            try:
                send(target, number)
            except OSError:
                pass
"""
# What a process may do to another of its uid without a signal (prlimit, setpriority), and which every later fork of
# that process inherits; refused in the root layout, where the worker is another uid. In a user namespace the
# worker is replaced after this student (tests/test_user_namespace.py grades these there).
STARVE_THE_WORKER = """
import resource
try:
    resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (0, 0))
except OSError:
    pass
"""
RENICE_THE_WORKER = """
try:
    os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)
except OSError:
    pass
"""


def solution(*, before: str = "", masked_softmax: str = MASKED_SOFTMAX, additive: str = ADDITIVE, dot: str = DOT,
             bilinear: str = BILINEAR, after: str = "") -> list[str]:
    """The parts of a correct solution, in order, with the hostile ones swapped in (one notebook cell each)."""
    parts = [PRELUDE, before, masked_softmax, additive, dot, bilinear, ANSWERS, after]
    return [textwrap.dedent(p).strip() + "\n" for p in parts if p.strip()]


@dataclass(frozen=True)
class Case:
    name: str
    why: str
    cells: list[str]
    kind: str = "py"  # py: the cells joined into one file; ipynb: one notebook cell each
    lost: tuple[str, ...] = ()  # questions that must lose points; all others must keep full marks
    checks: dict[str, str] = field(default_factory=dict)  # check id -> outcome it must have
    status: str = "graded"
    mentions: tuple[str, ...] = ()  # phrases the student's report must contain
    absent: tuple[str, ...] = ()  # phrases nothing in the output folder may contain
    namespaces_only: bool = False  # harmless only inside the namespace layer (kills or reads what it can reach)


CASES = [
    Case("loop_at_import", "an infinite loop at import, in the first statement",
         solution(before="while True:\n    pass\n"),
         mentions=("timeout", "stopped after 3 s")),
    Case("loop_ignoring_signals", "a cell that ignores SIGALRM and SIGTERM, blocks SIGALRM and loops forever",
         solution(before="""
             signal.signal(signal.SIGALRM, signal.SIG_IGN)
             signal.signal(signal.SIGTERM, signal.SIG_IGN)
             signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
             while True:
                 pass
             """), kind="ipynb",
         mentions=("did not stop when interrupted", "started again without it")),
    Case("loop_in_call", "masked_softmax loops forever, ignoring SIGTERM, when valid_lens is None",
         solution(masked_softmax=MASKED_SOFTMAX.replace(
             "    if valid_lens is None:\n",
             "    if valid_lens is None:\n        signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "        while True:\n            time.sleep(0.01)\n")),
         lost=("q1",), checks={"q1.no_valid_lens": "timeout"}, mentions=("no answer within the time limit",)),
    Case("memory_bomb_import", "allocates 64 GiB at import",
         solution(before="hog = bytearray(64 * 2**30)\n"), mentions=("MemoryError",)),
    Case("memory_bomb_forked", "four forked processes fill 1.5 GiB each, more than the submission may use together",
         solution(before="""
             children = []
             for _ in range(4):
                 pid = os.fork()
                 if pid == 0:
                     hog = bytearray(3 * 2**29)
                     for i in range(0, len(hog), 4096):
                         hog[i] = 1
                     time.sleep(30)
                     os._exit(0)
                 children.append(pid)
             time.sleep(2)
             for pid in children:
                 os.kill(pid, signal.SIGKILL)
                 os.waitpid(pid, 0)
             """)),
    Case("memory_bomb_in_call", "AdditiveAttention.forward allocates an impossible tensor",
         solution(additive=ADDITIVE.replace("        queries, keys = self.W_q",
                                            "        waste = torch.ones(10**6, 10**6)\n"
                                            "        queries, keys = self.W_q")),
         lost=("q2",), mentions=("RuntimeError",)),
    Case("fork_bomb", "a bounded fork bomb at import (2**12 processes asked for)",
         solution(before="""
             for _ in range(12):
                 try:
                     os.fork()
                 except OSError:
                     pass
             """)),
    Case("daemon", "a double-forked daemon that calls setsid and execs a long sleep",
         solution(before=f"""
             if os.fork() == 0:
                 os.setsid()
                 if os.fork() == 0:
                     os.execv("/bin/sleep", ["sleep", "{DAEMON_TAG}"])
                 os._exit(0)
             os.wait()
             """)),
    Case("sys_exit_py", "a .py that calls sys.exit() after q1: graded on what it defined before exiting",
         solution(masked_softmax=MASKED_SOFTMAX + "\nsys.exit(0)\n"),
         lost=("q2", "q3", "q4"), mentions=("SystemExit", "`AdditiveAttention` is not defined")),
    Case("exits_in_cells", "notebook cells that call sys.exit() and os._exit(): the kernel would go on",
         solution(before="sys.exit(1)\n", after="os._exit(3)\n"), kind="ipynb",
         mentions=("SystemExit", "ended the process")),
    Case("exits_in_calls", "sys.exit() in DotProductAttention.forward, os._exit() in BilinearAttention.forward",
         solution(dot=DOT.replace("        d = queries.shape[-1]", "        sys.exit(1)"),
                  bilinear=BILINEAR.replace("        scores = torch.bmm(", "        os._exit(0)\n        scores = ("),
                  ),
         lost=("q3", "q4"), mentions=("raised SystemExit", "your code ended the process")),
    Case("kill_parent", "kills its parent process at import",
         solution(before="os.kill(os.getppid(), signal.SIGKILL)\n"), namespaces_only=True),
    Case("kill_parent_in_call", "in masked_softmax, clears its own parent-death signal, then kills its parent (the "
                                "loaded submission) and answers anyway",
         solution(masked_softmax=MASKED_SOFTMAX.replace(
             "    if valid_lens is None:\n",
             "    import ctypes\n    ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)\n"
             "    os.kill(os.getppid(), signal.SIGKILL)\n    if valid_lens is None:\n")),
         lost=("q1",), mentions=("killed by SIGKILL",)),
    Case("kill_everything", "kill(-1, SIGKILL) in masked_softmax: every process it may signal but itself",
         solution(masked_softmax=MASKED_SOFTMAX.replace(
             "    if valid_lens is None:\n", "    os.kill(-1, signal.SIGKILL)\n    if valid_lens is None:\n")),
         lost=("q1",), mentions=("killed by SIGKILL",), namespaces_only=True),
    Case("kill_everything_at_import", "kill(-1, SIGKILL) in a top-level statement, in the loaded submission",
         solution(before="os.kill(-1, signal.SIGKILL)\n"), namespaces_only=True),
    Case("kill_everything_last", "kill(-1, SIGKILL) in BilinearAttention.forward: the last question, which the "
                                 "loaded submission answers itself (no fork between it and the warm worker)",
         solution(bilinear=BILINEAR.replace("        scores = torch.bmm(", textwrap.indent(KILL_ALL_BUT_ME, " " * 8)
                                            + "        scores = torch.bmm(")),
         namespaces_only=True),
    Case("signal_the_worker_last", "in the last question: every signal to its parent (the warm worker, whatever "
                                   "the layout), to the parent's process group and to pid 1, SIGKILL last",
         solution(bilinear=BILINEAR.replace("        scores = torch.bmm(", textwrap.indent(SIGNAL_THE_WORKER, " " * 8)
                                            + "        scores = torch.bmm(")),
         namespaces_only=True),
    Case("starve_the_worker", "in the last question, sets its parent's CPU hard limit to 0: the warm worker, in a "
                              "user namespace (the kernel kills it the next time it runs)",
         solution(bilinear=BILINEAR.replace("        scores = torch.bmm(", textwrap.indent(STARVE_THE_WORKER, " " * 8)
                                            + "        scores = torch.bmm(")),
         namespaces_only=True),
    Case("renice_the_worker", "in the last question, renices its parent: the warm worker, in a user namespace",
         solution(bilinear=BILINEAR.replace("        scores = torch.bmm(", textwrap.indent(RENICE_THE_WORKER, " " * 8)
                                            + "        scores = torch.bmm(")),
         namespaces_only=True),
    Case("close_all_fds", "closes every file descriptor inside masked_softmax",
         solution(masked_softmax=MASKED_SOFTMAX.replace("    if valid_lens is None:\n",
                                                        "    os.closerange(0, 65536)\n    if valid_lens is None:\n")),
         lost=("q1",), checks={"q1.textbook_1d": "crashed"}, mentions=("ended the process",)),
    Case("output_flood", "floods stdout and stderr (print, sys.stderr, os.write) at import and in every call",
         solution(before="""
             for _ in range(200):
                 print("spam " * 20000)
                 sys.stderr.write("err " * 20000)
             os.write(1, b"raw " * 10_000_000)
             """, masked_softmax=MASKED_SOFTMAX.replace("    if valid_lens is None:\n",
                                                       "    print('x' * 10**6)\n    if valid_lens is None:\n"))),
    Case("huge_tensor", "masked_softmax returns a 12000 x 12000 tensor (576 MB)",
         solution(masked_softmax=MASKED_SOFTMAX + "\n_real = masked_softmax\n"
                  "def masked_softmax(X, valid_lens):\n    return torch.zeros(12000, 12000)\n",
                  additive=ADDITIVE.replace("masked_softmax(", "_real("), dot=DOT.replace("masked_softmax(", "_real("),
                  bilinear=BILINEAR.replace("masked_softmax(", "_real(")),
         lost=("q1",), checks={"q1.textbook_1d": "failed"}, mentions=("has shape (12000, 12000)",)),
    Case("nan_and_inf", "masked_softmax returns NaN, DotProductAttention returns inf",
         solution(masked_softmax=MASKED_SOFTMAX.replace("    if valid_lens is None:\n",
                                                        "    X = X * float('nan')\n    if valid_lens is None:\n"),
                  dot=DOT.replace("        return torch.bmm(", "        return float('inf') * torch.bmm(")),
         lost=("q1", "q3"), mentions=("non-finite",)),
    Case("wrong_types", "returns a list, a NumPy array and a string",
         solution(masked_softmax=MASKED_SOFTMAX + "\n_real = masked_softmax\n"
                  "def masked_softmax(X, valid_lens):\n    return _real(X, valid_lens).tolist()\n",
                  additive=ADDITIVE.replace("masked_softmax(", "_real("),
                  dot=DOT.replace("masked_softmax(", "_real(").replace(
                      "        return torch.bmm(self.dropout(self.attention_weights), values)",
                      "        return torch.bmm(self.dropout(self.attention_weights), values).numpy()"),
                  bilinear=BILINEAR.replace("masked_softmax(", "_real(").replace(
                      "        return torch.bmm(", "        return 'attention' or torch.bmm(")),
         lost=("q1", "q3", "q4"), mentions=("should be a torch.Tensor", "NumPy array")),
    Case("lying_tensor", "returns a torch.Tensor subclass whose __eq__ and __torch_function__ always agree",
         solution(before="""
             class Liar(torch.Tensor):
                 def __eq__(self, other):
                     return True
                 __hash__ = torch.Tensor.__hash__
                 @classmethod
                 def __torch_function__(cls, func, types, args=(), kwargs=None):
                     return True
             """, masked_softmax=MASKED_SOFTMAX.replace(
                 "    return nn.functional.softmax(X.reshape(shape), dim=-1)",
                 "    return torch.zeros(shape).as_subclass(Liar)").replace(
                 "        return nn.functional.softmax(X, dim=-1)",
                 "        return torch.zeros(X.shape).as_subclass(Liar)")),
         lost=("q1",), mentions=("subclass of torch.Tensor",)),
    Case("monkeypatch_comparisons", "patches the comparison functions of NumPy and torch; its answer is wrong",
         solution(before="""
             import numpy as np
             np.allclose = lambda *a, **k: True
             np.array_equal = lambda *a, **k: True
             np.isclose = lambda *a, **k: True
             np.testing.assert_allclose = lambda *a, **k: None
             torch.allclose = lambda *a, **k: True
             torch.equal = lambda *a, **k: True
             torch.testing.assert_close = lambda *a, **k: None
             torch.Tensor.__eq__ = lambda self, other: True
             """, masked_softmax="def masked_softmax(X, valid_lens):\n    return torch.zeros_like(X)\n"),
         lost=("q1",), mentions=("differs from the reference",)),
    Case("read_secrets", "looks for the solutions, the tests, other students' work and the grader's process on disk "
         "and in /proc",
         solution(before='''
             import glob
             found = []
             for pattern in ["{PROJECT}/solutions/*/*.py", "{PROJECT}/grader/*.py", "{PROJECT}/tests/*.py",
                             "{SUBMISSIONS}/*", "{OUT}/*", "{OUT}/students/*/*", "/work/*/solutions/*/*.py",
                             "/proc/*/root{PROJECT}/solutions/*/*.py", "/proc/*/cwd/solutions/*/*.py"]:
                 for path in glob.glob(pattern, recursive=True)[:5]:
                     try:
                         with open(path, "rb") as handle:
                             handle.read(100)
                         found.append(path)
                     except OSError:
                         pass
             for path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):
                 try:
                     with open(path, "rb") as handle:
                         text = handle.read()
                         if b"solutions" in text or b"grade attention_scoring" in text:
                             found.append(path)
                 except OSError:
                     pass
             for path in found:
                 print("FOUND-SECRET:", path)
             print("secrets found:", len(found))
             '''),
         mentions=("secrets found: 0",), absent=("FOUND-SECRET",), namespaces_only=True),
    Case("steal_the_reference", "walks the filesystem for a folder named solutions and grades itself with the "
         "masked_softmax it finds there; its own is wrong (all zeros), so q1 scores only where nothing is found",
         solution(before='''
             import glob
             import importlib.util
             import numpy as np

             def _solutions():
                 found = glob.glob("{PROJECT}/solutions/*/reference_numpy.py")
                 for top, folders, _ in ([] if found else os.walk("/")):
                     folders[:] = [f for f in folders if f not in ("proc", "sys", "dev", "usr", ".git", ".venv")]
                     if top.count(os.sep) >= 6:
                         folders[:] = []
                     if os.path.basename(top) == "solutions":
                         found += glob.glob(os.path.join(top, "*", "reference_numpy.py"))
                 return found

             STOLEN = None
             for _path in _solutions():
                 try:
                     _spec = importlib.util.spec_from_file_location("stolen", _path)
                     _module = importlib.util.module_from_spec(_spec)
                     _spec.loader.exec_module(_module)
                 except Exception:
                     continue
                 if hasattr(_module, "masked_softmax"):
                     print("STOLEN-FROM:", _path)
                     STOLEN = _module.masked_softmax
                     break
             ''', masked_softmax='''
             def masked_softmax(X, valid_lens):
                 if STOLEN is None:
                     return torch.zeros_like(X)
                 lens = None if valid_lens is None else valid_lens.detach().cpu().numpy()
                 return torch.as_tensor(STOLEN(X.detach().cpu().double().numpy(), lens), dtype=X.dtype)
             '''),
         lost=("q1",), absent=("STOLEN-FROM",), namespaces_only=True),
    Case("write_outputs", "tries to overwrite grades, the gradebook, reports and other submissions",
         solution(before='''
             import sqlite3
             for path in ["{OUT}/grades.csv", "{OUT}/students/write_outputs/report.html",
                          "{SUBMISSIONS}/textbook.ipynb", "{SUBMISSIONS}/zz_planted.py", "{PROJECT}/planted.txt",
                          "/tmp/{MARKER}"]:
                 try:
                     with open(path, "w") as handle:
                         handle.write("PLANTED-BY-A-" + "SUBMISSION")
                     print("WROTE", path)
                 except OSError as exc:
                     print("blocked", type(exc).__name__)
             try:
                 db = sqlite3.connect("{OUT}/gradebook.sqlite")
                 db.execute("UPDATE submissions SET score = 1000")
                 db.commit()
                 print("WROTE gradebook")
             except Exception as exc:
                 print("blocked", type(exc).__name__)
             '''), absent=("PLANTED-BY-A-SUBMISSION",), namespaces_only=True),
    Case("fake_scores", "prints fake scores, HTML and a Gradescope results.json; q4 is wrong",
         solution(before='''
             import json
             print("Score: 100/100  All tests passed!")
             print("<script>document.title = 'FAKE-TITLE'</script><b>bold</b>")
             with open("results.json", "w") as handle:
                 json.dump({"score": 100, "tests": []}, handle)
             print(json.dumps({"score": 100}))
             ''', bilinear=BILINEAR.replace("self.W)", "self.W.T.T * 2)")),
         lost=("q4",), absent=("<script>document.title",)),
    Case("pickle_payload", "returns an object whose unpickling would run a shell command",
         solution(masked_softmax=MASKED_SOFTMAX + '''
_real = masked_softmax
class Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/{MARKER}",))
def masked_softmax(X, valid_lens):
    return Payload()
''', additive=ADDITIVE.replace("masked_softmax(", "_real("), dot=DOT.replace("masked_softmax(", "_real("),
                  bilinear=BILINEAR.replace("masked_softmax(", "_real(")),
         lost=("q1",), mentions=("should be a torch.Tensor",)),
    Case("import_grader", "imports the grader package to patch its comparisons",
         solution(before='''
             sys.path.insert(0, "{PROJECT}")
             try:
                 import grader.check.compare as compare
                 compare.compare_tensor = lambda *a, **k: None
                 print("GRADER-IMPORTED")
             except ImportError as exc:
                 print("no grader here:", type(exc).__name__)
             ''', masked_softmax="def masked_softmax(X, valid_lens):\n    return torch.zeros_like(X)\n"),
         lost=("q1",), mentions=("no grader here",), absent=("GRADER-IMPORTED",), namespaces_only=True),
    Case("loopback", "connects to a listener on the grading machine's loopback",
         solution(before='''
             import socket
             try:
                 socket.create_connection(("127.0.0.1", {PORT}), timeout=2).sendall(b"hello")
                 print("CONNECTED")
             except OSError as exc:
                 print("no network:", type(exc).__name__)
             '''), mentions=("no network",), absent=("CONNECTED",), namespaces_only=True),
    Case("namespace_escape", "asks the kernel for new namespaces, a mount, ptrace on its parent and root's uid",
         solution(before='''
             import ctypes
             libc = ctypes.CDLL(None, use_errno=True)
             attempts = {
                 "user namespace": lambda: libc.unshare(0x10000000),
                 "mount namespace": lambda: libc.unshare(0x00020000),
                 "clone into a user namespace": lambda: libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0),
                 "mount": lambda: libc.mount(b"none", b"/tmp", b"tmpfs", 0, None),
                 "ptrace the parent": lambda: libc.ptrace(16, os.getppid(), None, None),
                 "become root": lambda: libc.setuid(0),
             }
             refused = 0
             for what, attempt in attempts.items():
                 if attempt() == 0:
                     print("ESCAPED:", what)
                 else:
                     refused += 1
             print("escape attempts refused:", refused)
             '''),
         mentions=("escape attempts refused: 6",), absent=("ESCAPED",), namespaces_only=True),
    Case("stack_overflow", "infinite recursion at import, and a C stack overflow in BilinearAttention.forward",
         solution(before="def down(n):\n    return down(n + 1)\ndown(0)\n",
                  bilinear=BILINEAR.replace(
                      "        scores = torch.bmm(",
                      # Recursion in C itself: recursion through builtins (map) is stopped with a RecursionError
                      # from Python 3.12 on, which guards the C stack too.
                      "        import faulthandler\n        faulthandler._stack_overflow()\n"
                      "        scores = torch.bmm(")),
         lost=("q4",), mentions=("RecursionError", "SIGSEGV")),
    Case("slow_but_correct", "correct, but sleeps at import and in every call",
         solution(before="time.sleep(1.5)\n",
                  masked_softmax=MASKED_SOFTMAX.replace("    if valid_lens is None:\n",
                                                        "    time.sleep(0.2)\n    if valid_lens is None:\n"))),
]
