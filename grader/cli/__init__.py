"""Command line: a thin layer over the pipeline stages, one module per command (``grader grade ...``).

Each command module has ``register(commands)``, which adds its subparser and sets ``run`` to a function of the
parsed arguments returning the exit code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import grader
from grader import __version__
from grader.cli import assign, check, grade, gradescope, kit, new
from grader.errors import GraderError

COMMANDS = (grade, check, assign, kit, gradescope, new)


def version() -> str:
    """The version and the folder the package runs from: a virtualenv copied from another checkout runs that
    checkout's grader, which the version alone does not show."""
    return f"grader {__version__} ({Path(grader.__file__).resolve().parent})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="Auto-grader for attention-mechanism assignments")
    parser.add_argument("--version", action="version", version=version())
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except GraderError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        # Every result is recorded as it arrives: nothing graded so far is lost, and a rerun grades only the rest.
        print("\ninterrupted: the results recorded so far are kept; run the same command again to grade the rest",
              file=sys.stderr)
        return 130
