"""Values crossing the trust boundary, on the grader's side: arguments we send and what came back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.errors import ProcessDied
from grader.execute.child import wire

TENSOR_TYPES = ("torch.Tensor", "torch.nn.parameter.Parameter")
ARG_DTYPES = ("float32", "float64", "int64", "int32", "bool")


@dataclass(frozen=True)
class Arg:
    """An argument for student code: a NumPy array sent as a torch tensor of ``dtype`` or as a NumPy array,
    a name in the student's namespace (a class to pass along), or a plain JSON value. Lists and tuples of
    arguments are sent as lists and tuples."""

    value: Any
    dtype: str | None = None
    kind: str = "value"  # value, tensor, ndarray, name

    @classmethod
    def tensor(cls, array: np.ndarray, dtype: str = "float32") -> Arg:
        if dtype not in ARG_DTYPES:
            raise ValueError(f"unsupported tensor dtype {dtype}")
        return cls(np.asarray(array), dtype, "tensor")

    @classmethod
    def array(cls, array: np.ndarray, dtype: str = "float64") -> Arg:
        """A NumPy array, for questions answered in NumPy."""
        if dtype not in ARG_DTYPES:
            raise ValueError(f"unsupported array dtype {dtype}")
        return cls(np.asarray(array, dtype=dtype), dtype, "ndarray")

    @classmethod
    def name(cls, name: str) -> Arg:
        """What ``name`` is bound to in the student's namespace, e.g. their class, for a provided harness."""
        return cls(name, None, "name")

    def encode(self, blobs: list[bytes]) -> dict[str, Any]:
        if self.kind in ("tensor", "ndarray"):
            blobs.append(wire.encode_array(self.value))
            return {"kind": self.kind, "dtype": self.dtype, "blob": len(blobs) - 1}
        if self.kind == "name":
            return {"kind": "name", "name": str(self.value)}
        if self.value is None or isinstance(self.value, (bool, int, float, str)):
            return {"kind": "value", "value": self.value}
        if isinstance(self.value, (list, tuple)):
            items = [(item if isinstance(item, Arg) else Arg(item)).encode(blobs) for item in self.value]
            return {"kind": "sequence", "tuple": isinstance(self.value, tuple), "items": items}
        raise TypeError(f"cannot send {type(self.value).__name__} to student code")


@dataclass(frozen=True)
class Returned:
    """What student code returned, as plain data. ``array`` is set for tensors and NumPy arrays."""

    kind: str  # tensor, tensor_subclass, ndarray, none, scalar, str, sequence, object
    type_name: str
    dtype: str | None = None
    shape: tuple[int, ...] | None = None
    array: np.ndarray | None = field(default=None, compare=False)
    items: tuple[Returned, ...] = ()
    length: int = 0
    value: Any = None

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor" and self.type_name in TENSOR_TYPES

    def describe(self) -> str:
        """A short phrase for messages: 'a torch.Tensor of shape (2, 3)', 'a tuple of 2 items', 'None'."""
        if self.kind in ("tensor", "ndarray", "tensor_subclass"):
            shape = f" of shape {self.shape}" if self.shape is not None else ""
            return f"a {self.type_name}{shape}"
        if self.kind == "none":
            return "None"
        if self.kind == "sequence":
            return f"a {self.type_name} of {self.length} item{'s' if self.length != 1 else ''}"
        if self.kind in ("scalar", "str"):
            return f"a {self.type_name} ({self.value!r})"
        return f"a {self.type_name}"


def decode_value(desc: Any, blobs: list[bytes], *, max_elements: int) -> Returned:
    """Rebuild a Returned from the child's description, rejecting anything malformed."""
    try:
        kind = desc["kind"]
        type_name = str(desc["type"])
        if kind in ("tensor", "ndarray"):
            shape = tuple(int(n) for n in desc["shape"])
            array = None
            if desc.get("data"):
                blob = blobs[int(desc["blob"])]
                announced, _ = wire.array_header(blob)
                if announced != shape:
                    raise ProcessDied(f"reply announced shape {shape} but carried {announced}")
                array = wire.decode_array(blob, max_elements=max_elements)
            return Returned(kind, type_name, dtype=str(desc["dtype"]), shape=shape, array=array)
        if kind == "sequence":
            items = tuple(decode_value(item, blobs, max_elements=max_elements) for item in desc["items"])
            return Returned(kind, type_name, items=items, length=int(desc["length"]))
        if kind in ("scalar", "str"):
            value = desc["value"]
            if not isinstance(value, (bool, int, float, str)):
                raise ProcessDied("malformed scalar in reply")
            return Returned(kind, type_name, value=value)
        if kind in ("none", "object", "tensor_subclass"):
            return Returned(kind, type_name, value=str(desc.get("repr", ""))[:300])
    except (KeyError, TypeError, ValueError, IndexError, wire.WireError) as exc:
        raise ProcessDied(f"malformed value in reply: {exc}") from None
    raise ProcessDied(f"unknown value kind {kind!r} in reply")
