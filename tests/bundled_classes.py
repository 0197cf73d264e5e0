"""Each assignment's bundled classes, graded once per test session and shared by every test that reads them: its
sample class (tests/submissions/<name>/) and its real-style corpus (tests/submissions/real_style/<name>/), graded as
`make grade` grades them (two jobs, threads of this process for a class this small), with every tensor comparison's
distance to its tolerance bound recorded on the way (tests/tolerance_margins.py), so the margins test needs no
grading of its own."""

from __future__ import annotations

from pathlib import Path

from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .conftest import SUBMISSIONS
from .tolerance_margins import Margins, new_margins, recording

SAMPLES = "samples"
REAL_STYLE = "real_style"


def folder_of(assignment: str, corpus: str) -> Path:
    return SUBMISSIONS / assignment if corpus == SAMPLES else SUBMISSIONS / "real_style" / assignment


class BundledClasses:
    """Runs on demand, each once; ``margins`` holds what their comparisons recorded, by assignment."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.runs: dict[tuple[str, str], ClassRun] = {}
        self._margins: dict[str, dict[str, Margins]] = {}

    def run(self, assignment: str, corpus: str = SAMPLES) -> ClassRun:
        if (assignment, corpus) not in self.runs:
            margins = self._margins.setdefault(assignment, new_margins())
            # In this process (job threads), where the recording sees each comparison the checks make.
            with recording(margins):
                self.runs[assignment, corpus] = grade_class(RunRequest(assignment=assignment,
                                                                       submissions_dir=folder_of(assignment, corpus),
                                                                       out_dir=self.out / assignment / corpus / "out"),
                                                            RunOptions(jobs=2, job_processes=False))
        return self.runs[assignment, corpus]

    def margins(self, assignment: str) -> dict[str, Margins]:
        """The margins of every comparison in both of the assignment's classes (a new assignment may have no
        real-style corpus yet)."""
        for corpus in (SAMPLES, REAL_STYLE):
            if folder_of(assignment, corpus).is_dir():
                self.run(assignment, corpus)
        return self._margins.setdefault(assignment, new_margins())
