"""Limits an instructor overrides on the command line, and the per-submission budget for kept output."""

from __future__ import annotations

import pytest

from grader.errors import ConfigurationError
from grader.execute import Limits
from grader.pipeline.submission_run import keep_output_budget
from grader.results import QuestionResult, UnitResult


def test_overrides_parse_numbers_with_units_and_keep_field_types() -> None:
    limits = Limits().with_overrides(["call_seconds=2.5", "memory-bytes=2G", "processes=16", "stream_cap=64k"])
    assert limits.call_seconds == 2.5
    assert limits.memory_bytes == 2 << 30 and isinstance(limits.memory_bytes, int)
    assert limits.processes == 16
    assert limits.stream_cap == 64 << 10
    assert limits.unit_seconds == Limits().unit_seconds


@pytest.mark.parametrize("pair", ["call_seconds", "no_such_limit=3", "call_seconds=fast", "memory_bytes=-1"])
def test_bad_overrides_are_configuration_errors(pair: str) -> None:
    with pytest.raises(ConfigurationError):
        Limits().with_overrides([pair])


def test_output_beyond_the_budget_is_dropped_with_a_note() -> None:
    units = (UnitResult("cell [1]", "ok", "a" * 600, "b" * 100, ""), UnitResult("cell [2]", "ok", "c" * 600, "", ""))
    questions = (QuestionResult("q1", "Q1", (), stdout="d" * 50),)
    kept_units, kept_questions = keep_output_budget(units, questions, 1000)
    assert kept_units[0].stdout == "a" * 600 and kept_units[0].stderr == "b" * 100
    assert kept_units[1].stdout.startswith("c" * 300) and "300 more characters not kept" in kept_units[1].stdout
    assert kept_questions[0].stdout.startswith("\n[... 50 more characters not kept")
