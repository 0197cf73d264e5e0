"""Turn the student's Python values into plain data (JSON + `.npy` blobs) and grader arguments back into tensors."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

try:  # inside the grader package (the student kit, grader/kit)
    from . import wire
except ImportError:  # the student's process, which runs this folder's modules by their bare names
    import wire  # type: ignore[no-redef]

# nn.Parameter is what a module hands out for its weights; every other tensor subclass is reported by name
# and never converted, so a subclass that lies in __eq__ or __torch_function__ gains nothing.
PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
MAX_ITEMS = 16
MAX_DEPTH = 3
MAX_REPR = 300


def type_name(value: Any) -> str:
    cls = type(value)
    module = getattr(cls, "__module__", "") or ""
    qualname = getattr(cls, "__qualname__", cls.__name__)
    return qualname if module in ("builtins", "") else f"{module}.{qualname}"


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException as exc:  # a hostile __repr__ must not break the reply
        text = f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= MAX_REPR else text[:MAX_REPR] + "..."


def _tensor_array(tensor: torch.Tensor) -> np.ndarray:
    data = torch.Tensor.detach(tensor).cpu()
    if data.dtype in (torch.bfloat16, torch.float16):
        data = data.to(torch.float32)
    return data.contiguous().numpy()


def encode(value: Any, blobs: list[bytes], depth: int = 0, *, max_elements: int = 1 << 24) -> dict[str, Any]:
    """Describe ``value`` as JSON, appending array payloads to ``blobs``.

    Arrays with more than ``max_elements`` entries are described (type, dtype, shape) but not sent: the grader
    would refuse to read them, and their shape alone says what is wrong.
    """
    name = type_name(value)
    if type(value) in PLAIN_TENSOR_TYPES:
        desc: dict[str, Any] = {"kind": "tensor", "type": name, "dtype": str(value.dtype).replace("torch.", ""),
                                "shape": list(value.shape), "device": str(value.device)}
        if value.dtype.is_complex or value.layout != torch.strided or value.numel() > max_elements:
            desc["data"] = False
            return desc
        desc["blob"] = len(blobs)
        desc["data"] = True
        blobs.append(wire.encode_array(_tensor_array(value)))
        return desc
    if isinstance(value, torch.Tensor):
        return {"kind": "tensor_subclass", "type": name, "repr": ""}
    if type(value) is np.ndarray and not value.dtype.hasobject:
        if value.size > max_elements:
            return {"kind": "ndarray", "type": name, "dtype": str(value.dtype), "shape": list(value.shape),
                    "data": False}
        blobs.append(wire.encode_array(value))
        return {"kind": "ndarray", "type": name, "dtype": str(value.dtype), "shape": list(value.shape),
                "blob": len(blobs) - 1, "data": True}
    if value is None:
        return {"kind": "none", "type": "NoneType"}
    if type(value) in (bool, int, float):
        number = value if type(value) is not int or abs(value) < 2**53 else float(value)
        return {"kind": "scalar", "type": name, "value": number}
    if type(value) is str:
        return {"kind": "str", "type": "str", "value": value[:MAX_REPR]}
    if type(value) in (tuple, list) and depth < MAX_DEPTH:
        items = [encode(item, blobs, depth + 1, max_elements=max_elements) for item in value[:MAX_ITEMS]]
        return {"kind": "sequence", "type": name, "length": len(value), "items": items}
    return {"kind": "object", "type": name, "repr": _safe_repr(value)}


TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "int32": torch.int32,
                "bool": torch.bool}


def decode(spec: dict[str, Any], blobs: list[bytes], refs: dict[int, Any], device: str,
           namespace: dict[str, Any]) -> Any:
    """Build an argument for student code from the grader's description of it."""
    kind = spec["kind"]
    if kind == "tensor":
        array = wire.decode_array(blobs[spec["blob"]])
        return torch.from_numpy(array.copy()).to(device=device, dtype=TORCH_DTYPES[spec["dtype"]])
    if kind == "ndarray":
        return wire.decode_array(blobs[spec["blob"]]).copy()
    if kind == "value":
        return spec["value"]
    if kind == "ref":
        return refs[spec["id"]]
    if kind == "name":
        return namespace[spec["name"]]
    if kind == "sequence":
        items = [decode(item, blobs, refs, device, namespace) for item in spec["items"]]
        return tuple(items) if spec.get("tuple") else items
    raise ValueError(f"unknown argument kind {kind!r}")
