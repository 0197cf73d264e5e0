"""What a check holds to call into the student's code: names, functions, objects. Every call is plain data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.errors import StudentRaised, WrongAnswer
from grader.execute.array_text import array_text
from grader.execute.child import wire
from grader.execute.process import QuestionSession
from grader.execute.values import Arg, Returned, decode_value


@dataclass(frozen=True)
class NameInfo:
    exists: bool
    type_name: str = ""
    callable: bool = False
    is_class: bool = False
    is_module: bool = False
    params: tuple[str, ...] | None = None


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


def _where(frame: Any) -> str:
    """' (cell [2], line 7, in masked_softmax: `X[~mask] = value`)' from the last frame in the student's code."""
    try:
        filename, lineno, function, line = str(frame[0]), int(frame[1]), str(frame[2]), str(frame[3])
    except (TypeError, IndexError, ValueError):
        return ""
    place = f"cell [{filename[6:-1]}], " if filename.startswith("<cell ") else ""
    if filename == "<reference>":
        place = "in the reference code, "
    code = f": `{line.strip()[:120]}`" if line.strip() else ""
    return f" ({place}line {lineno}, in {function}{code})"


def _raised(what: str, reply: dict[str, Any]) -> StudentRaised:
    error = reply.get("error") or {}
    exc_type, exc_message = str(error.get("type", "Exception")), str(error.get("message", ""))
    summary = f"{what} raised {exc_type}: {exc_message}".rstrip(": ") + _where(error.get("where"))
    if "Expected all tensors to be on the same device" in exc_message:  # graded with --device cuda
        summary += (". Your code made a tensor on the CPU while its inputs are on the GPU: create tensors on an "
                    "input's device, e.g. torch.ones(n, device=X.device)")
    return StudentRaised(summary, exc_type=exc_type, exc_message=exc_message, traceback=str(error.get("traceback", "")))


class StudentCode:
    """The student's namespace inside one question's fork."""

    def __init__(self, session: QuestionSession, *, load_hint: str = "") -> None:
        self.session = session
        self.load_hint = load_hint  # e.g. "cell [4] raised SyntaxError", appended when a name is missing
        self._max_elements = session.process.limits.max_array_elements
        self.calls: list[str] = []  # what was called with what, for the instructor's view of a check
        # This check's answers (operation, reply, blobs), to replay it against known-wrong variants of the reference.
        self.replies: list[tuple[str, dict[str, Any], list[bytes]]] = []
        # Requests sent without waiting (seeding, setting weights, train/eval): (operation, what, recorded), their
        # answers read in order before the next answer waited for. A round trip costs a context switch each way;
        # most of a check's requests answer nothing the check needs.
        self.pending: list[tuple[str, str, bool]] = []
        self.known: dict[str, NameInfo] = {}  # names described in this fork (describe)
        self.known_at_start: dict[str, NameInfo] = {}  # ... when the current check began, for its replay

    def log(self, text: str) -> None:
        if len(self.calls) < 50:
            self.calls.append(text[:1500])

    def post(self, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str, record: bool = True) -> None:
        """Send a request whose answer the check does not need: an error it raises surfaces at the next request
        waited for (or at ``settle``), named as this request's."""
        self.session.send(header, blobs)
        self.pending.append((str(header.get("op")), what, record))

    def settle(self, *, ignore_errors: bool = False) -> None:
        """Read the answers of the requests sent without waiting; raise the first one's error (unless ignored)."""
        failure = self._drain()
        if failure is not None and not ignore_errors:
            raise failure

    def _drain(self) -> StudentRaised | None:
        failure = None
        pending, self.pending = self.pending, []
        for op, what, record in pending:
            reply, reply_blobs = self.session.receive(waiting_for=what)
            if record:
                self.replies.append((op, reply, reply_blobs))
            if not reply.get("ok") and failure is None:
                failure = _raised(what, reply)
        return failure

    def exchange(self, header: dict[str, Any], blobs: list[bytes] | tuple, *, what: str,
                 timeout: float | None) -> tuple[dict, list]:
        self.session.send(header, blobs)
        failure = self._drain()
        reply, reply_blobs = self.session.receive(waiting_for=what, timeout=timeout)
        self.replies.append((str(header.get("op")), reply, reply_blobs))
        if failure is not None:
            raise failure
        return reply, reply_blobs

    def request(self, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str,
                timeout: float | None = None) -> tuple[dict, list]:
        reply, reply_blobs = self.exchange(header, blobs, what=what, timeout=timeout)
        if not reply.get("ok"):
            raise _raised(what, reply)
        return reply, reply_blobs

    def value(self, desc: Any, blobs: list[bytes]) -> Returned:
        return decode_value(desc, blobs, max_elements=self._max_elements)

    def seed(self, seed: int) -> None:
        self.post({"op": "seed", "seed": seed}, what="seeding", record=False)

    def describe(self, name: str) -> NameInfo:
        """What ``name`` is in the student's namespace, asked once per question's fork (checks ask for the same
        names again and again; a name the fork has is kept for the rest of the question)."""
        if name in self.known:
            return self.known[name]
        reply, _ = self.request({"op": "describe", "name": name}, what=f"looking up {name}")
        if not reply.get("exists"):
            return NameInfo(False)
        params = reply.get("params")
        info = NameInfo(True, str(reply.get("type", "")), bool(reply.get("callable")), bool(reply.get("is_class")),
                        bool(reply.get("is_module")), tuple(str(p) for p in params) if params is not None else None)
        self.known[name] = info
        return info

    def start_check(self) -> None:
        """A check begins: the trace and the replies are its own, and what it finds known is noted for a replay."""
        self.calls.clear()
        self.replies.clear()
        self.known_at_start = dict(self.known)

    def _require(self, name: str, *, want_class: bool) -> NameInfo:
        info = self.describe(name)
        hint = f" ({self.load_hint})" if self.load_hint else ""
        if not info.exists:
            raise WrongAnswer(f"`{name}` is not defined in your submission{hint}", hint=f"`{name}` is not defined")
        if want_class and not info.is_class:
            raise WrongAnswer(f"`{name}` should be a class, but it is a {info.type_name}",
                              hint=f"`{name}` is not a class")
        if not info.callable:
            raise WrongAnswer(f"`{name}` should be a function, but it is a {info.type_name}",
                              hint=f"`{name}` is not a function")
        return info

    def function(self, name: str) -> StudentFunction:
        self._require(name, want_class=False)
        return StudentFunction(self, name)

    def construct(self, name: str, /, *, optional: Mapping[str, Any] | None = None, **kwargs: Any) -> StudentObject:
        """``name(**kwargs)``, adding each ``optional`` keyword that the signature names explicitly."""
        info = self._require(name, want_class=True)
        if not info.is_module:
            raise WrongAnswer(f"`{name}` should subclass torch.nn.Module", hint=f"`{name}` is not an nn.Module")
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        self.log(f"{name}({shown}), optional {dict(optional or {})}")
        reply, _ = self.request({"op": "new", "name": name, "kwargs": kwargs, "optional": dict(optional or {})},
                                what=f"{name}({shown})")
        return StudentObject(self, int(reply["ref"]), name)


class ReplayExhausted(Exception):
    """A replayed check asked for more, or other, than the student's process answered the first time."""


class ReplayedCode(StudentCode):
    """A check's recorded answers, served again in order without the student's process: the check runs again on
    the same inputs (same seed) and sees the same answers, while the reference it compares with may differ."""

    def __init__(self, original: StudentCode) -> None:
        self.session = None  # type: ignore[assignment]
        self.load_hint = original.load_hint
        self._max_elements = original._max_elements
        self.calls = []
        self.replies = []
        self.pending = []
        self.known = dict(original.known_at_start)  # the replay asks for what the check asked for
        self.known_at_start = dict(self.known)
        self._recorded = iter(list(original.replies))

    def exchange(self, header: dict[str, Any], blobs: list[bytes] | tuple, *, what: str,
                 timeout: float | None) -> tuple[dict, list]:
        op, reply, reply_blobs = next(self._recorded, ("", {}, []))
        if op != header.get("op"):
            raise ReplayExhausted(f"{what}: not in the recording")
        return reply, reply_blobs

    def post(self, header: dict[str, Any], blobs: list[bytes] | tuple = (), *, what: str, record: bool = True) -> None:
        if record:
            reply, _ = self.exchange(header, blobs, what=what, timeout=None)
            if not reply.get("ok"):
                raise _raised(what, reply)

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
        return StudentFunction(self.code, self.name, nbytes, self.no_grad, self.seconds)

    def without_grad(self) -> StudentFunction:
        """The same function, called under torch.no_grad(), as at inference (autograd keeps every intermediate)."""
        return StudentFunction(self.code, self.name, self.memory_budget, True, self.seconds)

    def with_time_limit(self, seconds: float) -> StudentFunction:
        """The same function, allowed ``seconds`` per call instead of the limits' ``call_seconds`` (a training
        run, say); the submission's own time limit still applies."""
        return StudentFunction(self.code, self.name, self.memory_budget, self.no_grad, seconds)

    def __call__(self, *args: Any, **kwargs: Any) -> Returned:
        blobs: list[bytes] = []
        header = {"op": "call", "name": self.name, **_encode_args(args, kwargs, blobs)}
        if self.memory_budget is not None:
            header["memory_budget"] = self.memory_budget
        if self.no_grad:
            header["no_grad"] = True
        self.code.log(f"{self.name}({_show_args(args, kwargs)})")
        reply, reply_blobs = self.code.request(header, blobs, what=f"{self.name}(...)", timeout=self.seconds)
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
        blobs: list[bytes] = []
        header = {"op": "method", "ref": self.ref, "method": method, **_encode_args(args, kwargs, blobs)}
        shown = "forward" if method == "__call__" else method
        self.code.log(f"{self.class_name}.{shown}({_show_args(args, kwargs)})")
        reply, reply_blobs = self.code.request(header, blobs, what=f"{self.class_name}.{shown}")
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
        reply, blobs = self.code.request({"op": "get", "ref": self.ref, "attr": attr},
                                         what=f"reading {self.class_name}.{attr}")
        return self.code.value(reply["value"], blobs) if reply.get("exists") else None

    def parameters(self) -> dict[str, tuple[int, ...] | None]:
        """Parameter names and shapes (None while a lazy parameter is not initialised)."""
        reply, _ = self.code.request({"op": "params", "ref": self.ref},
                                     what=f"listing {self.class_name}'s parameters")
        return {str(p["name"]): (tuple(p["shape"]) if p["shape"] is not None else None) for p in reply["params"]}

    def set_parameters(self, params: Mapping[str, np.ndarray]) -> None:
        blobs = [wire.encode_array(np.asarray(v, dtype=np.float32)) for v in params.values()]
        for name, value in params.items():
            self.code.log(f"set {self.class_name}.{name} = {_show(np.asarray(value))}")
        self.code.post({"op": "set_params", "ref": self.ref, "names": list(params)}, blobs,
                       what=f"setting {self.class_name}'s parameters {', '.join(params)}")
