"""What one file written for the course holds: whose grades (or pages) it places, whose it could not, and the
people it carries that the run did not grade. Every writer of a class's file returns one, and the run's accounting
(pipeline/accounting.py) puts them side by side with who was graded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Placed:
    path: Path | None  # the file written; None when it could not be written at all (``absent`` says why)
    label: str  # as the accounting names it, relative to OUT: "grades.csv", "moodle/grading-worksheet.csv"
    rows: int  # rows (or zip members) written for graded students
    placed: tuple[str, ...] = ()  # student ids whose grade or page is in it
    # (student id, who they are to the platform, why): a graded student whose grade did not get in. Each is an error
    # of the run (GradesNotPlaced), named at its end.
    not_placed: tuple[tuple[str, str, str], ...] = ()
    warnings: tuple[str, ...] = ()  # what was done to place a grade that the instructor should know (an id re-read)
    others: int = 0  # rows of people the run did not grade (no submission), left as the platform gave them
    absent: str = ""  # why the file was not written (no worksheet given, ...), when it was not
