"""How points are written (grader/points.py): each reader gets the format it reads."""

from __future__ import annotations

import json

from grader.points import decimal, json_number, shown


def test_pages_show_points_without_trailing_zeros() -> None:
    assert [shown(v) for v in (10.0, 12.5, 0.0, 10 / 3)] == ["10", "12.5", "0", "3.33333"]


def test_importers_get_a_plain_decimal_never_an_exponent() -> None:
    assert [decimal(v) for v in (87.5, 100.0, 100 / 3, 0.0, 1e6, 5e-5, 2e-5)] == [
        "87.5", "100", "33.3333", "0", "1000000", "0.0001", "0"]
    assert [decimal(v, places=2) for v in (87.5, 100 / 3, 99.999)] == ["87.5", "33.33", "100"]


def test_json_gets_integers_when_whole_and_four_places_otherwise() -> None:
    values = [json_number(v) for v in (10.0, 2.5, 10 / 3)]
    assert values == [10, 2.5, 3.3333] and isinstance(values[0], int)
    assert json.dumps(values) == "[10, 2.5, 3.3333]"
