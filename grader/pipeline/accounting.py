"""The accounting of a class run: every entry found in the submissions folder and what became of it, every student
graded (now or reused), and every file written for the course with whose grades it holds. One reconciliation,
printed at the end of the run (``lines``), written to OUT/accounting.json and shown on the dashboard.

It reconciles rather than reports: each graded student must be in every class file (grades.csv, lms.csv, their
pages) and in each platform file the run writes; a student missing from one is named, with why. A grade that could
not be placed in a platform's file ends the run with GradesNotPlaced (exit code 4), once every file is written.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.discover.inventory import GRADED, IGNORED, OTHER, SKIPPED, Entry, fates
from grader.errors import GradesNotPlaced
from grader.files import write_text_atomic
from grader.names import file_name, terminal_text
from grader.pipeline.student_files import FALLBACK_MARK
from grader.record.output import STUDENT_FILES, OutputFolder
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


def pages_placed(out: OutputFolder, students: Sequence[str]) -> Placed:
    """The students' folders as a file of the run: whose three files are all there as drawn; a student whose folder
    lacks one, or holds a plain page in place of one, is left out of ``placed`` and named in a warning."""
    warnings = []
    for student in students:
        folder = out.student(student)
        absent = [name for name in STUDENT_FILES if not (folder.path / name).is_file()]
        plain = [page.name for page in (folder.report, folder.instructor) if page.name not in absent
                 and _is_fallback(page)]
        said = [*([", ".join(absent) + " not written"] if absent else []),
                *(f"{name} is a plain page with the score (the page could not be drawn)" for name in plain)]
        if said:
            warnings.append((student, f"{student}: {'; '.join(said)}"))
    lacking = {s for s, _ in warnings}
    placed = tuple(s for s in students if s not in lacking)
    return Placed(out.path / "students", "students/", len(placed), placed, warnings=tuple(w for _, w in warnings))


def _is_fallback(page: Path) -> bool:
    with page.open("rb") as handle:
        return handle.read(len(FALLBACK_MARK)) == FALLBACK_MARK.encode()


def write_student_folders(out: OutputFolder, students: Sequence[str]) -> dict[str, str]:
    """OUT/student-folders.json: each student id and the folder its files are in (ids are data; the folder name is
    made from the id by ``grader.names.file_name``, which people and scripts need not redo)."""
    mapping = {student: file_name(student) for student in sorted(students)}
    write_text_atomic(out.student_folders, json.dumps(mapping, ensure_ascii=False, indent=1) + "\n")
    return mapping


def read_student_folders(out: OutputFolder) -> dict[str, str]:
    """The mapping an earlier run wrote ({} when none could be read: a folder from before it was written)."""
    try:
        data = json.loads(out.student_folders.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def write_accounting(out: OutputFolder, accounting: Accounting) -> Path:
    write_text_atomic(out.accounting, json.dumps(accounting.to_json(), ensure_ascii=False, indent=1) + "\n")
    return out.accounting
