"""Command line: a thin layer over the pipeline stages, one module per command (``grader grade ...``).

Each command module has ``register(commands)``, which adds its subparser and sets ``run`` to a function of the
parsed arguments returning the exit code.
"""

from __future__ import annotations

import argparse
import errno
import signal
import sqlite3
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import grader
from grader import __version__
from grader.cli import assign, calibrate, check, grade, gradescope, kit, new, review, serve
from grader.cli.signals import stopped_by_signals
from grader.errors import GraderError, InfrastructureError
from grader.record.gradebook import damaged, is_damage
from grader.record.output import GRADEBOOK
from grader.stack_dump import stacks_on_request
from grader.storage import FULL, QUOTA, READ_ONLY, Refused

COMMANDS = (grade, check, assign, kit, gradescope, new, calibrate, review, serve)
# What a command stopped by a signal keeps, and how to go on; every result is recorded as it arrives.
GOING_ON = {"grade": "the results recorded so far are kept; run the same command again to grade the rest"}
# A write refused by the machine that no write of the grader's said in its own words: only errors no read raises.
REFUSED_ANYWHERE = {errno.ENOSPC: FULL, errno.EDQUOT: QUOTA, errno.EROFS: READ_ONLY}


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
    stacks_on_request()
    try:
        with stopped_by_signals():
            return args.run(args)
    except GraderError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:  # Ctrl-C, and SIGTERM and SIGHUP (cli/signals.py)
        signum = getattr(exc, "signum", signal.SIGINT)
        what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        going_on = GOING_ON.get(args.command, "run the same command again")
        print(f"\n{what}: {going_on}", file=sys.stderr)
        return 128 + signum
    except OSError as exc:
        if exc.errno not in REFUSED_ANYWHERE:
            return _failed(exc)
        refused = Refused(Path(exc.filename or "?"), REFUSED_ANYWHERE[exc.errno])
        print(f"error: {refused.message}", file=sys.stderr)
        return refused.exit_code
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            return _failed(exc)
        # Damage found past the gradebook's opening check (written over while the command ran): said as that check
        # says it, of the gradebook of the command's --out.
        broken = damaged(Path(getattr(args, "out", None) or ".") / GRADEBOOK, exc)
        print(f"error: {broken.message}", file=sys.stderr)
        return broken.exit_code
    except Exception as exc:
        return _failed(exc)


def _failed(exc: Exception) -> int:
    """A failure of the grader's own, which none of its errors foresaw: the traceback, for whoever fixes it, and
    one line that says so."""
    traceback.print_exc()
    print(f"error: the grader failed ({type(exc).__name__}: {exc}); the traceback above says where",
          file=sys.stderr)
    return InfrastructureError.exit_code
