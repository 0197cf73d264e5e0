"""``grader kit [ASSIGNMENT ...] [--out DIR] [--no-wheel]``: write each assignment's student kit.

A kit is the folder a student is given: the templates (and the assignment's other student files), ``grader-kit/``
(the public checks and what the references return on their inputs) and the grader's wheel, which installs what
``from grader.kit import check`` needs in the student's own environment.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from grader.assign import SOLUTION_SOURCE, with_solution_source
from grader.cli.authoring import authoring_warnings
from grader.errors import ConfigurationError
from grader.execute import isolation
from grader.paths import ASSIGNMENTS_DIR, PROJECT_ROOT, SOLUTIONS_DIR

KITS_DIR = PROJECT_ROOT / "dist"  # build_kit's DIST_DIR, without importing the sandbox's machinery to say it


def shown(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def write_kits(names: Sequence[str], *, solutions: Path, assignments: Path, out: Path, wheel: bool = True,
               sandbox: str = "require") -> list[Path]:
    """Build the kit of each assignment in ``names`` into ``out``, printing what each holds; returns the folders.

    One wheel for every kit of the run (the same grader; pip's build is the slow part): the course's next release of
    its kits in ``out`` (grader/kit/publish.py), whose version and table of kits go into each kit's identity, and
    whose name into its guide."""
    from grader.kit.build import build_kit  # the sandbox's machinery: only when kits are written
    from grader.kit.publish import previous_release, publish, refuse_partial
    from grader.kit.wheel import build_package

    previous = previous_release(out) if wheel else None
    refuse_partial(previous, names, out)  # before anything is written
    kits = [build_kit(name, solutions_dir=solutions, assignments_dir=assignments, out_dir=out, sandbox=sandbox)
            for name in names]
    published = publish(kits, out, build_package(), previous) if wheel else None
    for name, kit in zip(names, kits, strict=True):
        files = sorted(p.name + ("/" if p.is_dir() else "") for p in kit.iterdir())
        print(f"{name}: wrote {shown(kit)}/ ({', '.join(files)})")
    if published is not None:
        from grader.kit.identity import PUBLISHED

        print(published.summary(shown(out / PUBLISHED)))
    return kits


def _kit(args: argparse.Namespace) -> int:
    solutions = Path(args.solutions)
    names = args.assignment or with_solution_source(solutions)
    if not names:
        raise ConfigurationError(f"no assignment in {solutions} has a {SOLUTION_SOURCE}")
    for warning in authoring_warnings(names, solutions):
        print(warning, file=sys.stderr)
    write_kits(names, solutions=solutions, assignments=Path(args.assignments), out=Path(args.out),
               wheel=not args.no_wheel, sandbox=args.sandbox)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    kit = commands.add_parser(
        "kit", help="write each assignment's student kit: templates, public checks and the grader's wheel",
        description="Write DIR/<name>/ for each assignment: its student files (the templates of `grader assign`), "
                    "grader-kit/ (the public checks and what the references return on their inputs; no hidden "
                    "check, no reference code) and the grader's wheel, which students install to run "
                    "`from grader.kit import check; check()` in their own notebook.")
    kit.add_argument("assignment", nargs="*",
                     help=f"assignment names (default: every assignment with a {SOLUTION_SOURCE})")
    kit.add_argument("--out", default=str(KITS_DIR),
                     help="folder to write the kits in, one folder per assignment (default: the project's dist/)")
    kit.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    kit.add_argument("--assignments", default=str(ASSIGNMENTS_DIR),
                     help="folder holding what students get, one folder per assignment")
    kit.add_argument("--no-wheel", action="store_true", help="leave the grader's wheel out of the kits")
    kit.add_argument("--sandbox", choices=isolation.MODES, default=isolation.DEFAULT_MODE,
                       help=isolation.MODES_HELP)
    kit.set_defaults(run=_kit)
