"""What a student's code asks of the references it is graded with (a later question's code calling the reference
``masked_softmax`` in place of its own), kept while the student kit is recorded from the model solution.

The kit must not hold those references (they are other questions' answers): it answers the same calls from what
they returned here (grader/kit/standins.py). Kept only when the grader asks (``record_provided``), so grading never
pays for it. A function's call is kept with its arguments and result; a module class's construction with its
arguments and what it is built of (torch's own layers, their settings and parameter shapes, which the assignment
states), and each call of its forward with its parameters' values, its arguments and its result.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

try:  # inside the grader package
    from . import convert
except ImportError:  # the student's process, which runs this folder's modules by their bare names
    import convert  # type: ignore[no-redef]

KEPT: list[dict[str, Any]] = []
BLOBS: list[bytes] = []
PLAIN = (int, float, bool, str, type(None))


def recording(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (the provided names) with each function and module class keeping its calls."""
    kept: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, type) and issubclass(value, torch.nn.Module):
            kept[name] = _module_class(name, value)
        elif callable(value):
            kept[name] = _function(name, value)
        else:
            kept[name] = value
    return kept


def drain() -> tuple[list[dict[str, Any]], list[bytes]]:
    """What was kept since the last drain, and the arrays it refers to."""
    kept, blobs = list(KEPT), list(BLOBS)
    KEPT.clear()
    BLOBS.clear()
    return kept, blobs


def _encoded(value: Any, blobs: list[bytes]) -> dict[str, Any]:
    return convert.encode(value, blobs)


def _keep(record: dict[str, Any], returned: Any, **values: Any) -> None:
    blobs: list[bytes] = []
    encoded = {key: {k: _encoded(v, blobs) for k, v in value.items()} if key == "kwargs" else _encoded(value, blobs)
               for key, value in values.items()}
    encoded["returned"] = _encoded(returned, blobs)
    offset = len(BLOBS)
    BLOBS.extend(blobs)
    KEPT.append({**record, **encoded, "blob_offset": offset})


def _function(name: str, function: Any) -> Any:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        returned = function(*args, **kwargs)
        _keep({"name": name, "kind": "call"}, returned, args=list(args), kwargs=dict(kwargs))
        return returned

    return call


def _layer(module: torch.nn.Module) -> dict[str, Any] | None:
    """A torch layer as settings and parameter shapes, or None for anything but torch's own (a student could not be
    given its code)."""
    cls = type(module)
    if not cls.__module__.startswith("torch.nn."):
        return None
    children = []
    for child_name, child in module.named_children():
        described = _layer(child)
        if described is None:
            return None
        children.append([child_name, described])
    # Lists of pairs, not objects: the order of layers and parameters is the order of their initialisation (torch's
    # generator) and of named_parameters(), and JSON objects are written with their keys sorted.
    return {"class": f"{cls.__module__}.{cls.__qualname__}",
            "settings": {k: v for k, v in vars(module).items() if not k.startswith("_") and type(v) in PLAIN},
            "parameters": _shapes(module._parameters), "buffers": _shapes(module._buffers), "children": children}


def _shapes(tensors: dict[str, Any]) -> list[list[Any]]:
    return [[name, None if t is None else list(t.shape)] for name, t in tensors.items()]


def _module_class(name: str, cls: type) -> type:
    def initialise(self: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **kwargs)
        layers = [[child_name, _layer(child)] for child_name, child in self.named_children()]
        KEPT.append({"name": name, "kind": "construct", "args": _plain(args), "kwargs": _plain(kwargs),
                     "layers": layers, "parameters": _shapes(self._parameters),
                     "complete": all(layer is not None for _, layer in layers) and not self._buffers})

    def forward(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        returned = cls.forward(self, *args, **kwargs)
        state = [p for _, p in self.named_parameters()]
        _keep({"name": name, "kind": "forward"}, returned, state=state, args=list(args), kwargs=dict(kwargs))
        return returned

    recording_class = type(cls.__name__, (cls,), {"__init__": initialise, "forward": forward,
                                                  "__qualname__": cls.__qualname__, "__module__": cls.__module__})
    return recording_class


def _plain(value: Any) -> Any:
    if type(value) in PLAIN:
        return value
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return {"unrecordable": type(value).__name__}
