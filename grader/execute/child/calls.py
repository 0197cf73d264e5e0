"""The calls a check makes into the student's namespace, answered: describe a name, call a function, construct a
module, call its methods, read an attribute, list and set its parameters, seed the generators.

One home for what each request does, used by the student's process in the grader (main.py, behind the pipe) and by
the student kit in the student's own kernel (grader/kit), so that both answer a check the same way. It imports nothing
from the ``grader`` package: this folder, NumPy and torch.
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import random
import re
import traceback
import types
from typing import Any

import numpy as np
import torch

try:  # inside the grader package (the student kit)
    from . import convert, wire
except ImportError:  # the student's process, which runs this folder's modules by their bare names
    import convert  # type: ignore[no-redef]
    import wire  # type: ignore[no-redef]


class Calls:
    """Answers requests against ``namespace``; which frames are the student's and how a memory budget is enforced
    are the caller's."""

    namespace: dict[str, Any]
    device: str = "cpu"
    max_elements: int = 1 << 24

    def limit_memory(self, budget: int) -> None:
        """Allow ``budget`` more bytes for the rest of the question (a call's memory budget)."""
        raise NotImplementedError

    def student_frame(self, filename: str) -> bool:
        """Whether a traceback's frame in ``filename`` is the student's code (only those are told)."""
        raise NotImplementedError

    def own_frame(self, filename: str) -> bool:
        """Whether a frame in ``filename`` is the student's own code, not a file the grader provides."""
        return self.student_frame(filename)

    def provided_answer(self, frame: types.FrameType) -> str:
        """The name under which ``frame``'s code stands in the student's namespace for their own answer (a question
        graded with the reference of an earlier one), or '' for any other frame."""
        return ""

    def refused(self) -> list[str]:
        """The names the grader's ``d2l`` refused the student's code (an answer the assignment asks for); none in
        the student's own kernel, where ``d2l`` is the real one."""
        return []

    def describe_exception(self, exc: BaseException) -> dict[str, Any]:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if self.student_frame(f.filename)]
        try:
            message = str(exc)
        except BaseException:
            message = "<unprintable message>"
        where = [frames[-1].filename, frames[-1].lineno, frames[-1].name, frames[-1].line or ""] if frames else None
        described = {"type": convert.type_name(exc), "message": message[:2000],
                     "traceback": "".join(traceback.format_list(frames))[-4000:], "where": where}
        call = self._provided_call(exc.__traceback__)
        if call is not None:
            described["call"] = call
        return described

    def _provided_call(self, tb: types.TracebackType | None) -> dict[str, Any] | None:
        """{"name", "where"} when the exception was raised inside an answer the grader put in place of the
        student's, entered straight from the student's own line: the grader then tells that line and the name it
        called, since the arguments were the student's. None when the provided answer was entered from anywhere
        else (the grader's own call, a provided harness), or not at all."""
        caller: tuple[str, int, str] | None = None  # the last frame listed before it: (file, line, function)
        for frame, lineno in traceback.walk_tb(tb):  # walked, not extracted: sys.tracebacklimit may cut a summary
            name = self.provided_answer(frame)
            if name:
                if caller is None or not self.own_frame(caller[0]):
                    return None
                filename, line, function = caller
                return {"name": name, "where": [filename, line, function, linecache.getline(filename, line).strip()]}
            if self.student_frame(frame.f_code.co_filename):
                caller = frame.f_code.co_filename, lineno, frame.f_code.co_name
        return None

    def handle(self, header: dict[str, Any], blobs: list[bytes], out: list[bytes], refs: dict[int, Any]) -> dict:
        op = header["op"]

        def args() -> tuple[list[Any], dict[str, Any]]:
            ns = self.namespace
            positional = [convert.decode(a, blobs, refs, self.device, ns) for a in header.get("args", [])]
            keyword = {k: convert.decode(a, blobs, refs, self.device, ns) for k, a in header.get("kwargs", {}).items()}
            return positional, keyword

        if op == "seed":
            seed = int(header["seed"])
            if self.device == "cpu":
                # torch.manual_seed also queues the seed for CUDA with a formatted stack trace (a millisecond a call)
                torch.default_generator.manual_seed(seed)
            else:
                torch.manual_seed(seed)
            np.random.seed(seed % 2**32)
            random.seed(seed)
            return {}
        if op == "describe":
            return self.describe(header["name"])
        if op == "call":
            positional, keyword = args()
            budget = int(header.get("memory_budget") or 0)
            if budget:
                self.limit_memory(budget)
            try:
                with torch.no_grad() if header.get("no_grad") else contextlib.nullcontext():
                    value = self.namespace[header["name"]](*positional, **keyword)
            except torch.OutOfMemoryError as exc:  # past the budget on the GPU: as the address-space limit says it
                raise MemoryError(str(exc).splitlines()[0]) from None
            return {"value": self.encode(value, out)}
        if op == "new":
            # The grader matched the assignment's arguments to the class's signature (describe) and sends them under
            # the student's names.
            cls = self.namespace[header["name"]]
            keyword = dict(header["kwargs"])
            obj = cls(*header.get("args", ()), **keyword)
            if isinstance(obj, torch.nn.Module) and self.device != "cpu":  # a new module's tensors are on the CPU
                obj.to(self.device)
            refs[len(refs) + 1] = obj
            return {"ref": len(refs), "type": convert.type_name(obj), "passed": sorted(keyword)}
        obj = refs[header["ref"]]
        if op == "method":
            positional, keyword = args()
            value = getattr(obj, header["method"])(*positional, **keyword)
            return {} if header.get("discard") else {"value": self.encode(value, out)}
        if op == "get":
            # A dotted path reads through submodules (``attention.attention_weights`` of a model that holds its
            # attention layer), each step as Python's getattr would.
            for attr in header["attr"].split("."):
                if not hasattr(obj, attr):
                    return {"exists": False}
                obj = getattr(obj, attr)
            return {"exists": True, "value": self.encode(obj, out)}
        if op == "params":
            return {"params": [_parameter_info(obj, name, p) for name, p in obj.named_parameters()]}
        if op == "set_params":
            for name, blob in zip(header["names"], blobs):
                _set_parameter(obj, name, torch.from_numpy(wire.decode_array(blob).copy()), self.device)
            return {}
        raise ValueError(f"unknown operation {op!r}")

    def encode(self, value: Any, out: list[bytes]) -> dict[str, Any]:
        return convert.encode(value, out, max_elements=self.max_elements)

    def describe(self, name: str) -> dict[str, Any]:
        if name not in self.namespace:
            # What the student defined instead, for the grader to name a near one (grader/near_names.py).
            missing: dict[str, Any] = {"exists": False, "defined": self.defined_names()}
            refused = self.refused()
            if refused:  # what the grader's d2l refused the student's code: told by name (student.py)
                missing["refused"] = refused
            return missing
        obj = self.namespace[name]
        info: dict[str, Any] = {"exists": True, "type": convert.type_name(obj), "callable": callable(obj),
                                "is_class": isinstance(obj, type)}
        from_d2l = _from_d2l(obj)
        if from_d2l:
            info["from_d2l"] = from_d2l
        if isinstance(obj, type):
            info["is_module"] = issubclass(obj, torch.nn.Module)
        try:  # the grader matches the assignment's arguments to it (grader/check/signature.py)
            info["signature"] = _signature(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):  # no signature Python can read
            info["signature"] = None
        at = self._defined_at(obj)
        if at is not None:
            info["at"] = at
        if info.get("is_module"):  # what a call of an instance takes: the grader names parameters out of order
            try:
                info["forward"] = _signature(list(inspect.signature(obj.forward).parameters.values())[1:])
            except (TypeError, ValueError, AttributeError):
                info["forward"] = None
        return info

    def _defined_at(self, obj: Any) -> list[Any] | None:
        """[file, line, function] of the student's own code a call of ``obj`` runs (a function's, a module class's
        forward), for the grader to say where a mistake it names is; None for anything else."""
        try:
            function = obj.forward if isinstance(obj, type) and issubclass(obj, torch.nn.Module) else obj
            code = function.__code__
            filename, line, name = str(code.co_filename), int(code.co_firstlineno), str(code.co_name)
        except Exception:  # a builtin, a class without its own forward, or attributes that raise: nowhere to tell
            return None
        return [filename, line, name] if self.own_frame(filename) else None

    def defined_names(self) -> list[str]:
        """The names the student's own code defined at the top level: its functions, classes and instances of its
        classes, and any other value but a module; not dunder names, IPython's history (``_i3``, ``Out``), nor what it
        imported or the grader put there (a function whose ``__module__`` is not the student's: ``softmax`` from
        ``from torch.nn.functional import softmax``, a reference)."""
        own = self.namespace.get("__name__")
        names = []
        for name, obj in list(self.namespace.items()):
            # Identifiers of a sensible length only: a name put in globals() by hand may be anything.
            if type(name) is not str or len(name) > 100 or not name.isidentifier() or \
                    _NOT_DEFINED_BY_STUDENT.match(name):
                continue
            try:
                if isinstance(obj, types.ModuleType) or (callable(obj) and getattr(obj, "__module__", None) != own):
                    continue
            except Exception:  # an object whose attributes raise: not the student's to rename
                continue
            names.append(name)
        return sorted(names)[:_MAX_DEFINED]


# Dunder names, and the names IPython's shell defines in a kernel's namespace.
_NOT_DEFINED_BY_STUDENT = re.compile(r"__\w*__$|_+$|_i+\d*$|_\d+$|_[iod]h$|In$|Out$")
_MAX_DEFINED = 2000

_KINDS = {inspect.Parameter.POSITIONAL_ONLY: "positional", inspect.Parameter.POSITIONAL_OR_KEYWORD: "either",
          inspect.Parameter.VAR_POSITIONAL: "*args", inspect.Parameter.KEYWORD_ONLY: "keyword",
          inspect.Parameter.VAR_KEYWORD: "**kwargs"}


def _signature(parameters: Any) -> list[list[Any]]:
    return [[p.name, _KINDS[p.kind], p.default is not p.empty, _default_text(p.default)] for p in parameters]


def _from_d2l(obj: Any) -> list[str]:
    """The names of d2l's own functions and classes that ``obj`` is or inherits from (``DotProductAttention`` for
    ``d2l.DotProductAttention``, an alias of it or a subclass of it): the grader refuses one that answers a
    question (the student's own class on ``d2l.Module`` names ``Module``, which answers none)."""
    try:
        chain = obj.__mro__ if isinstance(obj, type) else (obj,)
        found = []
        for item in chain:
            module = getattr(item, "__module__", None)
            if isinstance(module, str) and (module == "d2l" or module.startswith("d2l.")):
                found.append(str(getattr(item, "__name__", "")))
        return found[:20]
    except Exception:  # an object whose attributes raise: nothing to tell
        return []


def _default_text(default: Any) -> str | None:
    """A parameter's default as the signature shows it (``5000``), for the message when a signature cannot be
    matched; None for none."""
    if default is inspect.Parameter.empty:
        return None
    try:
        text = repr(default)
    except Exception:
        return "..."
    return text if len(text) <= 30 else "..."


def _parameter_info(module: torch.nn.Module, name: str, param: torch.nn.Parameter) -> dict[str, Any]:
    """A parameter's name and shape; for a lazy layer's, what is known before its first call (a LazyLinear knows its
    output size), with None for the rest, so the grader can tell which layer a weight belongs in."""
    if not isinstance(param, torch.nn.parameter.UninitializedParameter):
        return {"name": name, "shape": list(param.shape), "known": list(param.shape)}
    owner_name, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_name) if owner_name else module
    known = None
    if isinstance(owner, torch.nn.LazyLinear):
        known = [owner.out_features, None] if leaf == "weight" else [owner.out_features]
    return {"name": name, "shape": None, "known": known}


def _set_parameter(module: torch.nn.Module, name: str, value: torch.Tensor, device: str) -> None:
    try:
        param = module.get_parameter(name)
    except AttributeError as exc:
        raise AttributeError(f"cannot set parameter {name}: {exc}") from None
    if isinstance(param, torch.nn.parameter.UninitializedParameter):
        owner = module.get_submodule(name.rpartition(".")[0])
        if isinstance(owner, torch.nn.LazyLinear) and name.endswith("weight") and value.dim() == 2:
            # Initialise the whole layer (its bias too) as its first forward would, then overwrite the weight.
            owner.initialize_parameters(torch.zeros(1, value.shape[1], device=device))
            param = module.get_parameter(name)
        else:
            param.materialize(tuple(value.shape), device=device, dtype=torch.float32)
    elif tuple(param.shape) != tuple(value.shape):
        raise ValueError(
            f"parameter {name} has shape {tuple(param.shape)}, but the assignment specifies {tuple(value.shape)}")
    with torch.no_grad():
        param.copy_(value.to(device=device, dtype=param.dtype))
