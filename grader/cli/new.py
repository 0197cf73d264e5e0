"""``grader new NAME``: write a new assignment that passes ``make test`` at once (grader/assign/scaffold.py), to be
made into the real one: its solution notebook, references, checks, a known mistake, templates and a sample."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.assign.scaffold import SAMPLE, scaffold
from grader.cli.authoring import asked_elsewhere, authoring_warnings
from grader.cli.kit import shown
from grader.paths import ASSIGNMENTS_DIR, PROJECT_ROOT, SOLUTIONS_DIR

SUBMISSIONS_DIR = PROJECT_ROOT / "tests" / "submissions"


def _new(args: argparse.Namespace) -> int:
    name = args.name
    if args.training:
        print(f"{name}: writing the assignment, then calibrating its training check (`grader calibrate {name}`: "
              "trainings in processes of their own, seconds) ...", flush=True)
    written = scaffold(name, solutions_dir=Path(args.solutions), assignments_dir=Path(args.assignments),
                       submissions_dir=Path(args.submissions), training=args.training, written=args.written)
    for path in written:
        print(f"wrote {shown(path)}")
    for warning in [*asked_elsewhere([name], Path(args.solutions)), *authoring_warnings([name], Path(args.solutions))]:
        print(warning, file=sys.stderr)
    sample = shown(Path(args.submissions) / name / SAMPLE)
    parts = ["a softmax that ignores padding"] + ["attention pooling trained by a harness"] * args.training \
        + ["a written question with a rubric"] * args.written
    print(f"\n{name}: a complete assignment ({'; '.join(parts)}) to replace with yours, keeping its shape. Edit "
          f"solution.ipynb, then run `grader assign {name}`; change reference_numpy.py, checks.py and variants.py "
          f"with it, and keep {sample} the model solution as a student would write it. `make test` tests it as it "
          "is now (docs/writing-checks.md).")
    if args.training:
        print(f"The training check's stages are in training_stages.py; after changing the harness, the task or "
              f"calibration.py, run `grader calibrate {name}` again.")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    new = commands.add_parser(
        "new", help="start an assignment: solutions/NAME/, its templates and a sample, passing the tests at once",
        description="Write solutions/NAME/ (solution.ipynb with ### BEGIN/END SOLUTION markers, reference_numpy.py, "
                    "checks.py, variants.py with one known mistake, __init__.py), the student templates in "
                    "assignments/NAME/ and tests/submissions/NAME/reference_style.py (the model solution, which the "
                    "mutation test edits), for a small real task to replace with yours. Nothing is overwritten.")
    new.add_argument("name", help="the assignment's name: a lower-case Python identifier, e.g. multihead_attention")
    new.add_argument("--training", action="store_true",
                     help="add a question whose check trains a model with the student's class, decided as soon as "
                          "the verdict is certain (a staged verdict, calibrated by `grader calibrate`)")
    new.add_argument("--written", action="store_true",
                     help="add a written question worth points, with a rubric, marked by hand (`grader review`)")
    new.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    new.add_argument("--assignments", default=str(ASSIGNMENTS_DIR),
                     help="folder holding what students get, one folder per assignment")
    new.add_argument("--submissions", default=str(SUBMISSIONS_DIR),
                     help="folder holding the sample submissions, one folder per assignment")
    new.set_defaults(run=_new)
