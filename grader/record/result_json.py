"""SubmissionResult to JSON and back, so a stored result can be reported again without regrading.

Both directions are driven by ``dataclasses.fields`` and the fields' type hints, not by a list of names: a field added
to a result dataclass later round-trips without touching this module. Tuples (``tuple[X, ...]`` and fixed ones such as
the ``(name, value)`` pairs of ``environment``) come back as tuples, so a reloaded result equals the original.
Reading tolerates JSON written before a field with a default existed (the default is used) and ignores keys of fields
that no longer exist; anything else that does not fit raises ``ResultFormatError``.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from functools import cache
from typing import Any, TypeVar

from grader.results import SubmissionResult

T = TypeVar("T")


class ResultFormatError(ValueError):
    """Stored JSON does not describe a result of the current shape."""


def to_data(value: Any) -> Any:
    """Plain JSON data for a result dataclass (or anything inside one)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_data(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_data(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} as JSON")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _from_dataclass(cls: type[T], data: Any, where: str) -> T:
    if not isinstance(data, dict):
        raise ResultFormatError(f"{where}: expected an object for {cls.__name__}, got {type(data).__name__}")
    hints = _hints(cls)
    values = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name in data:
            values[field.name] = from_data(hints[field.name], data[field.name], f"{where}.{field.name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ResultFormatError(f"{where}: {cls.__name__} needs {field.name!r}, which is not stored")
    return cls(**values)


def from_data(hint: Any, data: Any, where: str = "result") -> Any:
    """Rebuild a value of type ``hint`` from the plain data ``to_data`` made."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _from_dataclass(hint, data, where)
    if origin is tuple or origin is list:
        if not isinstance(data, list):
            raise ResultFormatError(f"{where}: expected a list, got {type(data).__name__}")
        if origin is list or (len(args) == 2 and args[1] is Ellipsis):
            return (tuple if origin is tuple else list)(
                from_data(args[0] if args else Any, item, f"{where}[{i}]") for i, item in enumerate(data))
        if len(args) != len(data):
            raise ResultFormatError(f"{where}: expected {len(args)} items, got {len(data)}")
        return tuple(from_data(a, item, f"{where}[{i}]") for i, (a, item) in enumerate(zip(args, data)))
    if origin is dict:
        if not isinstance(data, dict):
            raise ResultFormatError(f"{where}: expected an object, got {type(data).__name__}")
        return {key: from_data(args[1] if args else Any, item, f"{where}.{key}") for key, item in data.items()}
    if origin is typing.Union or origin is types.UnionType:
        if data is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return from_data(option, data, where)
            except ResultFormatError:
                continue
        raise ResultFormatError(f"{where}: {data!r} fits none of {hint}")
    if hint is Any:
        return data
    if hint is float and isinstance(data, int | float) and not isinstance(data, bool):
        return float(data)
    if hint is int and isinstance(data, int) and not isinstance(data, bool):
        return data
    if hint in (str, bool) and isinstance(data, hint):
        return data
    if hint in (str, int, float, bool):
        raise ResultFormatError(f"{where}: expected {hint.__name__}, got {type(data).__name__}")
    raise TypeError(f"{where}: cannot read a {hint} from JSON")


def result_to_json(result: SubmissionResult) -> str:
    return json.dumps(to_data(result), ensure_ascii=False, separators=(",", ":"))


def result_from_json(text: str) -> SubmissionResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultFormatError(f"not JSON: {exc}") from exc
    return _from_dataclass(SubmissionResult, data, "result")
