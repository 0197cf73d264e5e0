"""Deadlines and late penalties: which deadline and late rule a run applies, and the penalty each result gets.

An assignment sets its deadline and late rule in its checks.py (``Assignment(deadline=..., late=LatePolicy(...))``);
a run may override them (``grader grade --deadline ... --late-per-day ... --late-zero-after ...``), and an
instructor grants a student more time in ``OUT/extensions.csv`` (see ``read_extensions``).

The late rule itself, and how times are read and shown, are in grader/times.py (``LatePolicy``,
``parse_time``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from grader.errors import ConfigurationError
from grader.results import LatePenalty
from grader.times import LatePolicy, offset_of, parse_time, utc_iso

__all__ = ["EXTENSION_COLUMNS", "DeadlineRule", "Extension", "LateOverride", "LatePolicy", "deadline_rule",
           "late_penalty", "read_extension"]  # LatePolicy: re-exported while grader.check imports it from here

RELATIVE = re.compile(r"\+\s*(\d+(?:\.\d+)?)\s*(?:d|days?)?", re.IGNORECASE)


@dataclass(frozen=True)
class LateOverride:
    """A run's changes to the assignment's deadline and late rule (``grader grade --deadline ...``)."""

    deadline: str | None = None  # an ISO 8601 time with its offset, or "none" for no deadline in this run
    per_day: float | None = None
    zero_after_days: float | None = None


@dataclass(frozen=True)
class DeadlineRule:
    """The deadline and late rule a run applies, and where they were set."""

    deadline: datetime | None
    policy: LatePolicy = field(default_factory=LatePolicy)
    source: str = ""  # "checks.py", "--deadline"

    def describe(self) -> str:
        if self.deadline is None:
            return "no deadline"
        return f"deadline {utc_iso(self.deadline)} ({self.source}); late rule: {self.policy.describe()}"


def deadline_rule(deadline: datetime | None, policy: LatePolicy | None, override: LateOverride | None) -> DeadlineRule:
    """The assignment's deadline and policy with a run's override applied."""
    policy = policy or LatePolicy()
    source = "checks.py"
    if override is not None:
        if override.deadline is not None:
            if override.deadline.strip().lower() == "none":
                return DeadlineRule(None, policy, "--deadline none")
            deadline, source = parse_time(override.deadline, what="--deadline"), "--deadline"
        if override.per_day is not None or override.zero_after_days is not None:
            policy = LatePolicy(policy.per_day if override.per_day is None else override.per_day,
                                policy.zero_after_days if override.zero_after_days is None
                                else override.zero_after_days, policy.grace_minutes)
    return DeadlineRule(deadline, policy, source)


@dataclass(frozen=True)
class Extension:
    student: str
    row: int  # in extensions.csv, counting the header as row 1, as a spreadsheet numbers them
    deadline: datetime | None  # None: the row could not be read (see problem)
    reason: str = ""
    problem: str = ""


EXTENSION_COLUMNS = ("student", "deadline", "reason")


def read_extension(student: str, row: int, text: str, reason: str, base: datetime | None) -> Extension:
    """One row of extensions.csv. ``text`` is a time (a date alone: the end of that day; without a zone, the
    assignment deadline's) or ``+N`` days after the assignment's deadline."""
    if relative := RELATIVE.fullmatch(text.strip()):
        if base is None:
            return Extension(student, row, None, reason, f"'{text}' counts from a deadline, and none is set")
        return Extension(student, row, base + timedelta(days=float(relative.group(1))), reason)
    try:
        zone = base.tzinfo if base is not None else None
        return Extension(student, row, parse_time(text, what="the deadline", default_zone=zone, end_of_day=True),
                         reason)
    except ConfigurationError as exc:
        return Extension(student, row, None, reason, exc.message)


def late_penalty(submitted: datetime, rule: DeadlineRule, extension: Extension | None) -> LatePenalty | None:
    """The result's late record: None when no deadline applies."""
    if rule.deadline is None:
        return None
    deadline = rule.deadline
    note, extended, reason = "", False, ""
    if extension is not None:
        reason = extension.reason
        if extension.deadline is None:
            # The instructor meant to give this student more time; until the row reads, no penalty is taken.
            note = (f"extensions.csv row {extension.row} could not be read ({extension.problem}): no late penalty "
                    "applied until it is fixed")
        else:
            deadline, extended = extension.deadline, True
    late_s = max(0.0, (submitted - deadline).total_seconds())
    fraction = 0.0 if note else rule.policy.fraction(late_s)
    return LatePenalty(deadline=utc_iso(deadline), submitted_at=utc_iso(submitted), late_s=late_s, fraction=fraction,
                       rule=rule.policy.describe(), deadline_offset=offset_of(deadline), extended=extended,
                       extension_reason=reason, note=note)
