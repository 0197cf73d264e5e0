"""``grader gradescope ASSIGNMENT [--out ZIP]``: the Gradescope autograder zip for an assignment."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader.export import build_autograder_zip
from grader.layout import SOLUTIONS_DIR


def _gradescope(args: argparse.Namespace) -> int:
    out = Path(args.out or f"out/gradescope/{args.assignment}/autograder.zip")
    built = build_autograder_zip(args.assignment, out, solutions_dir=Path(args.solutions))
    provided = [n for n in built.names if n.startswith("assignments/")]
    also = f" and its provided {', '.join(provided)}" if provided else ""
    print(f"Wrote {built.path} ({built.size / 1024:.0f} KiB, {len(built.names)} files): setup.sh, run_autograder, "
          f"the grader, {len(built.solutions)} files of solutions/{built.assignment}/{also} (no other "
          f"assignment's solutions, no tests).")
    print("Upload it on Gradescope: a Programming Assignment > Configure Autograder > Zip file upload, base image "
          "Ubuntu 22.04 or newer; students upload their notebook or .py file. Hidden checks are shown to students "
          "after you publish the grades.")
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    gradescope = commands.add_parser("gradescope", help="write the Gradescope autograder zip for an assignment")
    gradescope.add_argument("assignment", help="assignment name, a folder in solutions/")
    gradescope.add_argument("--out", help="the zip to write (default: out/gradescope/ASSIGNMENT/autograder.zip)")
    gradescope.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    gradescope.set_defaults(run=_gradescope)
