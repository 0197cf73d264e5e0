"""``grader assign [ASSIGNMENT ...] [--check] [--no-kit]``: write the student templates from the solution notebooks,
then each assignment's student kit (``grader kit``), which holds them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.assign import SOLUTION_SOURCE, stale_templates, with_solution_source, write_templates
from grader.cli.authoring import asked_elsewhere, authoring_warnings
from grader.cli.kit import KITS_DIR, shown, write_kits
from grader.errors import ConfigurationError
from grader.paths import ASSIGNMENTS_DIR, SOLUTIONS_DIR


def stale_kit(name: str, solutions: Path, assignments: Path, kits: Path) -> Path | None:
    """The kit of ``name`` in ``kits`` when it was built from other course files than today's (None when there is
    no kit there, or it is current)."""
    from grader.check.load import load_assignment
    from grader.kit.bundle import KIT_FILE, KIT_FOLDER, read_json
    from grader.kit.identity import sources_digest

    data_file = kits / name / KIT_FOLDER / KIT_FILE
    if not data_file.is_file():
        return None
    recorded = read_json(data_file).get("identity", {}).get("sources")
    spec = load_assignment(name, solutions_dir=solutions)
    return None if recorded == sources_digest(solutions / name, assignments / name, spec.provided_paths) \
        else kits / name


def _assign(args: argparse.Namespace) -> int:
    solutions, assignments = Path(args.solutions), Path(args.out)
    names = args.assignment or with_solution_source(solutions)
    if not names:
        raise ConfigurationError(f"no assignment in {solutions} has a {SOLUTION_SOURCE}")
    if args.check:
        stale = [path for name in names for path in stale_templates(name, solutions_dir=solutions,
                                                                      assignments_dir=assignments)]
        for path in stale:
            print(f"{'out of date' if path.exists() else 'missing'}: {shown(path)}", file=sys.stderr)
        old_kits = [kit for name in names if (kit := stale_kit(name, solutions, assignments, Path(args.kit_out)))]
        for kit in old_kits:
            print(f"kit out of date: {shown(kit)} was recorded from other course files than there are now",
                  file=sys.stderr)
        command = " ".join(["grader assign", *args.assignment])
        if stale:
            print(f"error: {len(stale)} template(s) differ from what {SOLUTION_SOURCE} gives: run `{command}` and "
                  "commit the result", file=sys.stderr)
        if old_kits:
            print(f"error: {len(old_kits)} student kit(s) are older than their checks, references or templates: run "
                  f"`{command}` (or `grader kit`) and hand the new kits out", file=sys.stderr)
        if stale or old_kits:
            return 1
        print(f"Templates up to date: {', '.join(names)}")
        return 0
    for warning in [*asked_elsewhere(names, solutions), *authoring_warnings(names, solutions)]:
        print(warning, file=sys.stderr)
    for name in names:
        written = write_templates(name, solutions_dir=solutions, assignments_dir=assignments)
        source = shown(solutions / name / SOLUTION_SOURCE)
        if written:
            print(f"{name}: wrote {', '.join(shown(p) for p in written)} from {source}")
        else:
            print(f"{name}: templates already up to date with {source}")
    if not args.no_kit:
        write_kits(names, solutions=solutions, assignments=assignments, out=Path(args.kit_out))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    assign = commands.add_parser(
        "assign", help="write the student templates (notebook and .py) from each solution notebook",
        description=f"Write assignments/<name>/<name>.ipynb and <name>.py from solutions/<name>/{SOLUTION_SOURCE}: "
                    "the lines between ### BEGIN SOLUTION and ### END SOLUTION become `raise NotImplementedError` "
                    "(code) or the answer placeholder (markdown).")
    assign.add_argument("assignment", nargs="*",
                        help=f"assignment names (default: every assignment with a {SOLUTION_SOURCE})")
    assign.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a template is missing or differs from what its solution "
                             "gives (for CI)")
    assign.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    assign.add_argument("--out", default=str(ASSIGNMENTS_DIR),
                        help="folder holding what students get, one folder per assignment")
    assign.add_argument("--no-kit", action="store_true",
                        help="write the templates only, not the student kits (`grader kit` writes them)")
    assign.add_argument("--kit-out", default=str(KITS_DIR),
                        help="folder to write the student kits in (default: the project's dist/)")
    assign.set_defaults(run=_assign)
