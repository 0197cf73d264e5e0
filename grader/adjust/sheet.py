"""CSV files an instructor edits in a spreadsheet (manual.csv, extensions.csv): read what spreadsheets save, write
what they open.

Spreadsheets save CSV in more than one way: UTF-8 with or without a byte-order mark, Windows-1252 (Excel's plain
"CSV"), commas, or semicolons where the decimal separator is a comma. Reading accepts all of these; writing uses UTF-8
with a byte-order mark, so that Excel shows accented names and answers as they are, and commas. Cells are written and
read through ``grader.csv_cells``: a cell a spreadsheet would run as a formula is written with a quote in front, and
read back without it.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.csv_cells import csv_rows, csv_text
from grader.files import write_text_atomic


class SheetError(ValueError):
    """The file cannot be read as the table it should be; the message says why."""


@dataclass(frozen=True)
class SheetRow:
    number: int  # as a spreadsheet numbers it: the header is row 1
    cells: dict[str, str]  # by column name, lower case; every column, those the grader does not know included

    def get(self, column: str) -> str:
        return (self.cells.get(column) or "").strip()


@dataclass(frozen=True)
class Sheet:
    columns: tuple[str, ...]  # lower case, in the file's order
    rows: tuple[SheetRow, ...]  # blank rows left out
    notes: tuple[str, ...] = ()  # how it was read, when that needs saying (an encoding other than UTF-8)


def _decode(data: bytes, name: str) -> tuple[str, tuple[str, ...]]:
    try:
        return data.decode("utf-8-sig"), ()
    except UnicodeDecodeError:
        note = (f"{name} is not UTF-8; read it as Windows-1252, as Excel saves plain CSV (save it as "
                "\"CSV UTF-8\" to keep every character)")
        return data.decode("cp1252", errors="replace"), (note,)


def read_sheet(path: Path, *, required: Sequence[str]) -> Sheet:
    """The rows of ``path``; ``SheetError`` when it is not a table with the ``required`` columns."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SheetError(f"cannot read it ({exc.strerror})") from exc
    if b"\0" in data[:4096]:
        raise SheetError("it is not text (was it saved as a workbook? save it as CSV)")
    text, notes = _decode(data, path.name)
    first = text.split("\n", 1)[0]
    delimiter = max((",", ";", "\t"), key=first.count)
    try:
        table = csv_rows(text, delimiter=delimiter)
    except csv.Error as exc:
        raise SheetError(f"it is not valid CSV ({exc})") from exc
    if not table:
        raise SheetError("it is empty: its first row must name the columns")
    columns = tuple(c.strip().lower() for c in table[0])
    missing = [c for c in required if c not in columns]
    if missing:
        raise SheetError(f"its first row must name the columns {', '.join(required)} (missing: {', '.join(missing)})")
    rows = []
    for index, values in enumerate(table[1:], start=2):
        if not any(v.strip() for v in values):
            continue
        cells = {column: values[i] if i < len(values) else "" for i, column in enumerate(columns) if column}
        rows.append(SheetRow(index, cells))
    return Sheet(columns, tuple(rows), notes)


def write_sheet(path: Path, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    # \r\n: RFC 4180, as spreadsheets write it
    write_text_atomic(path, csv_text([columns, *rows], newline="\r\n", bom=True).text)
