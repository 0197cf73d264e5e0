"""How points are written: for people, for the CSV files a course platform imports, and for JSON.

The formats differ on purpose, each for its reader:

- ``shown`` (pages, the terminal): ``12.5``, ``10``, ``3.33333``; Python's ``g``, six significant digits, no
  trailing zeros.
- ``decimal`` (lms.csv, Canvas's gradebook, Moodle's worksheet): a plain decimal with a point, rounded to a fixed
  number of places, never an exponent (``1e+06`` or ``5e-05`` would not import); ``87.5``, ``100``, ``33.3333``.
- ``json_number`` (Gradescope's results.json): a JSON number, an integer when whole, else rounded to 4 places.
"""

from __future__ import annotations


def shown(value: float) -> str:
    """Points as a page or the terminal shows them: '12.5', '10'."""
    return f"{value:g}"


def decimal(value: float, places: int = 4) -> str:
    """Points as an importer reads them: '87.5', '100', '33.3333' (``places`` after the point at most)."""
    return f"{value:.{places}f}".rstrip("0").rstrip(".")


def json_number(value: float) -> float | int:
    """Points as a JSON number: 10 rather than 10.0, and 3.3333 rather than 3.3333333333333335."""
    return int(value) if float(value).is_integer() else round(value, 4)
