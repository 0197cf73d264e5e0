"""What a save's JSON body must hold, read strictly: the body must be a JSON object, and each field the type the
app's own pages send. Anything else (an array for a body, a string or a list for a number, 1e400, NaN, an integer
too large for SQLite) is ``Malformed``, which the app answers with 400 and the message, never with a traceback."""

from __future__ import annotations

import json
import math
from typing import Any

LARGEST = (1 << 63) - 1  # SQLite's INTEGER
LARGEST_POINTS = 1e9  # no question, item or check is worth more: a larger number is not one a marker typed
MOST_ITEMS = 1000  # rubric items applied in one mark


class Malformed(ValueError):
    """A request body that is not what the app's pages send: the message names the field."""


def _no_constant(name: str) -> float:
    raise Malformed(f"{name} is not a number JSON allows")


def json_object(data: bytes) -> dict[str, Any]:
    """The body as a JSON object (NaN and Infinity refused, as JSON itself does)."""
    try:
        body = json.loads(data, parse_constant=_no_constant)
    except Malformed:
        raise
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than the parser goes
        raise Malformed("the body is not JSON") from exc
    if not isinstance(body, dict):
        raise Malformed("the body must be a JSON object")
    return body


def text(body: dict[str, Any], key: str, default: str = "") -> str:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise Malformed(f"{key} must be text")
    return value


def whole(body: dict[str, Any], key: str, default: int = 0) -> int:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not -LARGEST <= value <= LARGEST:
        raise Malformed(f"{key} must be a whole number")
    return value


def optional_whole(body: dict[str, Any], key: str) -> int | None:
    return None if body.get(key) is None else whole(body, key)


def number(body: dict[str, Any], key: str, default: float = 0.0) -> float:
    """A finite number (``default`` for a missing one or null: the page sends null for an empty field)."""
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed(f"{key} must be a number")
    try:
        value = float(value)
    except OverflowError as exc:
        raise Malformed(f"{key} must be a number of points") from exc
    if not math.isfinite(value) or abs(value) > LARGEST_POINTS:
        raise Malformed(f"{key} must be a number of points")
    return value


def optional_number(body: dict[str, Any], key: str) -> float | None:
    """A number, or None for a missing one, null or "" (an emptied field)."""
    return None if body.get(key) in (None, "") else number(body, key)


def wholes(body: dict[str, Any], key: str) -> list[int]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MOST_ITEMS:
        raise Malformed(f"{key} must be a list of whole numbers")
    if not all(isinstance(v, int) and not isinstance(v, bool) and -LARGEST <= v <= LARGEST for v in value):
        raise Malformed(f"{key} must be a list of whole numbers")
    return value


def flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise Malformed(f"{key} must be true or false")
    return value
