"""Framing between the grader and the student's process: JSON headers and `.npy` blobs, never pickle.

This module is imported by the grader (as ``grader.execute.child.wire``) and by the child runtime (as ``wire``,
from its own folder), so it imports nothing but the standard library and NumPy.

A message is: ``!II`` (length of the JSON header, number of blobs), the UTF-8 JSON header, then each blob as
``!Q`` length + bytes. Readers enforce size limits from the length fields before reading the bytes they announce.

``UnitStatus`` is the one vocabulary both sides speak about the student's code: how each cell or statement ended.
"""

from __future__ import annotations

import enum
import io
import json
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

HEAD = struct.Struct("!II")
BLOB = struct.Struct("!Q")


class UnitStatus(enum.StrEnum):
    """How one notebook cell or top-level statement ended while the submission loaded. The child sends every status
    but CRASHED, which the grader gives a unit whose process died (or was killed, hung) while it ran."""

    OK = "ok"
    ERROR = "error"  # it raised
    TIMEOUT = "timeout"
    EXIT = "exit"  # it raised SystemExit (sys.exit(), exit())
    SKIPPED = "skipped"  # not run: an earlier unit exited, or the grader left it out
    CRASHED = "crashed"

    @property
    def label(self) -> str:
        """For people: the value itself, as with every status in grader.results."""
        return self.value


class WireError(Exception):
    """The other side sent something that is not a well-formed message within the limits."""


def encode_message(header: dict[str, Any], blobs: Sequence[bytes] = ()) -> bytes:
    return b"".join(message_parts(header, blobs))


def message_parts(header: dict[str, Any], blobs: Sequence[bytes] = (), *, apart: int = 1 << 20) -> list[bytes]:
    """The message's bytes in order, to be written one after another: what is smaller than ``apart`` bytes joined,
    each larger blob on its own, so that sending a million keys does not copy them into one message first."""
    body = json.dumps(header, separators=(",", ":"), allow_nan=True).encode("utf-8")
    parts, small = [], [HEAD.pack(len(body), len(blobs)), body]
    for blob in blobs:
        small.append(BLOB.pack(len(blob)))
        if len(blob) < apart:
            small.append(blob)
        else:
            parts += [b"".join(small), blob]
            small = []
    return [*parts, b"".join(small)] if small else parts


def read_message(
    read_exact: Callable[[int], bytes],
    *,
    max_header: int = 8 << 20,
    max_blobs: int = 256,
    max_total: int = 256 << 20,
    max_blob: int | None = None,
    validate: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[dict[str, Any], list[bytes]]:
    """Read one message through ``read_exact(n)``, which returns exactly n bytes or raises.

    ``validate(header)`` runs before any blob is read and raises WireError to refuse the message, so what a
    header announces (an array's shape, say) can be judged before its bytes are accepted.
    """
    header_len, n_blobs = HEAD.unpack(read_exact(HEAD.size))
    if header_len > max_header:
        raise WireError(f"message header of {header_len} bytes exceeds the limit of {max_header}")
    if n_blobs > max_blobs:
        raise WireError(f"message carries {n_blobs} arrays, more than the limit of {max_blobs}")
    try:
        header = json.loads(read_exact(header_len).decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, over-long integers, absurd nesting
        raise WireError(f"message header is not JSON: {str(exc)[:200]}") from None
    if not isinstance(header, dict):
        raise WireError("message header is not a JSON object")
    if validate is not None:
        validate(header)
    blobs: list[bytes] = []
    total = header_len
    for _ in range(n_blobs):
        (size,) = BLOB.unpack(read_exact(BLOB.size))
        total += size
        if max_blob is not None and size > max_blob:
            raise WireError(f"an array of {size} bytes is larger than the limit of {max_blob} bytes")
        if total > max_total:
            raise WireError(f"message is larger than the limit of {max_total >> 20} MiB")
        blobs.append(read_exact(size))
    return header, blobs


# The header numpy writes for a plain array, matched exactly; anything else goes through numpy's own parser.
_MAGIC_1_0 = b"\x93NUMPY\x01\x00"
_HEADER_LENGTH = struct.Struct("<H")
_ALIGN = 64  # numpy aligns an array's data to 64 bytes in the file


def encode_array(array: np.ndarray) -> bytes:
    """A `.npy` (version 1.0) blob. A plain numeric array's header is written here: numpy's writer builds it with
    repr() and a dict, several times slower, for each of the hundreds of arrays a submission's checks exchange."""
    array = np.ascontiguousarray(array)
    dtype = array.dtype
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, array, allow_pickle=False)
        return buffer.getvalue()
    shape = ", ".join(map(str, array.shape)) + ("," if array.ndim == 1 else "")
    header = f"{{'descr': '{dtype.str}', 'fortran_order': False, 'shape': ({shape}), }}"
    padding = _ALIGN - (len(_MAGIC_1_0) + _HEADER_LENGTH.size + len(header) + 1) % _ALIGN
    header += " " * padding + "\n"
    return b"".join((_MAGIC_1_0, _HEADER_LENGTH.pack(len(header)), header.encode("ascii"), array.tobytes()))
_CANONICAL = re.compile(rb"\{'descr': '([<>|=][a-z][0-9]{1,2})', 'fortran_order': (False|True), "
                        rb"'shape': \(([0-9, ]*)\), \} *\n")


def _read_header(blob: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran order, dtype, offset of the data) announced by a `.npy` blob, its data untouched.

    numpy's reader evaluates the header with ``ast.literal_eval`` (about 50 microseconds, twice per np.load); the
    header numpy writes itself is read here with one regular expression."""
    if blob[:8] == _MAGIC_1_0 and len(blob) >= 10:
        length = int.from_bytes(blob[8:10], "little")
        found = _CANONICAL.fullmatch(blob[10:10 + length])
        if found:
            shape = tuple(int(n) for n in found[3].split(b",") if n.strip())
            return shape, found[2] == b"True", np.dtype(found[1].decode("ascii")), 10 + length
    stream = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise WireError(f"unsupported .npy version {version}")
    except ValueError as exc:
        raise WireError(f"not a .npy array: {exc}") from None
    return tuple(shape), bool(fortran), dtype, stream.tell()


def array_header(blob: bytes) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype announced by a `.npy` blob, read without touching its data."""
    shape, _, dtype, _ = _read_header(blob)
    return shape, dtype


def decode_array(blob: bytes, *, max_elements: int = 1 << 26) -> np.ndarray:
    """Decode a `.npy` blob: plain numeric or boolean dtypes only, never objects or pickles."""
    return view_array(blob, max_elements=max_elements).copy()  # a writable array of its own


def view_array(blob: bytes, *, max_elements: int = 1 << 26) -> np.ndarray:
    """A `.npy` blob's array without copying it: a read-only view of the blob's data (the blob lives as long)."""
    shape, fortran, dtype, offset = _read_header(blob)
    if dtype.hasobject or dtype.kind not in "biufc":
        raise WireError(f"array dtype {dtype} is not a plain numeric type")
    count = int(np.prod(shape, dtype=np.int64))
    if count > max_elements:
        raise WireError(f"array of shape {shape} has more than {max_elements} elements")
    if len(blob) - offset != count * dtype.itemsize:
        raise WireError(f"array of shape {shape} and dtype {dtype} does not match its {len(blob) - offset} bytes")
    flat = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C")
