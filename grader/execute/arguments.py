"""Values crossing the trust boundary, on the grader's side: arguments we send and what came back."""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.errors import ProcessDied
from grader.execute.child import wire

TENSOR_TYPES = ("torch.Tensor", "torch.nn.parameter.Parameter")
ARG_DTYPES = ("float32", "float64", "int64", "int32", "bool")
SENT_AS_IS_BYTES = 1 << 20  # smaller arrays are encoded and digested each time: it costs less than keeping them

# Arrays sent to every student as they are (a check's kept draws, grader/check/draw_memo.py), encoded once, by id:
# id -> (the array, its blob). The array is a read-only view of its blob's data, so the two are one copy of the
# values, and the blob lives as long as the array; both entries go when the array does.
_SENT_AS_IS: dict[int, tuple[weakref.ref, bytes]] = {}
_DIGESTS: dict[int, tuple[bytes, bytes]] = {}  # id of such a blob -> (the blob, its digest)


def sent_as_is(array: np.ndarray) -> np.ndarray:
    """``array`` read-only, for a large input every student is sent: from ``SENT_AS_IS_BYTES`` up, a view of its
    own `.npy` encoding, which each call passing it then sends without encoding, copying or digesting it again (a
    million keys: about 0.15 s of the grader's time per call)."""
    if array.nbytes < SENT_AS_IS_BYTES or array.dtype.kind not in "biufc":
        array.flags.writeable = False
        return array
    blob = wire.encode_array(array)
    view = wire.view_array(blob, max_elements=array.size)
    ident, blob_ident = id(view), id(blob)

    def forget(_: object) -> None:
        _SENT_AS_IS.pop(ident, None)
        _DIGESTS.pop(blob_ident, None)

    _DIGESTS[blob_ident] = (blob, _digest(blob))
    _SENT_AS_IS[ident] = (weakref.ref(view, forget), blob)
    return view


def _sent_blob(array: object) -> bytes | None:
    kept = _SENT_AS_IS.get(id(array))
    return kept[1] if kept is not None and kept[0]() is array else None


def _digest(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=16).digest()


def blob_digest(blob: bytes) -> bytes:
    """A digest of an encoded argument's bytes, for a request's fingerprint: computed once for an array
    ``sent_as_is``, whose blob is sent each time as the same object."""
    known = _DIGESTS.get(id(blob))
    return known[1] if known is not None and known[0] is blob else _digest(blob)


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
            kept = _sent_blob(self.value)
            blobs.append(kept if kept is not None else wire.encode_array(self.value))
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
