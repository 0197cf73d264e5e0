"""SubmissionResult to JSON and back, so a stored result can be reported again without regrading.

Both directions are driven by ``dataclasses.fields`` and the fields' type hints, not by a list of names: a field added
to a result dataclass later round-trips without touching this module. Tuples (``tuple[X, ...]`` and fixed ones such as
the ``(name, value)`` pairs of ``environment``) come back as tuples, so a reloaded result equals the original.
Reading tolerates JSON written before a field with a default existed (the default is used) and ignores keys of fields
that no longer exist; anything else that does not fit raises ``ResultFormatError``. A status is written as its plain
string and read back as its enum member (grader.results), so an unknown one does not fit.

One older shape is read by name: a result written before ``grader_trace`` existed kept the grader's own traceback
among its notes, shown to no student by a string match; it is moved to ``grader_trace`` as it is read.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import types
import typing
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from grader.results import INTERNAL, SubmissionResult


class ResultFormatError(ValueError):
    """Stored JSON does not describe a result of the current shape."""


_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_data(value: Any) -> Any:
    """Plain JSON data for a result dataclass (or anything inside one)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    names = _field_names(kind)
    if names is not None:
        return {name: to_data(getattr(value, name)) for name in names}
    if isinstance(value, tuple | list):
        # A heatmap's rows are hundreds of floats: plain items are taken as they are, without a call each.
        return [item if type(item) in _PLAIN else to_data(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_data(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot store a {kind.__name__} as JSON")


@cache
def _field_names(kind: type) -> tuple[str, ...] | None:
    return tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None


class _Misfit(Exception):
    """Data that does not fit its type, and where (filled in on the way out, so that nothing is spent on paths of
    data that fits)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.steps: list[str] = []  # innermost first


Decoder = Callable[[Any], Any]


def _step(exc: _Misfit, step: str) -> _Misfit:
    exc.steps.append(step)
    return exc


def _identity(data: Any) -> Any:
    return data


@cache
def _decoder(hint: Any) -> Decoder:
    """A function that rebuilds a value of type ``hint`` from plain data, made once per type: the type hints are
    read here, not for each value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if origin is tuple or origin is list:
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            return _sequence_decoder(_decoder(args[0] if args else Any), tuple if origin is tuple else list)
        return _fixed_tuple_decoder(tuple(_decoder(a) for a in args))
    if origin is dict:
        return _dict_decoder(_decoder(args[1] if args else Any))
    if origin is typing.Union or origin is types.UnionType:
        return _union_decoder(hint, tuple(_decoder(a) for a in args if a is not type(None)), type(None) in args)
    if hint is Any:
        return _identity
    if hint in (str, int, float, bool):
        return _scalar_decoder(hint)
    if isinstance(hint, type) and issubclass(hint, enum.StrEnum):
        return _enum_decoder(hint)

    def unreadable(data: Any) -> Any:
        raise TypeError(f"cannot read a {hint} from JSON")
    return unreadable


def _dataclass_decoder(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls)
    fields = [(f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
              for f in dataclasses.fields(cls)]
    decoders: dict[str, Decoder] = {}

    def decode(data: Any) -> Any:
        if not isinstance(data, dict):
            raise _Misfit(f"expected an object for {cls.__name__}, got {type(data).__name__}")
        values = {}
        for name, required in fields:
            if name in data:
                # Each field's decoder made on first use: a type no JSON holds costs nothing until then.
                decoder = decoders.get(name) or decoders.setdefault(name, _decoder(hints[name]))
                try:
                    values[name] = decoder(data[name])
                except _Misfit as exc:
                    raise _step(exc, f".{name}") from None
            elif required:
                raise _Misfit(f"{cls.__name__} needs {name!r}, which is not stored")
        return cls(**values)
    return decode


def _sequence_decoder(item: Decoder, make: type) -> Decoder:
    def decode(data: Any) -> Any:
        if not isinstance(data, list):
            raise _Misfit(f"expected a list, got {type(data).__name__}")
        if item is _identity:
            return make(data)
        try:
            return make([item(value) for value in data])
        except _Misfit:  # read again, item by item, to say which one
            return make(_decoded_items(zip(itertools.repeat(item), data)))
    return decode


def _fixed_tuple_decoder(items: tuple[Decoder, ...]) -> Decoder:
    def decode(data: Any) -> Any:
        if not isinstance(data, list):
            raise _Misfit(f"expected a list, got {type(data).__name__}")
        if len(items) != len(data):
            raise _Misfit(f"expected {len(items)} items, got {len(data)}")
        return tuple(_decoded_items(zip(items, data)))
    return decode


def _decoded_items(pairs: Iterable[tuple[Decoder, Any]]) -> list[Any]:
    out = []
    for index, (item, value) in enumerate(pairs):
        try:
            out.append(item(value))
        except _Misfit as exc:
            raise _step(exc, f"[{index}]") from None
    return out


def _dict_decoder(item: Decoder) -> Decoder:
    def decode(data: Any) -> Any:
        if not isinstance(data, dict):
            raise _Misfit(f"expected an object, got {type(data).__name__}")
        out = {}
        for key, value in data.items():
            try:
                out[key] = item(value)
            except _Misfit as exc:
                raise _step(exc, f".{key}") from None
        return out
    return decode


def _union_decoder(hint: Any, options: tuple[Decoder, ...], optional: bool) -> Decoder:
    def decode(data: Any) -> Any:
        if data is None and optional:
            return None
        for option in options:
            try:
                return option(data)
            except _Misfit:
                continue
        raise _Misfit(f"{data!r} fits none of {hint}")
    return decode


def _scalar_decoder(hint: type) -> Decoder:
    accepted = int | float if hint is float else hint  # JSON writes an integral float as an integer

    def decode(data: Any) -> Any:
        if type(data) is hint:
            return data
        if isinstance(data, accepted) and (hint is bool or not isinstance(data, bool)):
            return float(data) if hint is float else data
        raise _Misfit(f"expected {hint.__name__}, got {type(data).__name__}")
    return decode


def _enum_decoder(kind: type[enum.StrEnum]) -> Decoder:
    members = {member.value: member for member in kind}

    def decode(data: Any) -> Any:
        try:
            return members[data]
        except (KeyError, TypeError):
            raise _Misfit(f"expected one of {', '.join(members)}, got {data!r}") from None
    return decode


def from_data(hint: Any, data: Any, where: str = "result") -> Any:
    """Rebuild a value of type ``hint`` from the plain data ``to_data`` made."""
    try:
        return _decoder(hint)(data)
    except _Misfit as exc:
        raise ResultFormatError(f"{where}{''.join(reversed(exc.steps))}: {exc.message}") from None


def result_to_json(result: SubmissionResult) -> str:
    return json.dumps(to_data(result), ensure_ascii=False, separators=(",", ":"))


def result_from_json(text: str) -> SubmissionResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultFormatError(f"not JSON: {exc}") from exc
    if isinstance(data, dict) and "grader_trace" not in data:
        data = _trace_out_of_notes(data)
    return from_data(SubmissionResult, data)


_TRACE_MARK = "Traceback (most recent call last)"


def _trace_out_of_notes(data: dict[str, Any]) -> dict[str, Any]:
    """A result written before ``grader_trace`` existed, its traceback (a note, when the grader failed on the
    submission) moved there."""
    notes = data.get("notes")
    if data.get("status") != INTERNAL or not isinstance(notes, list):
        return data
    traces = [n for n in notes if isinstance(n, str) and _TRACE_MARK in n]
    if not traces:
        return data
    return {**data, "notes": [n for n in notes if n not in traces], "grader_trace": "\n".join(traces)}
