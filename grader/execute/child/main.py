"""The student's process: run the submission once, then answer the grader's calls, one fork per question.

Forked by the warm worker (zygote.py) once per submission, after it has dropped privileges, and entered through
``serve``. It imports nothing from the ``grader`` package: only this folder, NumPy and torch. Everything it sends
back is plain data (see wire.py).

Conversation::

    child -> hello
    grader -> load {units, skip, ...}    child -> unit {index, status, output, error}, one per unit, as each ends;
                                         child -> loaded
    grader -> question {provided...}     child forks; the fork answers calls until "end", then exits;
                                         child -> question_done {exit status of the fork}
    grader -> exit
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import contextlib  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import inspect  # noqa: E402
import io  # noqa: E402
import linecache  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

# Forked children hang if the parent ran multithreaded torch ops; one thread from the start avoids it.
torch.set_num_threads(1)

import calls  # noqa: E402
import capture  # noqa: E402
import convert  # noqa: E402
import privileges  # noqa: E402
import provided_calls  # noqa: E402
import stubs  # noqa: E402
import wire  # noqa: E402

sys.path.remove(HERE)

# This folder's modules, imported by their bare names (and the zygote's, which imports this one as `main`).
RUNTIME_MODULES = ("calls", "capture", "convert", "huge_pages", "main", "privileges", "provided_calls", "stubs",
                   "wire", "zygote")

MAX_MESSAGE = 512 << 20


class Channel:
    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.owner = os.getpid()  # the one process that may speak; a fork of the student's is silenced

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = os.read(self.read_fd, min(n, 1 << 20))
            if not chunk:
                os._exit(0)  # the grader is gone: nothing left to answer
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv(self) -> tuple[dict[str, Any], list[bytes]]:
        return wire.read_message(self._read_exact, max_total=MAX_MESSAGE)

    def send(self, header: dict[str, Any], blobs: list[bytes] | tuple = ()) -> None:
        if os.getpid() != self.owner:
            os._exit(0)  # a process the student forked got back to our loop: it must not corrupt the pipe
        view = memoryview(wire.encode_message(header, blobs))
        while view:
            written = os.write(self.write_fd, view)
            view = view[written:]


class CellTimeout(BaseException):
    """Raised by SIGALRM inside a cell that runs past its limit (BaseException so `except Exception` misses it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise CellTimeout()


def apply_limits(limits: dict[str, int]) -> list[str]:
    """Set rlimits on this process (and so on everything it starts); return the ones that took effect."""
    applied = []
    table = {"memory_bytes": "RLIMIT_AS", "cpu_seconds": "RLIMIT_CPU", "file_bytes": "RLIMIT_FSIZE",
             "open_files": "RLIMIT_NOFILE", "core_bytes": "RLIMIT_CORE", "processes": "RLIMIT_NPROC"}
    for key, name in table.items():
        if limits.get(key) is None or not hasattr(resource, name):
            continue
        try:
            resource.setrlimit(getattr(resource, name), (limits[key], limits[key]))
            applied.append(name)
        except (ValueError, OSError):
            pass
    return applied


class Serving(calls.Calls):
    """Runs the submission's code units in one namespace and keeps what the grader needs to call into it."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.filenames: set[str] = set()
        # The provided files' names: those that hold an answer (a reference), and the harnesses the students have.
        self.references: set[str] = set()
        self.harnesses: set[str] = set()
        # Each file's text as far as its units have run, for tracebacks and excerpts (see _cache_source).
        self.sources: dict[str, list[str]] = {}
        self.namespace: dict[str, Any] = {}
        self.device = "cpu"
        self.max_elements = 1 << 24

    # ----- loading -------------------------------------------------------------------------------------------
    def load(self, request: dict[str, Any]) -> dict[str, Any]:
        module = types.ModuleType(request["module_name"])
        sys.modules[request["module_name"]] = module
        self.namespace = module.__dict__
        self.namespace["__builtins__"] = __builtins__
        self.device = request.get("device", "cpu")
        self.max_elements = int(request.get("max_elements", self.max_elements))
        stubs.install(self.namespace, request.get("withheld", []), request.get("stubbed", {}), device=self.device)
        # The runtime's own modules stay loaded (this process holds them) but are no longer importable by name: a
        # submission's `import stubs` finds nothing to take answers from.
        for runtime_module in RUNTIME_MODULES:
            sys.modules.pop(runtime_module, None)
        signal.signal(signal.SIGALRM, _on_alarm)
        skip = set(request.get("skip", ()))
        stopped = False
        # One message per unit as it finishes, so the grader knows which one to blame if the process dies.
        for index, unit in enumerate(request["units"]):
            if stopped or index in skip:
                result = {"status": wire.UnitStatus.SKIPPED, "stdout": None, "stderr": None, "error": None, "notes": []}
            else:
                result = self._run_unit(unit, request["unit_seconds"], request["stream_cap"])
                stopped = result["status"] == wire.UnitStatus.EXIT and request.get("stop_on_exit", False)
            self.channel.send({"op": "unit", "index": index, "unit": result})
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        # A CUDA context does not survive a fork: code that used the GPU while loading gets a fresh process per
        # question (the grader starts and loads it again) instead of a fork of this one.
        return {"op": "loaded", "forkable": not torch.cuda.is_initialized()}

    def _run_unit(self, unit: dict[str, Any], seconds: float, cap: int) -> dict[str, Any]:
        filename = unit["filename"]
        self.filenames.add(filename)
        source = unit["source"]
        first_line = unit.get("first_line", 1)
        self._cache_source(filename, source, first_line)
        out, err = capture.CappedStream("stdout", cap), capture.CappedStream("stderr", cap)
        saved = sys.stdout, sys.stderr
        notes_before = len(stubs.NOTES)
        status, error = wire.UnitStatus.OK, None
        try:
            sys.stdout, sys.stderr = out, err
            try:
                code = compile("\n" * (first_line - 1) + source, filename, "exec", dont_inherit=True)
                signal.setitimer(signal.ITIMER_REAL, seconds)
                try:
                    exec(code, self.namespace)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except CellTimeout:
                status = wire.UnitStatus.TIMEOUT
                error = {"type": "Timeout", "message": f"stopped after {seconds:g} s", "traceback": ""}
            except SystemExit as exc:
                status = wire.UnitStatus.EXIT
                error = {"type": "SystemExit", "message": f"exit code {exc.code!r}", "traceback": ""}
            except BaseException as exc:  # a cell that raises does not stop the cells after it
                status = wire.UnitStatus.ERROR
                error = self.describe_exception(exc)
        except CellTimeout:  # the alarm fired between exec() returning and the timer being cleared
            pass
        finally:
            sys.stdout, sys.stderr = saved
        return {"status": status, "stdout": out.snapshot(), "stderr": err.snapshot(), "error": error,
                "notes": stubs.NOTES[notes_before:]}

    def _cache_source(self, filename: str, source: str, first_line: int) -> None:
        """Put a unit's lines in the line cache at their place in its file.

        A .py runs as one unit per top-level statement, all under the file's name, and a traceback's line N counts
        from the file's start: the cache must hold the whole file's text (what has run of it), not the last unit's.
        Lines are split where compile() splits them (not at form feeds or U+2028, as str.splitlines does)."""
        lines = self.sources.setdefault(filename, [])
        new = io.StringIO(source, newline="").readlines()
        start = first_line - 1
        lines.extend(["\n"] * (start + len(new) - len(lines)))  # lines no unit has given yet stay blank
        lines[start:start + len(new)] = new
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)

    def limit_memory(self, budget: int) -> None:
        if self.device == "cpu":
            _limit_address_space(budget)
        else:
            _limit_device_memory(budget, self.device)

    def student_frame(self, filename: str) -> bool:
        return filename in self.filenames

    def own_frame(self, filename: str) -> bool:
        return filename in self.filenames and filename not in self.references and filename not in self.harnesses

    def provided_answer(self, frame: types.FrameType) -> str:
        """A reference's own name (``AdditiveAttention`` for its forward's frame), which is the name the student's
        namespace holds it under (stubs.provide); the grader takes it only if it is one the assignment asks for."""
        code = frame.f_code
        if code.co_filename not in self.references:
            return ""
        return str(getattr(code, "co_qualname", code.co_name)).partition(".")[0]

    def refused(self) -> list[str]:
        return list(stubs.REFUSED)

    # ----- one question, in a fork -----------------------------------------------------------------------------
    def serve_question(self, request: dict[str, Any]) -> None:
        out = capture.CappedStream("stdout", request["stream_cap"])
        err = capture.CappedStream("stderr", request["stream_cap"])
        sys.stdout, sys.stderr = out, err
        refs: dict[int, Any] = {}
        failed: dict[str, Any] | None = None
        if request.get("provided_files"):
            # A real module (dataclasses look their class's module up), each file compiled without this file's
            # __future__ flags, as the provided file runs on its own, and under its own filename, so its frames say
            # which file and line. A file that holds a reference answer ("<reference>") keeps its lines out of the
            # line cache, so no traceback shows its text.
            module = types.ModuleType("reference")
            sys.modules["reference"] = module
            provided_ns: dict[str, Any] = module.__dict__
            try:
                for file in request["provided_files"]:
                    filename = str(file["filename"])
                    self.filenames.add(filename)
                    (self.references if file.get("reference") else self.harnesses).add(filename)
                    if not file.get("reference"):
                        self._cache_source(filename, file["source"], 1)
                    exec(compile(file["source"], filename, "exec", dont_inherit=True), provided_ns)
                provided = {name: provided_ns[name] for name in request["provided_names"]}
                if request.get("record_provided"):  # the student kit is being recorded from the model solution
                    provided = provided_calls.recording(provided)
                stubs.provide(self.namespace, provided)
            except BaseException as exc:  # the student's code may have broken what it needs: say so on each call
                failed = self.describe_exception(exc)
                failed["message"] = (f"the grader's provided code ({', '.join(request['provided_names'])}) could "
                                     f"not run in your process: {failed['type']}: {failed['message']}")[:2000]
                failed["type"] = "ProvidedCodeFailed"
        while True:
            header, blobs = self.channel.recv()
            if header.get("op") == "end":
                self.channel.send({"op": "ended", "stdout": out.snapshot(), "stderr": err.snapshot(),
                                   "notes": list(stubs.NOTES)})
                os._exit(0)
            reply_blobs: list[bytes] = []
            if header.get("op") == "provided_calls":
                kept, kept_blobs = provided_calls.drain()
                self.channel.send({"ok": True, "kept": kept}, kept_blobs)
                continue
            if failed is not None:
                self.channel.send({"ok": False, "error": failed})
                continue
            try:
                reply = self.handle(header, blobs, reply_blobs, refs)
                reply["ok"] = True
            except BaseException as exc:  # SystemExit from a student's forward is an error, not an exit
                reply, reply_blobs = {"ok": False, "error": self.describe_exception(exc)}, []
            self.channel.send(reply, reply_blobs)

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def _allocator_for_a_budget() -> None:
    """Under a memory budget, blocks of 256 KiB and more come from mmap and go back to the system when freed, and the
    heap's free top is returned: a loop that keeps a little of each chunk (its weights) while its chunk-sized
    temporaries come and go cannot fragment the heap past the budget. Outside a budget the zygote's thresholds
    (4 MiB, 16 MiB kept: workers.py's child_env) let a training loop reuse its temporaries. Not glibc (macOS, where
    the address-space limit is not enforced either): nothing to do."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 256 << 10)
        libc.mallopt(M_TRIM_THRESHOLD, 128 << 10)
        libc.malloc_trim(0)


def _limit_address_space(budget: int) -> None:
    """Allow ``budget`` more bytes of address space than now, for good: hard and soft limit alike."""
    _allocator_for_a_budget()
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + budget, size + budget))


def _limit_device_memory(budget: int, device: str) -> None:
    """On the GPU, where an address-space limit cannot apply (a CUDA context reserves far more address space than it
    uses): allow the caching allocator ``budget`` more bytes than it holds now, for good."""
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    total = torch.cuda.get_device_properties(index).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, (torch.cuda.memory_reserved(index) + budget) / total), index)


def warm_up(training: str = "") -> None:
    """Pay, once in the zygote, the first-call costs every student process would pay again after each fork: the
    random generators' first seeding (about 10 ms for NumPy's), torch's dispatch and kernels for the operations
    attention code uses, the wire's encoders. An assignment that trains a model in the student's process
    (``training``, grader/execute/workers.py WarmUp) also has a model's first forward and backward pass paid, and
    with "optimizer" a torch optimiser's first step, whose first construction imports torch's compiler (about
    0.8 s). Runs no student code and keeps nothing but library state; one thread, CPU only (CUDA must not be
    initialised before a fork)."""
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    x = torch.rand(2, 3, 4)
    valid = torch.tensor([1, 2])
    layers = [torch.nn.Linear(4, 4, bias=False), torch.nn.Linear(4, 1), torch.nn.LazyLinear(4), torch.nn.Dropout(0.5)]
    mask = torch.arange(4)[None, :] < torch.repeat_interleave(valid, 3)[:, None]
    scores = torch.bmm(x, x.transpose(1, 2)) / 2.0
    weights = torch.nn.functional.softmax(x.reshape(-1, 4).masked_fill(~mask, -1e6).reshape(x.shape), dim=-1)
    layers[1](torch.tanh(layers[0](x.unsqueeze(2) + x.unsqueeze(1)))).squeeze(-1)
    layers[2](x)
    layers[3].train()(weights)
    layers[3].eval()(weights)
    torch.einsum("bqk,bkv->bqv", scores.softmax(-1), x)
    torch.matmul(x, x.transpose(-1, -2)).exp().sum(-1, keepdim=True)
    with torch.no_grad():
        torch.cat([x, x], dim=-1).max(dim=-1)
    blobs: list[bytes] = []
    described = convert.encode((x, np.ones(3), 1.0, "text", None), blobs)
    for item, blob in zip(described["items"][:2], blobs):
        convert.decode({"kind": item["kind"], "dtype": "float32", "blob": 0}, [blob], {}, "cpu", {})
    inspect.signature(torch.nn.Linear)
    if training:
        _warm_up_training(x, optimizer=training == "optimizer")


def _warm_up_training(x: torch.Tensor, *, optimizer: bool) -> None:
    """An LSTM's first forward and backward pass, and the update a hand-written optimiser makes (practical10's
    harness has its own Adam, bit for bit torch's); with ``optimizer``, a torch optimiser's first step."""
    lstm = torch.nn.LSTM(4, 4, batch_first=True)
    outputs, _ = lstm(x)
    torch.nn.functional.cross_entropy(outputs.reshape(-1, 4), torch.zeros(6, dtype=torch.long)).backward()
    with torch.no_grad():
        for param in lstm.parameters():
            average, square = torch.zeros_like(param), torch.zeros_like(param)
            average.lerp_(param.grad, 0.1)
            square.mul_(0.999).addcmul_(param.grad, param.grad, value=0.001)
            param.addcdiv_(average, (square.sqrt() / 0.5).add_(1e-8), value=-1e-3)
    if optimizer:
        _warm_up_optimizer(lstm)


def _warm_up_optimizer(model: torch.nn.Module) -> None:
    """A torch optimiser's first step. Its construction imports torch's compiler, which makes its cache folder in
    the temporary folder as the zygote's user and names it in TORCHINDUCTOR_CACHE_DIR: a folder the students' uid
    could not remove, which would make every clean after a submission fail and the worker start again (2 s each).
    So what it made there is removed again, and the variable unset: a student's code that compiles makes its own."""
    import tempfile

    temporary = tempfile.gettempdir()
    named = "TORCHINDUCTOR_CACHE_DIR" in os.environ
    before = set(os.listdir(temporary))
    try:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        optimizer.step()
        optimizer.zero_grad()
    finally:
        for made in set(os.listdir(temporary)) - before:
            if made.startswith("torchinductor_"):
                shutil.rmtree(os.path.join(temporary, made), ignore_errors=True)
        if not named:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)


def _fork_for_question() -> int:
    """Fork, waiting a little if the student's own processes (say, a fork bomb's) use up the process limit."""
    for attempt in range(50):
        with contextlib.suppress(ChildProcessError):  # reap what the student forked and left behind
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.05 * (attempt + 1) / 10)
    return os.fork()


def serve(read_fd: int, write_fd: int, limits: dict[str, int]) -> None:
    """Answer the grader on these pipes until it says exit or goes away; ``limits`` are the rlimits to apply."""
    applied = apply_limits(limits)
    channel = Channel(read_fd, write_fd)
    channel.send({"op": "hello", "pid": os.getpid(), "uid": os.getuid(), "torch": torch.__version__,
                  "numpy": np.__version__, "python": sys.version.split()[0], "rlimits": applied})
    serving = Serving(channel)
    while True:
        header, _ = channel.recv()
        op = header.get("op")
        if op == "load":
            channel.send(serving.load(header))
        elif op == "question" and header.get("last"):
            # Nothing will ask the loaded submission anything after this question: it answers in this process,
            # which exits at the end of the question as a fork would (a fork costs milliseconds of page copying).
            serving.serve_question(header)
        elif op == "question":
            parent = os.getpid()
            gc.freeze()  # the loaded submission's objects too: see zygote.py
            pid = _fork_for_question()
            if pid == 0:
                channel.owner = os.getpid()
                # The question dies with the loaded submission, as a kernel's work dies with the kernel: a student
                # process that kills its own parent loses that question rather than answering it orphaned.
                privileges.die_with_parent()
                if os.getppid() != parent:
                    os._exit(70)
                try:
                    serving.serve_question(header)
                finally:
                    os._exit(70)
            _, status = os.waitpid(pid, 0)
            channel.send({"op": "question_done", "exit_code": os.waitstatus_to_exitcode(status)})
        else:
            os._exit(0)
