"""The student kit's check bundle on disk: ``kit.json`` and content-addressed ``.npy`` arrays, never pickle.

Values (the arguments a public check passed to a reference, and what the reference and each known-wrong variant
returned) are written as a JSON tree whose arrays are files named by their digest, so the same solutions give the
same bytes, and an array used twice is stored once.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

KIT_FOLDER = "grader-kit"  # in the kit, beside the templates
KIT_FILE = "kit.json"
ARRAYS = "arrays"
FORMAT = 3  # 2: the references' answers to the solution's later questions (provided_calls); 3: identity, call_seconds
# Who the kit's results are for: a public check's random case is everyone's (grader/check/seeds.py), so the kit,
# `grader check` and the grader draw the same inputs for it whoever the student is.
KIT_STUDENT = "kit"
# Arguments as close as this to the recorded ones are the same inputs: the check computed them from the same seed,
# and only another CPU's last-bit rounding of a transcendental function may tell them apart.
SAME_INPUT_RTOL = 1e-9
SAME_INPUT_ATOL = 1e-12


@dataclass(frozen=True)
class AsTensor:
    """An array that was a torch tensor where it was recorded, and is one again where it is read."""

    array: np.ndarray


class Unrecorded(Exception):
    """A check asked a reference for something the bundle does not hold (other inputs than when it was built)."""


class ArrayStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._cache: dict[str, np.ndarray] = {}

    def put(self, array: np.ndarray) -> str:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        data = buffer.getvalue()
        name = hashlib.sha256(data).hexdigest()[:20] + ".npy"
        path = self.folder / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return name

    def get(self, name: str) -> np.ndarray:
        if name not in self._cache:
            if "/" in name or "\\" in name or not name.endswith(".npy"):
                raise ValueError(f"not an array of the bundle: {name!r}")
            self._cache[name] = np.load(self.folder / name, allow_pickle=False)
        return self._cache[name]


def _float(value: float) -> Any:
    return value if math.isfinite(value) else {"float": repr(value)}


def encode(value: Any, store: ArrayStore) -> Any:
    """``value`` as JSON: arrays (and NumPy scalars) in the store, tuples, lists and dicts kept apart."""
    if isinstance(value, np.generic):  # before float: np.float64 is a float
        return {"scalar": store.put(np.asarray(value))}
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, np.ndarray):
        return {"array": store.put(value)}
    if isinstance(value, AsTensor):
        return {"tensor": store.put(value.array)}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, store) for v in value]}
    if isinstance(value, list):
        return {"list": [encode(v, store) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v, store) for k, v in value.items()}}
    raise TypeError(f"a reference took or returned a {type(value).__name__}, which a kit cannot hold")


def decode(data: Any, store: ArrayStore) -> Any:
    if not isinstance(data, dict):
        return data
    if "float" in data:
        return float(data["float"])
    if "scalar" in data:
        return store.get(data["scalar"])[()]
    if "array" in data:
        return store.get(data["array"]).copy()  # the check may change what it is given
    if "tensor" in data:
        return AsTensor(store.get(data["tensor"]).copy())
    if "tuple" in data:
        return tuple(decode(v, store) for v in data["tuple"])
    if "list" in data:
        return [decode(v, store) for v in data["list"]]
    return {k: decode(v, store) for k, v in data["dict"].items()}


def same_input(recorded: Any, given: Any, *, rtol: float = SAME_INPUT_RTOL, atol: float = SAME_INPUT_ATOL) -> bool:
    """Whether ``given`` is the input that was recorded (arrays within ``rtol`` and ``atol`` of each other)."""
    if isinstance(recorded, np.ndarray) or isinstance(given, np.ndarray):
        a, b = np.asarray(recorded), np.asarray(given)
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(recorded, (tuple, list)):
        return type(recorded) is type(given) and len(recorded) == len(given) and \
            all(same_input(r, g, rtol=rtol, atol=atol) for r, g in zip(recorded, given))
    if isinstance(recorded, dict):
        return isinstance(given, dict) and recorded.keys() == given.keys() and \
            all(same_input(recorded[k], given[k], rtol=rtol, atol=atol) for k in recorded)
    if isinstance(recorded, float) and isinstance(given, float):
        return math.isclose(recorded, given, rel_tol=rtol, abs_tol=atol) or \
            (math.isnan(recorded) and math.isnan(given))
    return bool(recorded == given)


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
