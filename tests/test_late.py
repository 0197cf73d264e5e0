"""Deadlines and late penalties: the rule, times and time zones, extensions, and how the penalty enters the total."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from grader.adjust.late import DeadlineRule, LateOverride, deadline_rule, late_penalty, read_extension
from grader.check.spec import Assignment
from grader.errors import ConfigurationError
from grader.results import CheckResult, LatePenalty, ManualMark, QuestionResult, SubmissionResult
from grader.times import LatePolicy, describe_duration, describe_late, describe_time, parse_time

DAY = 86400
CET = timezone(timedelta(hours=1))
DEADLINE = datetime(2026, 3, 1, 12, 0, tzinfo=CET)  # 11:00 UTC
RULE = DeadlineRule(DEADLINE, LatePolicy(per_day=0.10, zero_after_days=3), "checks.py")


def result(code: float, *, manual: tuple[ManualMark, ...] = (), late: LatePenalty | None = None) -> SubmissionResult:
    check = CheckResult("q1.a", "q1", "a", "public", "passed", code, 10.0, "", "", 1)
    return SubmissionResult("ana", "toy", "ana.py", "python", "", "graded", "", (QuestionResult("q1", "q", (check,)),),
                            (), (), (), "2026-03-01T10:00:00+00:00", "2026-03-01T10:00:00+00:00", 1.0,
                            manual=manual, late=late)


@pytest.mark.parametrize(("late_s", "fraction"), [
    (0, 0.0),  # on time
    (1, 0.1),  # a second late is a started day
    (DAY, 0.1),
    (1.5 * DAY, 0.2),  # 1.5 days: two started days
    (3 * DAY, 0.3),  # exactly at the cut-off: not more than 3 days late
    (3 * DAY + 1, 1.0),  # past it: everything
    (40 * DAY, 1.0),
])
def test_the_penalty_counts_started_days_and_takes_everything_past_the_cutoff(late_s: float, fraction: float) -> None:
    assert LatePolicy(per_day=0.10, zero_after_days=3).fraction(late_s) == pytest.approx(fraction)


def test_grace_and_a_rule_without_a_cutoff() -> None:
    graceful = LatePolicy(per_day=0.25, grace_minutes=10)
    assert graceful.fraction(9 * 60) == 0 and graceful.fraction(11 * 60) == 0.25
    assert graceful.fraction(10 * DAY) == 1.0  # 25% a day never takes more than the whole score
    assert LatePolicy().fraction(10 * DAY) == 0  # a deadline without a rule records lateness only
    assert LatePolicy().describe() == "no points deducted (lateness is recorded only)"
    assert LatePolicy(per_day=0.1, zero_after_days=3).describe() == (
        "10% of the score per started day late; 0 when more than 3 days late")


def test_a_rule_that_cannot_be_meant_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"0\.10 for 10%"):
        LatePolicy(per_day=10)
    with pytest.raises(ConfigurationError):
        LatePolicy(zero_after_days=-1)


def test_times_need_a_zone_and_are_compared_as_instants() -> None:
    assert parse_time("2026-03-01T12:00:00+01:00", what="x") == datetime(2026, 3, 1, 11, 0, tzinfo=UTC)
    assert parse_time("2026-03-01T11:00Z", what="x") == datetime(2026, 3, 1, 11, 0, tzinfo=UTC)
    # A zone name follows daylight saving time: Lisbon is UTC+0 in winter and UTC+1 in summer.
    assert parse_time("2026-01-10 23:59 Europe/Lisbon", what="x").astimezone(UTC).hour == 23
    assert parse_time("2026-07-10 23:59 Europe/Lisbon", what="x").astimezone(UTC).hour == 22
    with pytest.raises(ConfigurationError, match="has no time zone"):
        parse_time("2026-03-01T12:00", what="--deadline")
    with pytest.raises(ConfigurationError, match="not a date and time"):
        parse_time("next friday", what="--deadline")
    with pytest.raises(ConfigurationError, match="unknown time zone"):
        parse_time("2026-03-01 12:00 Mars/Olympus", what="--deadline")
    with pytest.raises(ConfigurationError, match="no time zone"):
        Assignment(name="a", title="a", questions=(), deadline="2026-03-01 12:00")
    with pytest.raises(ConfigurationError, match="no time zone"):
        Assignment(name="a", title="a", questions=(), deadline=datetime(2026, 3, 1, 12))
    assert Assignment(name="a", title="a", questions=(), deadline=DEADLINE).deadline == DEADLINE


def test_a_run_overrides_the_assignments_deadline_and_rule() -> None:
    policy = LatePolicy(per_day=0.1, zero_after_days=3)
    assert deadline_rule(DEADLINE, policy, None) == RULE
    moved = deadline_rule(DEADLINE, policy, LateOverride(deadline="2026-03-08T12:00:00+01:00", per_day=0.05))
    assert moved.deadline == DEADLINE + timedelta(days=7) and moved.source == "--deadline"
    assert moved.policy == LatePolicy(per_day=0.05, zero_after_days=3)
    assert deadline_rule(DEADLINE, policy, LateOverride(deadline="none")).deadline is None
    assert deadline_rule(None, None, LateOverride(zero_after_days=2)).deadline is None


def test_extensions_read_as_an_instructor_writes_them() -> None:
    assert read_extension("ana", 2, "+2", "", DEADLINE).deadline == DEADLINE + timedelta(days=2)
    assert read_extension("ana", 2, "+1.5 days", "", DEADLINE).deadline == DEADLINE + timedelta(days=1.5)
    # A date alone is the end of that day; a time without a zone is in the deadline's.
    assert read_extension("ana", 2, "2026-03-04", "", DEADLINE).deadline == datetime(2026, 3, 4, 23, 59, 59,
                                                                                     tzinfo=CET)
    assert read_extension("ana", 2, "2026-03-04 09:00", "", DEADLINE).deadline == datetime(2026, 3, 4, 8, 0,
                                                                                           tzinfo=UTC)
    broken = read_extension("ana", 3, "2026-13-01", "flu", DEADLINE)
    assert broken.deadline is None and "not a date and time" in broken.problem
    assert "none is set" in read_extension("ana", 3, "+2", "", None).problem


def test_on_time_late_past_the_cutoff_and_extended() -> None:
    on_time = late_penalty(DEADLINE - timedelta(hours=1), RULE, None)
    assert on_time is not None and not on_time.is_late and on_time.fraction == 0
    assert on_time.deadline == "2026-03-01T11:00:00+00:00" and on_time.deadline_offset == "+01:00"
    late = late_penalty(DEADLINE + timedelta(days=1.5), RULE, None)
    assert late is not None and late.late_s == 1.5 * DAY and late.started_days == 2 and late.fraction == 0.2
    gone = late_penalty(DEADLINE + timedelta(days=4), RULE, None)
    assert gone is not None and gone.fraction == 1.0
    extended = late_penalty(DEADLINE + timedelta(days=1.5), RULE,
                            read_extension("ana", 2, "+2", "medical", DEADLINE))
    assert extended is not None and extended.extended and not extended.is_late and extended.fraction == 0
    assert extended.extension_reason == "medical" and extended.for_student().extension_reason == ""
    # An extension row that does not read: the instructor meant more time, so no penalty until it is fixed.
    unreadable = late_penalty(DEADLINE + timedelta(days=1.5), RULE,
                              read_extension("ana", 4, "soon", "", DEADLINE))
    assert unreadable is not None and unreadable.fraction == 0 and "row 4 could not be read" in unreadable.note
    assert not unreadable.extended
    assert late_penalty(DEADLINE, DeadlineRule(None), None) is None


def test_the_penalty_is_taken_from_the_score_after_manual_points() -> None:
    late = late_penalty(DEADLINE + timedelta(days=1.5), RULE, None)
    marked = (ManualMark("why", 5.0, 4.0, "good", "marked"),)
    adjusted = result(8.0, manual=marked, late=late)
    assert (adjusted.code_score, adjusted.manual_score, adjusted.late_points) == (8.0, 4.0, 2.4)
    assert adjusted.score == pytest.approx(9.6) and adjusted.max_score == 15
    zero = result(7.25, manual=marked, late=late_penalty(DEADLINE + timedelta(days=4), RULE, None))
    assert zero.score == 0 and zero.late_points == 11.25
    assert result(8.0, manual=marked).score == 12  # no deadline: nothing deducted


def test_lateness_is_said_in_words_with_utc_and_the_deadlines_own_offset() -> None:
    assert describe_duration(1.5 * DAY) == "1 day 12 hours"
    assert describe_duration(3 * DAY + 1) == "3 days 1 second"
    assert describe_duration(59) == "59 seconds"
    assert describe_time("2026-03-01T11:00:00+00:00", "+01:00") == "2026-03-01 11:00 UTC = 12:00 UTC+01:00"
    assert describe_time("2026-03-01T23:30:00+00:00", "+01:00") == "2026-03-01 23:30 UTC = 2026-03-02 00:30 UTC+01:00"
    late = late_penalty(DEADLINE + timedelta(days=1.5), RULE, None)
    assert late is not None
    assert describe_late(late, 2.4, 12) == (
        "Submitted 2026-03-02 23:00 UTC, 1 day 12 hours after the deadline (2026-03-01 11:00 UTC = 12:00 UTC+01:00). "
        "Late rule: 10% of the score per started day late; 0 when more than 3 days late. 2 started days late: 20% of "
        "12 points, -2.4 points.")
