"""``grader kit [ASSIGNMENT ...] [--out DIR] [--no-wheel]``: write each assignment's student kit.

A kit is the folder a student is given: the templates (and the assignment's other student files), ``grader-kit/``
(the public checks and what the references return on their inputs) and the grader's wheel, which installs what
``from grader.kit import check`` needs in the student's own environment.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from grader.assign import SOLUTION_SOURCE, with_solution_source
from grader.errors import ConfigurationError
from grader.execute import isolation
from grader.paths import ASSIGNMENTS_DIR, PROJECT_ROOT, SOLUTIONS_DIR

KITS_DIR = PROJECT_ROOT / "dist"  # build_kit's DIST_DIR, without importing the sandbox's machinery to say it


def shown(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else str(path)


def write_kits(names: Sequence[str], *, solutions: Path, assignments: Path, out: Path, wheel: bool = True,
               sandbox: str = "require") -> list[Path]:
    """Build the kit of each assignment in ``names`` into ``out``, printing what each holds; returns the folders.

    One wheel for every kit of the run (the same grader; pip's build is the slow part), whose version names the
    kits built with it (grader/kit/identity.py), written into each kit's identity and guide."""
    from grader.kit.build import KIT_GUIDE, build_kit  # the sandbox's machinery: only when kits are written
    from grader.kit.bundle import KIT_FILE, KIT_FOLDER, read_json, write_json
    from grader.kit.wheel import WHEEL_NAME, build_package, wheel_version, write_wheel

    kits = [build_kit(name, solutions_dir=solutions, assignments_dir=assignments, out_dir=out, sandbox=sandbox)
            for name in names]
    if wheel:
        package = build_package()
        identities = [read_json(kit / KIT_FOLDER / KIT_FILE)["identity"]["digest"] for kit in kits]
        version = wheel_version(package, identities)
        for kit in kits:
            for older in kit.glob("attention_grader-*.whl"):  # an earlier build's, which would be installed by mistake
                older.unlink()
            built = write_wheel(package, kit, version)
            data = read_json(kit / KIT_FOLDER / KIT_FILE)
            data["identity"]["wheel"] = version
            write_json(kit / KIT_FOLDER / KIT_FILE, data)
            guide = kit / KIT_GUIDE
            if guide.is_file():
                guide.write_text(guide.read_text(encoding="utf-8").replace(WHEEL_NAME, built.name), encoding="utf-8")
    for name, kit in zip(names, kits, strict=True):
        files = sorted(p.name + ("/" if p.is_dir() else "") for p in kit.iterdir())
        print(f"{name}: wrote {shown(kit)}/ ({', '.join(files)})")
    return kits


def _kit(args: argparse.Namespace) -> int:
    solutions = Path(args.solutions)
    names = args.assignment or with_solution_source(solutions)
    if not names:
        raise ConfigurationError(f"no assignment in {solutions} has a {SOLUTION_SOURCE}")
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
