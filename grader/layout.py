"""Where the project's folders are: the grader runs from a checkout with assignments/, solutions/ and templates/."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS_DIR = PROJECT_ROOT / "solutions"
ASSIGNMENTS_DIR = PROJECT_ROOT / "assignments"
TEMPLATES_DIR = PROJECT_ROOT / "templates"
