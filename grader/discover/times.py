"""Submission times as exports write them, read into timezone-aware datetimes.

nbgrader's ``timestamp.txt`` holds ``2024-03-01 12:00:00.123456 UTC`` (a zone name, an IANA one such as
``America/Los_Angeles``, or a numeric offset such as ``-0800``); Gradescope's ``submission_metadata.yml`` holds
``2024-03-01 12:00:00.123456789 -08:00`` (YAML may already have read it as a datetime) and its
``submission_metadata.json`` ISO 8601. A time without a zone is taken as UTC, as both tools write UTC by default.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})")
_UTC_NAMES = {"UTC", "Z", "GMT"}


def _zone(name: str) -> timezone | ZoneInfo:
    if name.upper() in _UTC_NAMES:
        return UTC
    if offset := _OFFSET.fullmatch(name):
        sign, hours, minutes = offset.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        return timezone(-delta if sign == "-" else delta)
    return ZoneInfo(name)


def parse_submission_time(value: object) -> datetime | None:
    """The time ``value`` gives (a string in one of the formats above, or a datetime), or None if it gives none."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str) and value.strip():
        parts = value.split()
        try:
            if len(parts) == 3:  # date, time, zone
                when = datetime.fromisoformat(f"{parts[0]} {parts[1]}")
                if when.tzinfo is None:
                    when = when.replace(tzinfo=_zone(parts[2]))
            else:
                when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except (ValueError, ZoneInfoNotFoundError):
            return None
    else:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
