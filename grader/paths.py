"""Where the project's folders are: the grader runs from a checkout with assignments/, solutions/ and templates/."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = PROJECT_ROOT / "solutions"
ASSIGNMENTS_DIR = PROJECT_ROOT / "assignments"
# Each assignment's model solution in solutions/<name>/: the templates are made from it (grader/assign) and the order
# of each answer's parameters is read from it (grader/check/call_order.py).
SOLUTION_SOURCE = "solution.ipynb"
# The student kit's wheel has no checkout around it: it ships the templates inside the package (grader/kit/wheel.py).
PACKAGED_TEMPLATES = "templates"
_PACKAGED = Path(__file__).resolve().parent / PACKAGED_TEMPLATES
TEMPLATES_DIR = _PACKAGED if _PACKAGED.is_dir() else PROJECT_ROOT / "templates"
# What a student installs and runs: copied into every kit (named for its assignment) and the kit wheel's description.
STUDENT_GUIDE = PROJECT_ROOT / "docs" / "student-kit.md"


def assignment_file(assignment: str, *parts: str) -> Path:
    """A file the students were given, under ``assignments/<assignment>/`` (a harness a check runs, say)."""
    return ASSIGNMENTS_DIR.joinpath(assignment, *parts)
