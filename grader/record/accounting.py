"""The accounting of a class run: every entry found in the submissions folder and what became of it, every student
graded (now or reused), and every file written for the course with whose grades it holds. One reconciliation,
printed at the end of the run (``lines``), written to OUT/accounting.json and shown on the dashboard.

It reconciles rather than reports: each graded student must be in every class file (grades.csv, lms.csv, their
pages) and in each platform file the run writes; a student missing from one is named, with why. A grade that could
not be placed in a platform's file ends the run with GradesNotPlaced (exit code 4), once every file is written. The
pipeline draws it up (grader/pipeline/accounting.py: the students' pages); the report shows it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from grader.discover.inventory import GRADED, IGNORED, OTHER, SKIPPED, Entry, fates
from grader.errors import GradesNotPlaced
from grader.files import write_text_atomic
from grader.names import terminal_text
from grader.record.output import OutputFolder
from grader.record.placed import Placed

SHOWN_BY_NAME = 12  # entries listed by name on the terminal per fate; the file and the dashboard list them all


@dataclass(frozen=True)
class Accounting:
    submissions: str  # the folder graded
    layout: str
    entries: tuple[Entry, ...]
    students: tuple[str, ...]  # with a result in this run: graded now or reused
    reused: int  # of those, how many were reused from the gradebook
    held_back: tuple[str, ...] = ()  # --student: new or changed, not graded
    missing: tuple[str, ...] = ()  # in the gradebook, no submission now
    files: tuple[Placed, ...] = ()

    @property
    def graded_now(self) -> int:
        return len(self.students) - self.reused

    @property
    def not_placed(self) -> list[tuple[str, str, str, str]]:
        """(file, student id, who they are to the platform, why) for every grade that did not get in a file."""
        return [(f.label, student, who, why) for f in self.files for student, who, why in f.not_placed]

    def error(self) -> GradesNotPlaced | None:
        """The run's error when a grade could not be placed: its message names the students."""
        missing = self.not_placed
        if not missing:
            return None
        by_file: dict[str, list[str]] = {}
        for label, _student, who, why in missing:
            by_file.setdefault(label, []).append(f"{who}: {why}")
        text = "; ".join(f"{label}: " + "; ".join(items) for label, items in by_file.items())
        return GradesNotPlaced(f"{len(missing)} grade(s) not placed in the platform's files ({text}). Every other "
                               "file is written; see OUT/accounting.json")

    def lines(self) -> list[str]:
        """The reconciliation for the terminal: counts, and by name everything not carried through, with why."""
        groups = fates(self.entries)
        counts = [f"{len(groups[GRADED])} graded", f"{len(groups[OTHER])} other file(s) of graded students",
                  f"{len(groups[SKIPPED])} skipped", f"{len(groups[IGNORED])} ignored"]
        out = [f"Accounting: {len(self.entries)} entries found in {terminal_text(self.submissions)} "
               f"({self.layout} layout): {', '.join(counts)}"]
        for fate in (SKIPPED, IGNORED):
            for entry in groups[fate][:SHOWN_BY_NAME]:
                out.append(f"  {fate} {terminal_text(entry.path)}: {terminal_text(entry.reason)}")
            if len(groups[fate]) > SHOWN_BY_NAME:
                out.append(f"  ... and {len(groups[fate]) - SHOWN_BY_NAME} more {fate}: see accounting.json")
        students = (f"  {len(self.students)} student(s) with a result: {self.graded_now} graded now, "
                    f"{self.reused} reused")
        if self.held_back:
            students += f"; {len(self.held_back)} held back (--student)"
        if self.missing:
            students += f"; {len(self.missing)} in the gradebook with no submission now"
        out.append(students)
        for placed in self.files:
            if placed.path is None and placed.absent:
                out.append(f"  {placed.label}: not written ({placed.absent})")
                continue
            others = f"; {placed.others} other row(s) left as given" if placed.others else ""
            out.append(f"  {placed.label}: {len(placed.placed)} of {len(self.students)} placed{others}")
            out += [f"    warning: {terminal_text(w)}" for w in placed.warnings]
            out += [f"    NOT PLACED {terminal_text(who)}: {terminal_text(why)}" for _s, who, why in placed.not_placed]
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "submissions": self.submissions, "layout": self.layout,
            "entries": [dataclasses.asdict(e) for e in self.entries],
            "students": {"with_result": list(self.students), "graded_now": self.graded_now, "reused": self.reused,
                         "held_back": list(self.held_back), "missing": list(self.missing)},
            "files": [{"file": f.label, "written": f.path is not None, "rows": f.rows, "placed": list(f.placed),
                       "not_placed": [{"student": s, "who": w, "why": y} for s, w, y in f.not_placed],
                       "warnings": list(f.warnings), "other_rows": f.others, "not_written_because": f.absent}
                      for f in self.files],
            "not_placed": len(self.not_placed),
        }


def write_accounting(out: OutputFolder, accounting: Accounting) -> Path:
    write_text_atomic(out.accounting, json.dumps(accounting.to_json(), ensure_ascii=False, indent=1) + "\n")
    return out.accounting
