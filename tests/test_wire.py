"""The wire format: only plain arrays and JSON cross, with sizes checked before anything is read."""

from __future__ import annotations

import io
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.execute.child import wire


def reader(data: bytes):
    stream = io.BytesIO(data)

    def read_exact(n: int) -> bytes:
        chunk = stream.read(n)
        if len(chunk) != n:
            raise EOFError
        return chunk

    return read_exact


def test_message_round_trip() -> None:
    blob = wire.encode_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    header, blobs = wire.read_message(reader(wire.encode_message({"op": "x", "n": [1, 2]}, [blob])))
    assert header == {"op": "x", "n": [1, 2]}
    np.testing.assert_array_equal(wire.decode_array(blobs[0]), np.arange(6).reshape(2, 3))


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), max_size=6), apart=st.integers(1, 30),
       header=st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))
def test_a_message_written_in_parts_is_the_message_and_large_blobs_are_not_copied(
        sizes: list[int], apart: int, header: dict[str, int]) -> None:
    blobs = [bytes(range(size)) for size in sizes]
    parts = wire.message_parts(header, blobs, apart=apart)
    assert b"".join(parts) == wire.encode_message(header, blobs)
    # Each blob of ``apart`` bytes or more is a part of its own, the caller's object itself; the rest are joined.
    large = [blob for blob in blobs if len(blob) >= apart]
    assert [part for part in parts if any(part is blob for blob in large)] == large
    assert len(parts) <= 2 * len(large) + 1
    read, got = wire.read_message(reader(b"".join(parts)))
    assert read == header and got == blobs


def test_object_arrays_and_pickles_are_refused() -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(wire.WireError, match="not a plain numeric type"):
        wire.decode_array(buffer.getvalue())
    with pytest.raises(wire.WireError, match=r"not a \.npy array"):
        wire.decode_array(pickle.dumps(np.zeros(3)))


def test_sizes_are_checked_before_reading() -> None:
    huge_header = struct.pack("!II", 1 << 30, 0)
    with pytest.raises(wire.WireError, match="exceeds the limit"):
        wire.read_message(reader(huge_header))
    huge_blob = wire.HEAD.pack(2, 1) + b"{}" + wire.BLOB.pack(1 << 40)
    with pytest.raises(wire.WireError, match="larger than the limit"):
        wire.read_message(reader(huge_blob))
    shape_only = wire.encode_array(np.zeros((4096, 4096), dtype=np.float32))
    with pytest.raises(wire.WireError, match="more than 1000 elements"):
        wire.decode_array(shape_only, max_elements=1000)


def test_non_json_header_is_an_error() -> None:
    with pytest.raises(wire.WireError, match="not JSON"):
        wire.read_message(reader(wire.HEAD.pack(3, 0) + b"\x80ab"))


@pytest.mark.parametrize("array", [
    np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.arange(5, dtype=np.int64), np.ones((2, 3), dtype=bool),
    np.zeros((0, 4)), np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.array([1 + 2j, 3j]),
], ids=["float32", "int64", "bool", "empty", "fortran", "complex"])
@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_arrays_decode_exactly_whichever_header_reader_reads_them(array: np.ndarray,
                                                                    version: tuple[int, int]) -> None:
    """numpy's own header (read by a regular expression) and any other valid header (read by numpy) alike."""
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    decoded = wire.decode_array(buffer.getvalue())
    assert decoded.dtype == array.dtype and decoded.shape == array.shape and decoded.flags.writeable
    np.testing.assert_array_equal(decoded, array)


def test_an_array_whose_bytes_do_not_match_its_header_is_refused() -> None:
    blob = wire.encode_array(np.arange(10, dtype=np.float64))
    for broken in (blob[:-8], blob + b"\0" * 8):
        with pytest.raises(wire.WireError, match="does not match"):
            wire.decode_array(broken)


@pytest.mark.parametrize("array", [
    np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.arange(5, dtype=np.int64), np.ones((2, 3), dtype=bool),
    np.zeros((0, 4)), np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.array([1 + 2j, 3j]),
    np.arange(6, dtype=">i4").reshape(3, 2), np.arange(3, dtype=np.uint8), np.zeros((1, 1, 1, 100_000), np.float16),
], ids=["float32", "int64", "bool", "empty", "fortran", "complex", "big-endian", "uint8", "wide"])
def test_arrays_the_wire_writes_are_valid_npy_files_read_by_numpy_and_the_fast_reader(array: np.ndarray) -> None:
    blob = wire.encode_array(array)
    assert (10 + int.from_bytes(blob[8:10], "little")) % 64 == 0  # the data aligned as numpy aligns it
    from_numpy = np.lib.format.read_array(io.BytesIO(blob), allow_pickle=False)
    shape, fortran, dtype, _ = wire._read_header(blob)
    assert wire._CANONICAL.fullmatch(blob[10:10 + int.from_bytes(blob[8:10], "little")]) is not None
    for decoded in (from_numpy, wire.decode_array(blob)):
        assert decoded.dtype == array.dtype and decoded.shape == np.shape(array)
        np.testing.assert_array_equal(decoded, array)
    assert (shape, fortran, dtype) == (np.shape(array), False, array.dtype)


def test_arrays_that_are_not_plain_numbers_are_written_by_numpy_and_refused_by_the_reader() -> None:
    blob = wire.encode_array(np.array([b"ab", b"c"]))
    assert np.lib.format.read_array(io.BytesIO(blob)).tolist() == [b"ab", b"c"]
    with pytest.raises(wire.WireError, match="not a plain numeric type"):
        wire.decode_array(blob)
