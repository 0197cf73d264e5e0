"""``grader new NAME``: write a new assignment that passes ``make test`` at once (grader/assign/scaffold.py), to be
made into the real one: its solution notebook, references, checks, a known mistake, templates and a sample."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from grader.assign.scaffold import SAMPLE, scaffold
from grader.cli.kit import shown
from grader.paths import ASSIGNMENTS_DIR, PROJECT_ROOT, SOLUTIONS_DIR

SUBMISSIONS_DIR = PROJECT_ROOT / "tests" / "submissions"


def asked_elsewhere(names: Sequence[str], solutions: Path) -> list[str]:
    """Warnings for the names ``names``' assignments ask for that another assignment in ``solutions`` asks for."""
    from grader.check.load import available_assignments, load_assignment
    from grader.discover.assignment_of import shared_name_warnings

    asked = {n: load_assignment(n, solutions_dir=solutions).withheld_names for n in available_assignments(solutions)}
    return shared_name_warnings(asked, involving=names)


def _new(args: argparse.Namespace) -> int:
    name = args.name
    written = scaffold(name, solutions_dir=Path(args.solutions), assignments_dir=Path(args.assignments),
                       submissions_dir=Path(args.submissions))
    for path in written:
        print(f"wrote {shown(path)}")
    for warning in asked_elsewhere([name], Path(args.solutions)):
        print(warning, file=sys.stderr)
    sample = shown(Path(args.submissions) / name / SAMPLE)
    print(f"\n{name}: a complete assignment (a softmax that ignores padding) to replace with yours, keeping its "
          f"shape. Edit solution.ipynb, then run `grader assign {name}`; change reference_numpy.py, checks.py and "
          f"variants.py with it, and keep {sample} the model solution as a student would write it. `make test` "
          "tests it as it is now (docs/writing-checks.md).")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    new = commands.add_parser(
        "new", help="start an assignment: solutions/NAME/, its templates and a sample, passing the tests at once",
        description="Write solutions/NAME/ (solution.ipynb with ### BEGIN/END SOLUTION markers, reference_numpy.py, "
                    "checks.py, variants.py with one known mistake, __init__.py), the student templates in "
                    "assignments/NAME/ and tests/submissions/NAME/reference_style.py (the model solution, which the "
                    "mutation test edits), for a small real task to replace with yours. Nothing is overwritten.")
    new.add_argument("name", help="the assignment's name: a lower-case Python identifier, e.g. multihead_attention")
    new.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    new.add_argument("--assignments", default=str(ASSIGNMENTS_DIR),
                     help="folder holding what students get, one folder per assignment")
    new.add_argument("--submissions", default=str(SUBMISSIONS_DIR),
                     help="folder holding the sample submissions, one folder per assignment")
    new.set_defaults(run=_new)
