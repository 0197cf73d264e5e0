"""Times: reading them as exports and instructors write them, late rules, and saying both in words.

Two ways in, one parser (``parse_time``):

- An instructor's deadline (checks.py, ``--deadline``, extensions.csv): ISO 8601 with its offset
  (``2026-12-01T23:59:00+01:00``, ``...Z``), or a date and time followed by a zone name (``2026-12-01 23:59
  Europe/Lisbon``). A time without a zone is refused unless the caller supplies one; a mistake is a
  ``ConfigurationError`` saying what to write.
- A submission time as an export writes it (``parse_submission_time``): nbgrader's ``timestamp.txt`` holds
  ``2024-03-01 12:00:00.123456 UTC`` (a zone name, an IANA one such as ``America/Los_Angeles``, or a numeric offset
  such as ``-0800``); Gradescope's ``submission_metadata.yml`` holds ``2024-03-01 12:00:00.123456789 -08:00`` (YAML
  may already have read it as a datetime) and its ``submission_metadata.json`` ISO 8601. A time without a zone is
  taken as UTC, as both tools write UTC by default; one that cannot be read is None (the file's own time is used).

The late rule (``LatePolicy``), precisely: a submission is late when its time is after its student's deadline by more
than the policy's grace. Lateness is counted in started days from the deadline itself: a minute late is one day, 24
hours and a minute two. The penalty is ``per_day`` times those days, as a fraction of the score after manual points,
and never more than all of it; a submission more than ``zero_after_days`` days late (strictly) scores 0. Times are
compared as instants, stored in UTC, and shown in UTC with the deadline's own offset beside it. How a run picks its
deadline and applies the rule to a result is the adjust stage's (grader/adjust/late.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.errors import ConfigurationError
from grader.points import shown
from grader.results import LatePenalty

DAY_S = 86400
DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
EXAMPLE = "2026-12-01T23:59:00+01:00"
_UTC_NAMES = ("UTC", "Z", "GMT")


def _zone(name: str) -> timezone | ZoneInfo:
    """A zone named as people write it: UTC (or Z, GMT) in any case, or an IANA name such as Europe/Lisbon."""
    if name.upper() in _UTC_NAMES:
        return UTC
    return ZoneInfo(name)


def parse_time(text: str, *, what: str, default_zone: timezone | ZoneInfo | None = None,
               end_of_day: bool = False) -> datetime:
    """A time as an instructor writes it: ISO 8601 with its offset (``2026-12-01T23:59:00+01:00``, ``...Z``), or a
    date and time followed by a zone name (``2026-12-01 23:59 Europe/Lisbon``). Without a zone, ``default_zone``
    (refused when there is none); a date alone is the end of that day when ``end_of_day``."""
    value = text.strip()
    zone = None
    parts = value.split()
    if len(parts) >= 2 and DATE_ONLY.match(parts[0]) and parts[-1][0].isalpha():  # a date ... and a zone name
        try:
            zone = _zone(parts[-1])
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(f"{what} {text!r}: unknown time zone {parts[-1]!r} (write an offset such as "
                                     f"{EXAMPLE}, or a zone name such as Europe/Lisbon)") from None
        value = " ".join(parts[:-1])
    try:
        # Python 3.11's reader takes what the exports write too: a space before the offset (-0800, -08:00), Z,
        # and nine digits of fractions (Gradescope's nanoseconds; the last three are dropped).
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ConfigurationError(f"{what} {text!r} is not a date and time (write it as {EXAMPLE})") from None
    if end_of_day and DATE_ONLY.fullmatch(value):
        when = when.replace(hour=23, minute=59, second=59)
    if when.tzinfo is None:
        zone = zone or default_zone
        if zone is None:
            raise ConfigurationError(f"{what} {text!r} has no time zone: write its offset ({EXAMPLE}, or Z for UTC)")
        when = when.replace(tzinfo=zone)
    elif zone is not None:
        raise ConfigurationError(f"{what} {text!r} gives both an offset and a zone name")
    return when


def parse_submission_time(value: object) -> datetime | None:
    """The time ``value`` gives (an export's string, see the module's docstring, or a datetime), or None if it gives
    none. ``parse_time`` with UTC for a time without a zone, and None where it would refuse."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return parse_time(value, what="the submission time", default_zone=UTC)
    except ConfigurationError:
        return None


def utc_iso(when: datetime) -> str:
    """An instant as ISO 8601 in UTC, to the second (a time without a zone is taken as UTC, as exports write)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds")


def offset_of(when: datetime) -> str:
    """'+01:00' for a time set at UTC+1 (the offset at that instant, for a zone name)."""
    offset = when.utcoffset() or timedelta(0)
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


@dataclass(frozen=True)
class LatePolicy:
    """How much a late submission loses (see the module's docstring for the exact rule)."""

    per_day: float = 0.0  # fraction of the score per started day late: 0.10 for 10%
    zero_after_days: float | None = None  # more than this many days late: the score is 0
    grace_minutes: float = 0.0  # this late still counts as on time (slow uploads, clocks that differ)

    def __post_init__(self) -> None:
        if not 0 <= self.per_day <= 1:
            raise ConfigurationError(f"LatePolicy(per_day={self.per_day!r}): a fraction of the score from 0 to 1 "
                                     "(0.10 for 10% a day)")
        if self.zero_after_days is not None and self.zero_after_days < 0:
            raise ConfigurationError(f"LatePolicy(zero_after_days={self.zero_after_days!r}) must not be negative")
        if self.grace_minutes < 0:
            raise ConfigurationError(f"LatePolicy(grace_minutes={self.grace_minutes!r}) must not be negative")

    def describe(self) -> str:
        """'10% of the score per started day late; 0 when more than 3 days late'."""
        parts = []
        if self.per_day:
            parts.append(f"{100 * self.per_day:g}% of the score per started day late")
        if self.zero_after_days is not None:
            parts.append(f"0 when more than {self.zero_after_days:g} day{'s' if self.zero_after_days != 1 else ''} "
                         "late")
        if not parts:
            parts.append("no points deducted (lateness is recorded only)")
        if self.grace_minutes:
            parts.append(f"up to {self.grace_minutes:g} minutes late counts as on time")
        return "; ".join(parts)

    def fraction(self, late_s: float) -> float:
        """The fraction of the score taken from a submission ``late_s`` seconds after its deadline."""
        if late_s <= self.grace_minutes * 60:
            return 0.0
        if self.zero_after_days is not None and late_s > self.zero_after_days * DAY_S:
            return 1.0
        return min(1.0, round(self.per_day * math.ceil(late_s / DAY_S), 6))


def describe_duration(seconds: float) -> str:
    """'1 day 12 hours', '3 days 1 second', '40 seconds': the two largest units that are not 0."""
    left = round(seconds)
    parts = []
    for unit, size in (("day", DAY_S), ("hour", 3600), ("minute", 60), ("second", 1)):
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return " ".join(parts[:2]) or "0 seconds"


def describe_time(utc: str, offset: str = "") -> str:
    """'2026-03-01 11:00 UTC = 12:00 UTC+01:00': UTC, and as the deadline's time zone shows it."""
    when = datetime.fromisoformat(utc).astimezone(UTC)
    clock = "%H:%M:%S" if when.second else "%H:%M"
    text = f"{when.strftime('%Y-%m-%d ' + clock)} UTC"
    if offset and offset not in ("+00:00", "-00:00"):
        local = when.astimezone(datetime.fromisoformat(f"2000-01-01T00:00{offset}").tzinfo)
        same_day = local.date() == when.date()
        text += f" = {local.strftime(clock if same_day else '%Y-%m-%d ' + clock)} UTC{offset}"
    return text


def describe_late(late: LatePenalty, deducted: float, before: float) -> str:
    """The late record in one sentence, for the student: when, how late, the rule, the points deducted."""
    deadline = describe_time(late.deadline, late.deadline_offset)
    whose = "your extended deadline" if late.extended else "the deadline"
    if not late.is_late:
        return f"Submitted {describe_time(late.submitted_at)}, before {whose} ({deadline}): on time."
    text = (f"Submitted {describe_time(late.submitted_at)}, {describe_duration(late.late_s)} after {whose} "
            f"({deadline}). Late rule: {late.rule}.")
    points = f"-{shown(deducted)} point{'s' if deducted != 1 else ''}"
    if late.fraction >= 1:
        return f"{text} The score is 0 ({points})."
    if late.fraction > 0:
        days = late.started_days
        return (f"{text} {days} started day{'s' if days != 1 else ''} late: {100 * late.fraction:g}% of "
                f"{shown(before)} points, {points}.")
    return f"{text} No points deducted."
