"""The output folder of a class run (``grader grade ... --out OUT``): every file name it holds, in one place.

::

    OUT/gradebook.sqlite            every result, whole (resume, --student)
    OUT/index.html                  the instructor's dashboard
    OUT/grades.csv, OUT/lms.csv     the class's grades; the LMS's import
    OUT/manual.csv                  written answers to mark (read back, marks kept, by every run)
    OUT/extensions.csv              per-student deadlines (the instructor's, read only)
    OUT/.grader.lock                one grader at a time (output_lock.py)
    OUT/students/<name>/            results.json (Gradescope's format), report.html, instructor.html; <name> is
                                    the student id as a file name (grader.names.file_name)
    OUT/student-folders.json        which folder is whose: {student id: folder name}
    OUT/accounting.json             what the run found, graded, skipped and wrote (pipeline/accounting.py)
    OUT/similar/                    the similar submissions' pages (instructor only)
    OUT/moodle/, OUT/canvas/        the platform's imports, after a Moodle or Canvas download

The names are module constants too, for the modules that name a file to the instructor (adjust/, the exports).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.names import file_name

GRADEBOOK = "gradebook.sqlite"
DASHBOARD = "index.html"
GRADES_CSV = "grades.csv"
LMS_CSV = "lms.csv"
MANUAL_CSV = "manual.csv"
EXTENSIONS_CSV = "extensions.csv"
LOCK = ".grader.lock"
STUDENTS = "students"
STUDENT_FOLDERS = "student-folders.json"
ACCOUNTING = "accounting.json"
SIMILAR = "similar"
MOODLE = "moodle"
CANVAS = "canvas"

RESULTS_JSON = "results.json"
REPORT = "report.html"
INSTRUCTOR_REPORT = "instructor.html"
STUDENT_FILES = (RESULTS_JSON, REPORT, INSTRUCTOR_REPORT)  # what every student's folder holds after a run


@dataclass(frozen=True)
class StudentFolder:
    """``OUT/students/<name>/``."""

    path: Path

    @property
    def results_json(self) -> Path:
        return self.path / RESULTS_JSON

    @property
    def report(self) -> Path:
        return self.path / REPORT

    @property
    def instructor(self) -> Path:
        return self.path / INSTRUCTOR_REPORT

    def complete(self) -> bool:
        """Whether all of a student's files are there (a reused result's pages are written again when not)."""
        return all((self.path / name).is_file() for name in STUDENT_FILES)


@dataclass(frozen=True)
class OutputFolder:
    """A run's output folder; its paths, none of them created here."""

    path: Path

    @property
    def gradebook(self) -> Path:
        return self.path / GRADEBOOK

    @property
    def dashboard(self) -> Path:
        return self.path / DASHBOARD

    @property
    def grades_csv(self) -> Path:
        return self.path / GRADES_CSV

    @property
    def lms_csv(self) -> Path:
        return self.path / LMS_CSV

    @property
    def manual_csv(self) -> Path:
        return self.path / MANUAL_CSV

    @property
    def extensions_csv(self) -> Path:
        return self.path / EXTENSIONS_CSV

    @property
    def lock(self) -> Path:
        return self.path / LOCK

    @property
    def student_folders(self) -> Path:
        return self.path / STUDENT_FOLDERS

    @property
    def accounting(self) -> Path:
        return self.path / ACCOUNTING

    @property
    def similar(self) -> Path:
        return self.path / SIMILAR

    @property
    def moodle(self) -> Path:
        return self.path / MOODLE

    @property
    def canvas(self) -> Path:
        return self.path / CANVAS

    def student(self, student: str) -> StudentFolder:
        """``OUT/students/<name>/``: the id is data, and becomes a folder name only through ``file_name``."""
        return StudentFolder(self.path / STUDENTS / file_name(student))
