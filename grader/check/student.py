"""What a check holds to call into the student's code: names, functions, objects. Every call is plain data."""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import io
import json
import linecache
import re
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from grader.check.array_text import array_text
from grader.check.binding import Binding, Found, Naming, bind
from grader.check.call_order import length_parameters, order_message, out_of_order
from grader.check.choices import bound_parameters, near_name, renamed_arguments
from grader.check.provided import REFERENCE_FILENAME, provided_name
from grader.check.signature import Parameter, mismatch_message, plan_call
from grader.errors import CallTimedOut, NotCalledAgain, StudentRaised, WrongAnswer
from grader.execute.arguments import Arg, Returned, blob_digest, decode_value
from grader.execute.child import wire
from grader.execute.process import QuestionSession
from grader.near_names import near_names
from grader.results import Choice


@dataclass(frozen=True)
class NameInfo:
    exists: bool
    type_name: str = ""
    callable: bool = False
    is_class: bool = False
    is_module: bool = False
    signature: tuple[Parameter, ...] | None = None  # a class's constructor, or a function's parameters, in order
    defined: tuple[str, ...] = ()  # a missing name's: the names the student's code defined (calls.py)
    refused: tuple[str, ...] = ()  # a missing name's: the names the grader's d2l refused the student's code
    from_d2l: tuple[str, ...] = ()  # the d2l functions and classes the object is, or its class inherits from
    forward: tuple[Parameter, ...] | None = None  # a module class's forward, less self
    at: tuple[str, int, str] | None = None  # the student's code a call runs: (file, line, function)

    @property
    def called_with(self) -> tuple[Parameter, ...] | None:
        """The parameters a call takes: a module class's instance's (its forward's), or a function's."""
        return self.forward if self.is_module else self.signature


@dataclass(frozen=True)
class LengthsCall:
    """A call that passed lengths (``valid_lens``) where the assignment declares them: which callable, where the
    lengths went (a position or a keyword) and the arguments, for a run that passes a mask in their place."""

    name: str  # as the question's ``calls`` knows it: the function, or the class
    label: str  # "masked_softmax", "DotProductAttention.forward"
    parameter: str  # the assignment's name for the lengths
    at: int | str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]


# What a call that passed lengths is sent instead (args, kwargs), while a failed check is run again.
Rewrite = Callable[[LengthsCall], tuple[tuple[Any, ...], dict[str, Any]]]


def _encode_args(args: tuple[Any, ...], kwargs: Mapping[str, Any], blobs: list[bytes]) -> dict[str, Any]:
    def one(arg: Any) -> dict[str, Any]:
        if isinstance(arg, StudentObject):
            return {"kind": "ref", "id": arg.ref}
        return (arg if isinstance(arg, Arg) else Arg(arg)).encode(blobs)

    return {"args": [one(a) for a in args], "kwargs": {k: one(v) for k, v in kwargs.items()}}


def _show(value: Any) -> str:
    if isinstance(value, Arg):
        if value.kind == "name":
            return str(value.value)
        value = value.value
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_show(item) for item in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, np.ndarray):
        return f"{value.dtype} {tuple(value.shape)} {array_text(value)}"
    if isinstance(value, StudentObject):
        return f"<{value.class_name} object>"
    return repr(value)


def _show_args(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    return ", ".join([_show(a) for a in args] + [f"{k}={_show(v)}" for k, v in kwargs.items()])


def _fingerprint(header: Mapping[str, Any], blobs: list[bytes] | tuple) -> str:
    """What a request asked, inputs included, as a digest: a replay is served an answer only for the same request."""
    digest = hashlib.blake2b(json.dumps(header, sort_keys=True, default=str).encode(), digest_size=16)
    for blob in blobs:
        digest.update(len(blob).to_bytes(8, "little"))
        digest.update(blob_digest(blob))  # a kept draw's million keys are digested once, not per request
    return digest.hexdigest()


def place_of(filename: str, lineno: int) -> str:
    """'cell [2], line 7' / 'line 7' / 'reversal.py, line 108': where a frame is, as the student knows the file."""
    if filename.startswith("<cell "):
        return f"cell [{filename[6:-1]}], line {lineno}"
    provided = provided_name(filename)
    return f"{provided}, line {lineno}" if provided else f"line {lineno}"


def _defined_at(value: Any) -> tuple[str, int, str] | None:
    try:
        filename, line, function = value
        return str(filename), int(line), str(function)
    except (TypeError, ValueError):
        return None


def _through(called: str) -> str:
    """What a raise inside the grader's answer ``called``, called by the student's code, is: their call's doing.
    Not "the grader's code raised": the reference is right, the arguments were the student's."""
    return (f"the error came from your call into `{called}`, which the grader provides in place of yours for this "
            "question")


def _where(frame: Any, called: str = "") -> str:
    """' (cell [2], line 7, in masked_softmax: `X[~mask] = value`)' from the last frame in the student's code, or in
    a provided file (a harness the students have, by its name and line); a file that holds the grader's reference
    answer is named without its lines or text. ``called``: the frame is the student's line that called the answer
    the grader provides under that name, inside which the error was raised."""
    try:
        filename, lineno, function, line = str(frame[0]), int(frame[1]), str(frame[2]), str(frame[3])
    except (TypeError, IndexError, ValueError):
        return f" ({_through(called)})" if called else ""
    if filename == REFERENCE_FILENAME:
        return " (in the grader's reference code)"
    code = f": `{line.strip()[:120]}`" if line.strip() else ""
    through = f"; {_through(called)}" if called else ""
    return f" ({place_of(filename, lineno)}, in {function}{code}{through})"


class KnownSources:
    """The text of every file a frame of the student's process may name, as the grader itself holds it: the
    submission's units at their lines, and the provided harnesses (``add``). What a hidden check tells of where the
    code raised is read from here, never from the student's process, which can say anything."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {}

    def add(self, filename: str, source: str, first_line: int = 1) -> None:
        lines = self.lines.setdefault(filename, [])
        new = io.StringIO(source, newline="").readlines()
        start = first_line - 1
        lines.extend(["\n"] * (start + len(new) - len(lines)))
        lines[start:start + len(new)] = new

    def text(self, filename: str) -> str | None:
        lines = self.lines.get(filename)
        return "".join(lines) if lines else None

    def where(self, frame: Any, called: str = "") -> str:
        """' (cell [2], line 7: `X[i]`)' for a frame the grader can place in a file it holds: the line's text from
        the grader's copy; '' for any other frame (the reference's too: no line of it is told). ``called``: as for
        ``_where``, a name the assignment asks for (so it carries nothing of the inputs)."""
        through = _through(called) if called else ""
        try:
            filename, lineno = str(frame[0]), int(frame[1])
        except (TypeError, IndexError, ValueError):
            return f" ({through})" if through else ""
        lines = self.lines.get(filename)
        if filename == REFERENCE_FILENAME:
            return " (in the grader's reference code)"
        if not lines or not 1 <= lineno <= len(lines) or not lines[lineno - 1].strip():
            return f" ({through})" if through else ""
        through = f"; {through}" if through else ""
        return f" ({place_of(filename, lineno)}: `{lines[lineno - 1].strip()[:120]}`{through})"


class SourceText(Protocol):
    def text(self, filename: str) -> str | None:
        """The whole text of the file a frame names, or None when it is not known."""


class CachedSources:
    """The text of the student's files from the line cache, where the student's code runs in this very process (the
    student kit, in their kernel, which caches each cell as IPython does)."""

    def text(self, filename: str) -> str | None:
        return "".join(linecache.getlines(filename)) or None


# A frame of a traceback as traceback.format_list writes it.
_FRAME = re.compile(r'^  File "(?P<file>[^"\n]+)", line (?P<line>\d+), in ', re.MULTILINE)


def _frames(exc: StudentRaised) -> list[tuple[str, int]]:
    """(file, line) of each frame the student's process told, the last one (``where``) included."""
    frames = [(m["file"], int(m["line"])) for m in _FRAME.finditer(exc.traceback or "")]
    try:
        last = (str(exc.where[0]), int(exc.where[1]))
    except (TypeError, IndexError, ValueError):
        return frames
    return frames if last in frames else [*frames, last]


@functools.lru_cache(maxsize=64)
def _definitions(text: str) -> tuple[ast.stmt, ...]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _is_bare(call: ast.Call, method: str) -> bool:
    """``x.squeeze()``, or ``torch.squeeze(x)``: the call with no axis named."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr != method or call.keywords:
        return False
    module = isinstance(func.value, ast.Name) and func.value.id in ("torch", "np", "numpy")
    return len(call.args) == (1 if module else 0)


def bare_call_lines(text: str, line: int, method: str) -> list[int]:
    """The lines where the top-level definition (a class, a function) that holds ``line`` calls ``method`` with no
    axis: the code a failing frame ran in, the methods of its class included."""
    for node in _definitions(text):
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if first <= line <= (node.end_lineno or node.lineno):
            return sorted({n.lineno for n in ast.walk(node) if isinstance(n, ast.Call) and _is_bare(n, method)})
    return []


# What a hidden check may name as the type of what was raised: Python's own exceptions, as the grader knows them,
# and the student's process's own word for provided code that could not run (main.py).
_BUILTIN_EXCEPTIONS = frozenset([*(name for name, value in vars(builtins).items()
                                   if isinstance(value, type) and issubclass(value, BaseException)),
                                 "ProvidedCodeFailed"])


def hidden_raised_hint(exc: StudentRaised, sources: KnownSources, sizes: Mapping[str, int]) -> str:
    """What a hidden check says when the student's code raised: the exception's type, the student's own line (placed
    and quoted from the grader's copy of their code) and the sizes the check drew; never the exception's message,
    which the student's code writes from the inputs it was given and could carry them out."""
    exc_type = exc.exc_type if _known_exception(exc.exc_type) else "an exception"
    hint = f"your code raised {exc_type}" + sources.where(exc.where, exc.called)
    if sizes:
        hint += " with the sizes " + ", ".join(f"{name.replace('_', ' ')} {int(size)}" for name, size in sizes.items())
    return hint


def _known_exception(name: str) -> bool:
    """Whether ``name`` is one of Python's exceptions, or torch's or NumPy's as the grader's own copies define them:
    a fixed set, so which one was raised can carry no more than the choice among them."""
    if name in _BUILTIN_EXCEPTIONS:
        return True
    root, _, rest = name.partition(".")
    obj = sys.modules.get(root) if root in ("torch", "numpy") and rest else None
    for part in rest.split(".") if obj is not None else ():
        # Read from the module's own dictionary: no lazy import, no code runs for a name the student chose.
        obj = getattr(obj, "__dict__", {}).get(part) if part.isidentifier() and not part.startswith("__") else None
    return isinstance(obj, type) and issubclass(obj, BaseException)


LoadHint = Callable[[str], str]  # the name found missing -> why it may be ("cell [4] raised ImportError ...")


def missing_name(message: str) -> str:
    """'sequence_mask' from NameError's "name 'sequence_mask' is not defined"."""
    found = re.search(r"name '(\w+)' is not defined", message)
    return found.group(1) if found else ""


def _provided_call(error: Mapping[str, Any], answers: Collection[str]) -> tuple[str, Any]:
    """(the name, the student's line that called it) when the student's process says the exception was raised
    inside an answer the grader provides in place of theirs, entered from their own line (calls.py); else ('', the
    last frame it told). The name is taken only when it is one the assignment asks for: the process can say
    anything, and a hidden check's hint tells the name."""
    call = error.get("call")
    name = call.get("name") if isinstance(call, dict) else None
    if isinstance(name, str) and name in answers:
        return name, call.get("where")
    return "", error.get("where")


def _raised(what: str, reply: dict[str, Any], *, load_hint: LoadHint | None = None,
            answers: Collection[str] = ()) -> StudentRaised:
    """``answers``: the names the assignment asks for, the only ones a raise inside a provided answer is told by."""
    error = reply.get("error") or {}
    exc_type, exc_message = str(error.get("type", "Exception")), str(error.get("message", ""))
    called, where = _provided_call(error, answers)
    summary = f"{what} raised {exc_type}: {exc_message}".rstrip(": ") + _where(where, called)
    if "Expected all tensors to be on the same device" in exc_message:  # graded with --device cuda
        summary += (". Your code made a tensor on the CPU while its inputs are on the GPU: create tensors on an "
                    "input's device, e.g. torch.ones(n, device=X.device)")
    hint = load_hint(missing_name(exc_message)) if exc_type == "NameError" and load_hint else ""
    if hint:  # `tf` is not defined: because `import tensorflow as tf` failed
        summary += f" ({hint})"
    return StudentRaised(summary, exc_type=exc_type, exc_message=exc_message, traceback=str(error.get("traceback", "")),
                         where=where, called=called)


# What the sandbox's d2l says when the student's code asks it for an answer (grader/execute/child/stubs.py).
_REFUSAL = re.compile(r"`d2l\.(\w+)` is the answer to (\S+): write your own")


def _refusal(reply: dict[str, Any]) -> WrongAnswer | None:
    """The student's code asked the grader's d2l for a question's answer while a check ran (a wrapper around
    ``d2l.masked_softmax``): said as that, once for the question, rather than as an AttributeError of theirs."""
    error = reply.get("error") or {}
    found = _REFUSAL.match(str(error.get("message", ""))) if error.get("type") == "AttributeError" else None
    if found is None:
        return None
    message = f"`d2l.{found[1]}` is the answer to {found[2]}: write your own (your code calls it)"
    return WrongAnswer(message, hint=message, setup=True)


# Errors torch and Python raise when a tensor has another number of dimensions, or other sizes, than code expects.
_SHAPE_ERROR = re.compile(r"size of tensor|must match the size|shape|dimension|Dimension out of range|mat1 and mat2|"
                          r"\d-?D tensor|batch1|batch2|expected .*dim|too many indices|not enough values to unpack|"
                          r"cannot be multiplied|broadcast|at least \dD", re.IGNORECASE)


def _is_shape_error(exc: StudentRaised) -> bool:
    return exc.exc_type in ("RuntimeError", "IndexError", "ValueError") and bool(_SHAPE_ERROR.search(exc.exc_message))


class StudentCode:
    """The student's namespace inside one question's fork."""

    def __init__(self, session: QuestionSession, *, load_hint: LoadHint | None = None, naming: Naming | None = None,
                 convention: str = "", asked: tuple[str, ...] = (),
                 answered_by: Mapping[str, str] | None = None,
                 calls: Mapping[str, Sequence[str]] | None = None, sources: SourceText | None = None) -> None:
        self.session = session
        # The student's callables that ran past their time limit earlier in this run: callee -> how ("did not answer
        # within the time limit (10 s) in q1 \"...\""), not called again. The runner's, shared by every question,
        # given to each check (SubmissionRunner._run_check).
        self.ran_away: Mapping[str, str] = {}
        # The parameters the checks call each answer with, in order (Question.calls): a student's in another order
        # is noted for the check (misordered), and where lengths go is known (lengths_passed).
        self.call_parameters = {name: tuple(parameters) for name, parameters in (calls or {}).items()}
        self.misordered: dict[str, str] = {}  # this check's: the callable -> what to tell the student
        self.lengths_passed: list[LengthsCall] = []  # this check's calls that passed lengths
        self.rewrite: Rewrite | None = None  # set while a failed check is run again with other arguments
        # The text of the student's files, to read the code a failing call ran through (bare_calls): the grader's own
        # copy, or the line cache where the code runs in this process (the kit).
        self.sources = sources
        self.sizes: dict[str, int] = {}  # the current check's sizes by name (CheckContext.sizes, name_sizes)
        # Each name a question asks for -> that question: taking one from d2l is told as such (see _require).
        self.answered_by = dict(answered_by or {})
        # Why a name may be missing (the runner's LoadHint: "cell [4] raised SyntaxError while loading, which may be
        # why"), appended when one is; "" when nothing failed while loading.
        self.load_hint = load_hint
        # Every name the assignment asks for: never offered as the near name of another (near_names.py).
        self.asked = asked
        self.naming = naming or Naming()  # how the weights a check sets find the student's parameters (binding.py)
        # The shapes the question's modules take, told when the student's code fails on them with a shape error
        # (say, code written for batches where the assignment passes one query).
        self.convention = convention
        self.notes: list[str] = []  # for the question's report: how the grader adapted to the student's code
        self.choices: list[Choice] = []  # what the grader chose for the student here (grader/check/choices.py)
        self._max_elements = session.process.limits.max_array_elements
        self.calls: list[str] = []  # what was called with what, for the instructor's view of a check
        # This check's answers (operation, reply, blobs, the request's fingerprint), to replay it against
        # known-wrong variants of the reference.
        self.replies: list[tuple[str, dict[str, Any], list[bytes], str]] = []
        # Requests sent without waiting (seeding, setting weights, train/eval): (operation, what, recorded,
        # fingerprint), their answers read in order before the next answer waited for. A round trip costs a context
        # switch each way; most of a check's requests answer nothing the check needs.
        self.pending: list[tuple[str, str, bool, str]] = []
        self.known: dict[str, NameInfo] = {}  # names described in this fork (describe)
        self.known_at_start: dict[str, NameInfo] = {}  # ... when the current check began, for its replay
        # Whether the current check gave a call a memory budget, which only the grader's process can enforce (the
        # student kit leaves such a check out).
        self.budgeted = False

    def log(self, text: str) -> None:
        if len(self.calls) < 50:
            self.calls.append(text[:1500])

    def post(self, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str, record: bool = True) -> None:
        """Send a request whose answer the check does not need: an error it raises surfaces at the next request
        waited for (or at ``settle``), named as this request's."""
        self.session.send(header, blobs)
        self.pending.append((str(header.get("op")), what, record, _fingerprint(header, blobs) if record else ""))

    def settle(self, *, ignore_errors: bool = False) -> None:
        """Read the answers of the requests sent without waiting; raise the first one's error (unless ignored)."""
        failure = self._drain()
        if failure is not None and not ignore_errors:
            raise failure

    def _drain(self) -> StudentRaised | WrongAnswer | None:
        failure = None
        pending, self.pending = self.pending, []
        for op, what, record, asked in pending:
            reply, reply_blobs = self.session.receive(waiting_for=what)
            if record:
                self.replies.append((op, reply, reply_blobs, asked))
            if not reply.get("ok") and failure is None:
                failure = _refusal(reply) or _raised(what, reply, load_hint=self.load_hint, answers=self.asked)
        return failure

    def exchange(self, header: dict[str, Any], blobs: list[bytes] | tuple, *, what: str,
                 timeout: float | None) -> tuple[dict, list]:
        self.session.send(header, blobs)
        failure = self._drain()
        reply, reply_blobs = self.session.receive(waiting_for=what, timeout=timeout)
        self.replies.append((str(header.get("op")), reply, reply_blobs, _fingerprint(header, blobs)))
        if failure is not None:
            raise failure
        return reply, reply_blobs

    def request(self, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str,
                timeout: float | None = None) -> tuple[dict, list]:
        reply, reply_blobs = self.exchange(header, blobs, what=what, timeout=timeout)
        if not reply.get("ok"):
            raise _refusal(reply) or _raised(what, reply, load_hint=self.load_hint, answers=self.asked)
        return reply, reply_blobs

    def call(self, callee: str, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str,
             timeout: float | None = None) -> tuple[dict, list]:
        """``request`` for a call of the student's ``callee`` ("masked_softmax", "AdditiveAttention.forward",
        "AdditiveAttention" for its constructor): refused at once when it ran past its time limit earlier in this
        run, so that one runaway function costs one time limit, not one per check that calls it; a timeout says which
        callee it was (``CallTimedOut.callee``), for the runner to note."""
        earlier = self.ran_away.get(callee)
        if earlier is not None:
            raise NotCalledAgain(f"not called again: your {callee} {earlier}")
        try:
            return self.request(header, blobs, what=what, timeout=timeout)
        except CallTimedOut as exc:
            exc.callee = callee
            raise

    def value(self, desc: Any, blobs: list[bytes]) -> Returned:
        return decode_value(desc, blobs, max_elements=self._max_elements)

    def seed(self, seed: int) -> None:
        self.post({"op": "seed", "seed": seed}, what="seeding", record=False)

    def defined_where(self, name: str) -> str:
        """'your masked_softmax, cell [2], line 5' (a module class: its forward's), from what this fork already
        described of ``name`` (no request: asked after a check failed); '' when it does not know."""
        info = self.known.get(name)
        if info is None or info.at is None:
            return ""
        filename, line, _ = info.at
        return f"your {name}{'.forward' if info.is_module else ''}, {place_of(filename, line)}"

    def describe(self, name: str) -> NameInfo:
        """What ``name`` is in the student's namespace, asked once per question's fork (checks ask for the same
        names again and again; a name the fork has is kept for the rest of the question)."""
        if name in self.known:
            return self.known[name]
        reply, _ = self.request({"op": "describe", "name": name}, what=f"looking up {name}")
        if not reply.get("exists"):
            return NameInfo(False, defined=tuple(str(n) for n in reply.get("defined") or ()),
                            refused=tuple(str(n) for n in reply.get("refused") or ()))
        signature = reply.get("signature")
        info = NameInfo(True, str(reply.get("type", "")), bool(reply.get("callable")), bool(reply.get("is_class")),
                        bool(reply.get("is_module")), _parameters(signature),
                        from_d2l=tuple(str(n) for n in reply.get("from_d2l") or ()), at=_defined_at(reply.get("at")),
                        forward=_parameters(reply.get("forward")))
        self.known[name] = info
        return info

    def start_check(self) -> None:
        """A check begins: the trace and the replies are its own, and what it finds known is noted for a replay."""
        self.calls.clear()
        self.replies.clear()
        self.misordered.clear()
        self.lengths_passed.clear()
        self.known_at_start = dict(self.known)
        self.budgeted = False
        self.sizes = {}

    def bare_calls(self, exc: StudentRaised, method: str = "squeeze") -> tuple[str, ...]:
        """Where the student's code that ``exc`` was raised through calls ``method`` with no axis (``x.squeeze()``,
        ``torch.squeeze(x)``), each as "line 17: `text`": in the class or function of each of the student's frames
        on its traceback (never the reference's or a provided file's). Evidence for a cause that a symptom alone
        does not prove (a 0-d tensor may come from elsewhere)."""
        if self.sources is None:
            return ()
        found: list[str] = []
        for filename, line in _frames(exc):
            if filename == REFERENCE_FILENAME or provided_name(filename):
                continue
            text = self.sources.text(filename)
            lines = io.StringIO(text or "", newline="").readlines()  # as compile() counts lines
            for at in bare_call_lines(text or "", line, method):
                place = f"{place_of(filename, at)}: `{lines[at - 1].strip()[:120]}`"
                if place not in found:
                    found.append(place)
        return tuple(found)

    def _require(self, name: str, *, want_class: bool) -> NameInfo:
        info = self.describe(name)
        why = self.load_hint(name) if self.load_hint and not info.exists else ""
        hint = f" ({why})" if why else ""
        # The book's answer taken from d2l: refused by the grader's d2l while loading (so the name is missing), or
        # the object is d2l's own or a subclass of it (the real d2l in the student kit, or got round the stand-in).
        taken = [n for n in info.from_d2l if n in self.answered_by]
        if not info.exists and name in info.refused and name in self.answered_by:
            taken = [name]
        if taken:
            message = f"`d2l.{taken[0]}` is the answer to {self.answered_by[taken[0]]}: write your own"
            if taken[0] != name:
                message += f" (your `{name}` is or builds on it)"
            raise WrongAnswer(message, hint=message, setup=True)
        if not info.exists:
            near = near_names(name, info.defined, taken=self.asked)
            if near:  # not graded in its place: the message names both, so the fix is one rename
                self.choose(near_name(name, near[0]))
                raise WrongAnswer(f"`{name}` is not defined in your submission{hint}: you defined `{near[0]}`; the "
                                  f"assignment asks for `{name}` (rename it)",
                                  hint=f"`{name}` is not defined: you defined `{near[0]}`; rename it `{name}`",
                                  setup=True)
            raise WrongAnswer(f"`{name}` is not defined in your submission{hint}", hint=f"`{name}` is not defined",
                              setup=True)
        if want_class and not info.is_class:
            raise WrongAnswer(f"`{name}` should be a class, but it is a {info.type_name}",
                              hint=f"`{name}` is not a class", setup=True)
        if not info.callable:
            raise WrongAnswer(f"`{name}` should be a function, but it is a {info.type_name}",
                              hint=f"`{name}` is not a function", setup=True)
        return info

    def arguments(self, name: str, label: str, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """What a call of the student's ``name`` (a function, or a class's instances) is sent: as the check passes
        it, unless a rerun rewrites it. Notes, for the check, parameters declared in another order than the checks
        pass them, and where lengths went."""
        parameters = self.call_parameters.get(name)
        info = self.known.get(name)
        if parameters is None or info is None:
            return args, kwargs
        student = info.called_with
        if student is not None and out_of_order(parameters, student, len(args)):
            called = "forward" if info.is_module else name
            self.misordered[name] = order_message(label, student, called, parameters)
        sent = args, kwargs
        for at in length_parameters(parameters):
            place: int | str = at if at < len(args) else parameters[at]
            given = args[at] if isinstance(place, int) else kwargs.get(place)
            if isinstance(given, Arg) and given.kind == "tensor" and str(given.dtype).startswith("int"):
                call = LengthsCall(name, label, parameters[at], place, args, dict(kwargs))
                self.lengths_passed.append(call)
                if self.rewrite is not None:
                    sent = self.rewrite(call)
        return sent

    def function(self, name: str) -> StudentFunction:
        self._require(name, want_class=False)
        return StudentFunction(self, name)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def choose(self, choice: Choice | None) -> None:
        if choice is not None and choice not in self.choices:
            self.choices.append(choice)

    def construct(self, name: str, /, *, optional: Mapping[str, Any] | None = None, **kwargs: Any) -> StudentObject:
        """``name(**kwargs)``, the keywords in the assignment's order, adding each ``optional`` keyword that the
        signature names explicitly; arguments the signature names otherwise are matched by what the names say
        (signature.py), never by position alone."""
        info = self._require(name, want_class=True)
        if not info.is_module:
            raise WrongAnswer(f"`{name}` should subclass torch.nn.Module", hint=f"`{name}` is not an nn.Module",
                              setup=True)
        plan = plan_call(info.signature, kwargs, dict(optional or {}), aliases=self.naming.aliases)
        if plan.problem:  # nothing passed on a guess: both signatures, said once for the question
            message = mismatch_message(name, info.signature, list(kwargs), plan)
            raise WrongAnswer(message, hint=message, setup=True)
        if plan.renamed:
            self.choose(renamed_arguments(name, plan))
        shown = ", ".join([repr(a) for a in plan.args] + [f"{k}={v!r}" for k, v in plan.kwargs.items()])
        self.log(f"{name}({shown})")
        try:
            reply, _ = self.call(name, {"op": "new", "name": name, "args": list(plan.args), "kwargs": plan.kwargs},
                                 what=f"{name}({shown})")
        except StudentRaised as exc:
            exc.setup = True
            raise
        return StudentObject(self, int(reply["ref"]), name)


class ReplayExhausted(Exception):
    """A replayed check asked for more, or other, than the student's process answered the first time."""


class ReplayedCode(StudentCode):
    """A check's recorded answers, served again in order without the student's process: the check runs again on
    the same inputs (same seed) and sees the same answers, while the reference it compares with may differ."""

    def __init__(self, original: StudentCode) -> None:
        self.session = None  # type: ignore[assignment]
        self.load_hint = original.load_hint
        self.asked = original.asked
        self._max_elements = original._max_elements
        self.calls = []
        self.replies = []
        self.pending = []
        self.naming = original.naming
        self.convention = original.convention
        self.call_parameters = {}  # a replay calls nothing: it notes nothing of the calls
        self.misordered = {}
        self.lengths_passed = []
        self.rewrite = None
        self.sources = original.sources
        self.sizes = {}
        self.notes = []
        self.choices = []
        self.known = dict(original.known_at_start)  # the replay asks for what the check asked for
        self.known_at_start = dict(self.known)
        self.budgeted = False
        self.ran_away = original.ran_away
        self._recorded = iter(list(original.replies))

    def exchange(self, header: dict[str, Any], blobs: list[bytes] | tuple, *, what: str,
                 timeout: float | None) -> tuple[dict, list]:
        op, reply, reply_blobs, asked = next(self._recorded, ("", {}, [], ""))
        if op != header.get("op") or asked != _fingerprint(header, blobs):
            # Past the recording's end, or another request, or the same with other inputs (a variant's values
            # passed on to the student's code): the student never answered it.
            raise ReplayExhausted(f"{what}: not in the recording")
        return reply, reply_blobs

    def post(self, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str, record: bool = True) -> None:
        if record:
            reply, _ = self.exchange(header, blobs, what=what, timeout=None)
            if not reply.get("ok"):
                raise _raised(what, reply, load_hint=self.load_hint, answers=self.asked)

    def settle(self, *, ignore_errors: bool = False) -> None:
        return None


class StudentFunction:
    def __init__(self, code: StudentCode, name: str, memory_budget: int | None = None,
                 no_grad: bool = False, seconds: float | None = None) -> None:
        self.code = code
        self.name = name
        self.memory_budget = memory_budget
        self.no_grad = no_grad
        self.seconds = seconds

    def with_memory_budget(self, nbytes: int) -> StudentFunction:
        """The same function, called with at most ``nbytes`` of address space beyond what its process and its
        arguments already hold. The limit stays for the rest of the question (the fork cannot raise it again):
        make such a call the question's last check."""
        self.code.budgeted = True
        return StudentFunction(self.code, self.name, nbytes, self.no_grad, self.seconds)

    def without_grad(self) -> StudentFunction:
        """The same function, called under torch.no_grad(), as at inference (autograd keeps every intermediate)."""
        return StudentFunction(self.code, self.name, self.memory_budget, True, self.seconds)

    def with_time_limit(self, seconds: float) -> StudentFunction:
        """The same function, allowed ``seconds`` per call instead of the limits' ``call_seconds`` (a training
        run, say); the submission's own time limit still applies."""
        return StudentFunction(self.code, self.name, self.memory_budget, self.no_grad, seconds)

    def __call__(self, *args: Any, **kwargs: Any) -> Returned:
        args, kwargs = self.code.arguments(self.name, self.name, args, kwargs)
        blobs: list[bytes] = []
        header = {"op": "call", "name": self.name, **_encode_args(args, kwargs, blobs)}
        if self.memory_budget is not None:
            header["memory_budget"] = self.memory_budget
        if self.no_grad:
            header["no_grad"] = True
        if self.seconds is not None:  # for a kernel, which limits the call where it runs (grader/kit/session.py)
            header["seconds"] = self.seconds
        self.code.log(f"{self.name}({_show_args(args, kwargs)})")
        reply, reply_blobs = self.code.call(self.name, header, blobs, what=f"{self.name}(...)", timeout=self.seconds)
        return self.code.value(reply["value"], reply_blobs)


class StudentObject:
    """An object living in the student's process (an nn.Module instance), known to the grader by a number."""

    def __init__(self, code: StudentCode, ref: int, class_name: str) -> None:
        self.code = code
        self.ref = ref
        self.class_name = class_name

    def __call__(self, *args: Any, **kwargs: Any) -> Returned:
        """``model(...)``: nn.Module.__call__, so hooks (and lazy initialisation) run as in the student's notebook."""
        return self.method("__call__", *args, **kwargs)

    def method(self, method: str, *args: Any, **kwargs: Any) -> Returned:
        if method in ("__call__", "forward"):
            args, kwargs = self.code.arguments(self.class_name, f"{self.class_name}.forward", args, kwargs)
        blobs: list[bytes] = []
        header = {"op": "method", "ref": self.ref, "method": method, **_encode_args(args, kwargs, blobs)}
        shown = "forward" if method == "__call__" else method
        self.code.log(f"{self.class_name}.{shown}({_show_args(args, kwargs)})")
        try:
            reply, reply_blobs = self.code.call(f"{self.class_name}.{shown}", header, blobs,
                                                what=f"{self.class_name}.{shown}")
        except StudentRaised as exc:
            if _is_shape_error(exc):
                raise _with_shapes(exc, args, kwargs, self.code) from None
            raise
        return self.code.value(reply["value"], reply_blobs)

    def eval(self) -> None:
        self._post_method("eval")

    def train(self, mode: bool = True) -> None:
        self._post_method("train", mode)

    def _post_method(self, method: str, *args: Any) -> None:
        """A method whose return value the check does not need (``eval`` returns the module itself)."""
        blobs: list[bytes] = []
        self.code.log(f"{self.class_name}.{method}({_show_args(args, {})})")
        self.code.post({"op": "method", "ref": self.ref, "method": method, "discard": True,
                        **_encode_args(args, {}, blobs)}, blobs, what=f"{self.class_name}.{method}")

    def attribute(self, attr: str) -> Returned | None:
        """The object's attribute ``attr`` (a dotted path reads through submodules:
        ``"attention.attention_weights"``), or None when it has none."""
        reply, blobs = self.code.request({"op": "get", "ref": self.ref, "attr": attr},
                                         what=f"reading {self.class_name}.{attr}")
        return self.code.value(reply["value"], blobs) if reply.get("exists") else None

    def _listing(self) -> list[dict[str, Any]]:
        reply, _ = self.code.request({"op": "params", "ref": self.ref},
                                     what=f"listing {self.class_name}'s parameters")
        return list(reply["params"])

    def parameters(self) -> dict[str, tuple[int, ...] | None]:
        """Parameter names and shapes (None while a lazy parameter is not initialised)."""
        return {str(p["name"]): (tuple(p["shape"]) if p["shape"] is not None else None) for p in self._listing()}

    def bind(self, shapes: Mapping[str, tuple[int, ...]]) -> Binding:
        """Where parameters of these shapes (the assignment's names, in its order) go in the student's module, by the
        question's naming rule (binding.py); the module is asked for its parameters once per call."""
        found = [Found(str(p["name"]), tuple(p["known"]) if p.get("known") is not None else None)
                 for p in self._listing()]
        return bind({name: tuple(shape) for name, shape in shapes.items()}, found, self.code.naming)

    def set_parameters(self, params: Mapping[str, np.ndarray]) -> Binding:
        """Set the assignment's parameters (name -> value) in the student's module, each where the binding puts it.
        When the binding cannot be used (it found no way to decide, or a specified name has another shape), nothing is
        set and the check fails with why: the grader's setup, not the student's code, raised."""
        binding = self.bind({name: np.shape(value) for name, value in params.items()})
        if not binding.usable:
            message = binding.problem(self.class_name)
            hint = f"{self.class_name}'s parameters have other shapes than the assignment's" if binding.wrong_shape \
                else without_sizes(message)
            raise WrongAnswer(message, hint=hint, setup=True)
        self.code.choose(bound_parameters(self.class_name, binding))
        names = [name for name in params if name in binding.bound]
        blobs = [wire.encode_array(np.asarray(params[name], dtype=np.float32)) for name in names]
        for name in names:
            where = "" if binding.bound[name] == name else f" (as {binding.bound[name]})"
            self.code.log(f"set {self.class_name}.{name}{where} = {_show(np.asarray(params[name]))}")
        self.code.post({"op": "set_params", "ref": self.ref, "names": [binding.bound[n] for n in names]}, blobs,
                       what=f"setting {self.class_name}'s parameters {', '.join(binding.bound[n] for n in names)}")
        return binding


def _parameters(signature: Any) -> tuple[Parameter, ...] | None:
    """A signature as the student's process describes it: [name, kind, has a default, the default's text]."""
    if not isinstance(signature, list):
        return None
    return tuple(Parameter(str(p[0]), str(p[1]), bool(p[2]), None if len(p) < 4 or p[3] is None else str(p[3]))
                 for p in signature)


def without_sizes(message: str) -> str:
    """A message without its bracketed parts that hold numbers (sizes, a call's arguments, where it raised): what a
    hidden check may say of it, and what the same problem told by several checks has in common."""
    return re.sub(r" ?\([^()]*\d[^()]*\)", "", message)


def _with_shapes(exc: StudentRaised, args: tuple[Any, ...], kwargs: Mapping[str, Any],
                 code: StudentCode) -> StudentRaised:
    """A shape error, told with the shapes the code was called with and, when the question says, the shapes the
    assignment passes (code written for another convention fails on them this way); and, when one of the check's
    sizes is 1 and the student's code on the failing path squeezes with no axis, that squeeze."""
    shapes = [f"{_shape_of(a)}" for a in args if _shape_of(a)]
    shapes += [f"{k} {_shape_of(v)}" for k, v in kwargs.items() if _shape_of(v)]
    told = f". It was called with tensors of shapes {', '.join(shapes)}" if shapes else ""
    if code.convention:
        told += f"; {code.convention}"
    told += squeeze_note(code, exc)
    message = exc.message + told
    return StudentRaised(message, exc_type=exc.exc_type, exc_message=exc.exc_message, traceback=exc.traceback,
                         where=exc.where, called=exc.called)


def squeeze_note(code: StudentCode, exc: StudentRaised) -> str:
    """'; your code calls .squeeze() with no axis (line 33: `...`), which removes every axis of size 1, and queries
    is 1 here: ...' when both are so: the squeeze is on the failing path, and an axis it would remove is there."""
    ones = [name.replace("_", " ") for name, size in code.sizes.items() if size == 1]
    squeezes = code.bare_calls(exc, "squeeze") if ones else ()
    if not squeezes:
        return ""
    which = f"{', '.join(ones[:-1])} and {ones[-1]} are" if len(ones) > 1 else f"{ones[0]} is"
    return (f"; your code calls .squeeze() with no axis ({squeezes[0]}), which removes every axis of size 1, and "
            f"{which} 1 here: name the axis to remove (.squeeze(-1) removes only the last)")


def _shape_of(value: Any) -> str:
    array = value.value if isinstance(value, Arg) else value
    return str(tuple(array.shape)) if isinstance(array, np.ndarray) else ""
