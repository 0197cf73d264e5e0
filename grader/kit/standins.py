"""The references a later question is graded with, as the student kit has them: what they answered the model
solution's code, standing in for them in the student's kernel.

The grader grades q2 with the reference ``masked_softmax`` in place of the student's (so a mistake in q1 costs points
only in q1). The kit must not hold that reference, which is q1's answer; it holds what the reference returned when
the model solution's q2 called it on the public checks' inputs (grader/execute/child/provided_calls.py kept them).
A student's q2 that calls it on the same inputs gets the same answers, so the kit gives q2 the grader's verdict
whatever their q1 does. On other inputs (their q2 computes something else first) the student's own answer stands in,
as it does in the grader's second run with the student's own answers: their q2 is then wrong whichever answers it
gets, or written for its own q1. A module class (bahdanau's ``AdditiveAttention``) is rebuilt of torch's own layers,
as the assignment states them, and its forward answers from what the reference's returned for the same parameters
and inputs.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Sequence
from typing import Any

import torch

from grader.kit.bundle import ArrayStore, AsTensor, decode, encode, same_input

# The student's code computes the arguments in its own order of float32 operations: inputs this close to the model
# solution's are the same inputs, and the reference's answers to them are within any check's tolerance.
RTOL, ATOL = 1e-5, 1e-6


class NoRecordedAnswer(RuntimeError):
    """The reference was asked something the model solution never asked it, and no answer of the student's own can
    stand in (a module built by the reference class)."""


# ----- the build side: the calls kept in the student's process, as bundle values --------------------------------
def kept_values(kept: list[dict[str, Any]], blobs: list[bytes]) -> list[dict[str, Any]]:
    """The calls the student's process kept, their values as plain arrays (AsTensor where they were tensors);
    a call with a value that cannot be kept (an object) is left out."""
    from grader.execute.child import wire

    def plain(spec: dict[str, Any], offset: int) -> Any:
        kind = spec["kind"]
        if kind in ("tensor", "ndarray") and spec.get("data"):
            array = wire.decode_array(blobs[offset + spec["blob"]])
            return AsTensor(array) if kind == "tensor" else array
        if kind in ("scalar", "str"):
            return spec["value"]
        if kind == "none":
            return None
        if kind == "sequence" and spec["length"] == len(spec["items"]):
            items = [plain(item, offset) for item in spec["items"]]
            return tuple(items) if spec["type"] == "tuple" else items
        raise ValueError(f"a {spec.get('type')} cannot be kept")

    values = []
    for record in kept:
        offset = record.get("blob_offset", 0)
        entry = {k: v for k, v in record.items() if k not in ("args", "kwargs", "state", "returned", "blob_offset")}
        if record["kind"] == "construct":  # plain values already
            values.append(entry | {"args": record["args"], "kwargs": record["kwargs"]})
            continue
        try:
            for key in ("args", "kwargs", "state", "returned"):
                if key in record:
                    spec = record[key]
                    entry[key] = {k: plain(v, offset) for k, v in spec.items()} if key == "kwargs" \
                        else plain(spec, offset)
        except ValueError:
            continue
        values.append(entry)
    return values


def pooled(records: list[dict[str, Any]], store: ArrayStore) -> list[dict[str, Any]]:
    """Each distinct record once, encoded for the bundle."""
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        encoded = {k: encode(v, store) if k in ("args", "kwargs", "state", "returned") else v
                   for k, v in record.items()}
        seen.setdefault(repr(sorted(encoded.items(), key=lambda item: item[0])), encoded)
    return list(seen.values())


# ----- the kernel side ---------------------------------------------------------------------------------------------
def _comparable(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.Tensor.detach(value).cpu().numpy()
    if isinstance(value, AsTensor):
        return value.array
    if isinstance(value, (tuple, list)):
        return [_comparable(v) for v in value]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    return value


def _same(recorded: Any, given: Any) -> bool:
    return same_input(_comparable(recorded), _comparable(given), rtol=RTOL, atol=ATOL)


def _answer(value: Any) -> Any:
    """A recorded result as the reference returned it: tensors as tensors, fresh each time."""
    if isinstance(value, AsTensor):
        return torch.from_numpy(value.array.copy())
    if isinstance(value, tuple):
        return tuple(_answer(v) for v in value)
    if isinstance(value, list):
        return [_answer(v) for v in value]
    return value


# The code of every stand-in's functions: a frame running one is where the student's code entered the answer the
# grader provides (grader/execute/child/calls.py says a raise there as the student's call, as in the grader).
_STAND_IN_CODE: set[types.CodeType] = set()


def lent_name(frame: types.FrameType) -> str:
    """The name a stand-in was lent under, when ``frame`` runs one of its functions; else ''."""
    if frame.f_code not in _STAND_IN_CODE:
        return ""
    found = frame.f_locals  # each stand-in's function holds the name it stands for
    name = found.get("name", getattr(found.get("cls"), "__name__", ""))  # allocate holds its class, of that name
    return name if isinstance(name, str) else ""


class StandIns:
    """The recorded answers of one question's references (kit.json's ``provided_calls``)."""

    def __init__(self, records: list[dict[str, Any]], store: ArrayStore) -> None:
        self._records = records
        self._store = store
        self._decoded: list[dict[str, Any]] | None = None

    def _all(self, name: str, kind: str) -> list[dict[str, Any]]:
        if self._decoded is None:
            self._decoded = [{k: decode(v, self._store) if k in ("args", "kwargs", "state", "returned") else v
                              for k, v in r.items()} for r in self._records]
        return [r for r in self._decoded if r["name"] == name and r["kind"] == kind]

    def lend(self, names: Sequence[str], own: dict[str, Any]) -> dict[str, Any]:
        """A stand-in for each of ``names``; ``own``: the student's own definitions, which answer what the
        model solution never asked."""
        lent: dict[str, Any] = {}
        for name in names:
            if self._all(name, "construct"):
                lent[name] = self._module_class(name, own.get(name))
            else:
                lent[name] = self._function(name, own.get(name))
        return lent

    def _function(self, name: str, own: Any) -> Callable[..., Any]:
        calls = self._all(name, "call")

        def stand_in(*args: Any, **kwargs: Any) -> Any:
            given = _comparable(list(args)), _comparable(kwargs)
            for call in calls:
                if _same(call["args"], given[0]) and _same(call["kwargs"], given[1]):
                    return _answer(call["returned"])
            if own is None or own is stand_in:
                raise NameError(f"name '{name}' is not defined")
            return own(*args, **kwargs)

        stand_in.__name__ = stand_in.__qualname__ = name
        _STAND_IN_CODE.add(stand_in.__code__)
        return stand_in

    def _module_class(self, name: str, own: Any) -> type:
        constructions = self._all(name, "construct")
        forwards = self._all(name, "forward")

        def built(args: tuple, kwargs: dict) -> dict[str, Any] | None:
            given = _comparable(list(args)), _comparable(kwargs)
            return next((c for c in constructions if c["complete"] and _same(c["args"], given[0])
                         and _same(c["kwargs"], given[1])), None)

        def allocate(cls: type, *args: Any, **kwargs: Any) -> Any:
            if built(args, kwargs) is None and isinstance(own, type):
                return own(*args, **kwargs)  # not an instance of cls: its __init__ is not called
            return torch.nn.Module.__new__(cls)

        def initialise(self: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
            torch.nn.Module.__init__(self)
            construction = built(args, kwargs)
            if construction is None:
                raise NoRecordedAnswer(f"the student kit cannot build {name}{tuple(args)}: your own {name} is "
                                       "needed here (it is checked when graded)")
            for parameter, shape in construction["parameters"]:
                self.register_parameter(parameter, None if shape is None else torch.nn.Parameter(torch.empty(shape)))
            for child, layer in construction["layers"]:
                self.add_module(child, _rebuilt(layer))

        def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
            state = [torch.Tensor.detach(p).cpu().numpy() for _, p in self.named_parameters()]
            given = _comparable(list(args)), _comparable(kwargs)
            for call in forwards:
                if _same(call["state"], state) and _same(call["args"], given[0]) and _same(call["kwargs"], given[1]):
                    return _answer(call["returned"])
            if isinstance(own, type) and issubclass(own, torch.nn.Module):
                # The student's own forward on the reference's layers: the reference's answer when theirs is right.
                yours = own.__new__(own)
                yours.__dict__.update(self.__dict__)
                return yours(*args, **kwargs)
            raise NoRecordedAnswer(f"the student kit has the reference {name}'s answers only for the inputs the model "
                                   f"solution gives it, and your code gave it others: this check runs when graded")

        _STAND_IN_CODE.update(f.__code__ for f in (allocate, initialise, forward))
        return type(name, (torch.nn.Module,), {"__new__": allocate, "__init__": initialise, "forward": forward,
                                               "__qualname__": name, "__module__": "reference"})


def _rebuilt(layer: dict[str, Any]) -> torch.nn.Module:
    """One of torch's own layers from its settings and parameter shapes, initialised as its constructor does (the
    same draws from torch's generator)."""
    module_name, _, class_name = layer["class"].rpartition(".")
    if not module_name.startswith("torch.nn."):
        raise NoRecordedAnswer(f"{layer['class']} is not one of torch's layers")
    cls = getattr(importlib.import_module(module_name), class_name)
    module = cls.__new__(cls)
    torch.nn.Module.__init__(module)
    for key, value in layer["settings"].items():
        setattr(module, key, value)
    for parameter, shape in layer["parameters"]:
        module.register_parameter(parameter, None if shape is None else torch.nn.Parameter(torch.empty(shape)))
    for buffer, shape in layer["buffers"]:
        module.register_buffer(buffer, None if shape is None else torch.zeros(shape))
    for child, described in layer["children"]:
        module.add_module(child, _rebuilt(described))
    reset = getattr(module, "reset_parameters", None)
    if callable(reset):
        reset()
    return module
