"""``grader check SUBMISSION``: a student checks their work with the public checks, before handing it in.

Exit code 0 when every public check passes, 1 otherwise (a check failed, or the file could not be run), 2 for a
mistake on the command line (no such file, an assignment that cannot be told), 3 when the grader itself failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from grader.execute import isolation
from grader.paths import SOLUTIONS_DIR
from grader.pipeline.self_check import SelfCheck, check_submission, submission_file
from grader.report.summary import paint, summary_lines


def wants_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def print_summary(check: SelfCheck, *, source: str, stream: TextIO = sys.stdout, colour: bool = False) -> None:
    """The summary the student kit shows as text too (grader.report.summary), and where the report was written."""
    for line in summary_lines(check, heading=f"{paint('grader check', 'bold', colour)} {source}: ", colour=colour):
        print(line, file=stream)
    print(f"Report: {check.report.resolve()}", file=stream)


def _check(args: argparse.Namespace) -> int:
    submission_file(Path(args.submission))  # a mistyped name is said at once, before the sandbox is probed
    layers = isolation.detect(args.sandbox)
    if exposed := layers.exposure():
        print(f"warning: {exposed} (--sandbox {layers.mode}): {layers.describe()}", file=sys.stderr, flush=True)
    check = check_submission(path=Path(args.submission), out_dir=Path(args.out), assignment=args.assignment,
                             solutions_dir=Path(args.solutions), device=args.device, sandbox=args.sandbox,
                             limit_overrides=args.limit)
    print_summary(check, source=args.submission, colour=wants_colour(sys.stdout))
    if check.result.grader_failed:
        return 3
    return 0 if check.passed else 1


def register(commands: argparse._SubParsersAction) -> None:
    check = commands.add_parser(
        "check", help="check your work: run the public checks on one notebook or .py file",
        description="Run an assignment's public checks on one submission, in the grader's sandbox, print each "
                    "question's result and write your report. Hidden checks are not run. Exit code 0 when every "
                    "public check passes, 1 otherwise.")
    check.add_argument("submission", help="your notebook (.ipynb) or Python file (.py)")
    check.add_argument("--assignment", help="assignment name (default: told from the notebook's metadata, the file "
                                            "name or the names it defines)")
    check.add_argument("--out", default="grader-check",
                       help="folder for the report, written to OUT/<file name without suffix>/report.html "
                            "(default: grader-check)")
    check.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' checks")
    check.add_argument("--device", default="cpu", help="torch device for your code (cpu, cuda)")
    check.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                       help="override one of the assignment's limits, e.g. call_seconds=20 (repeatable)")
    check.add_argument("--sandbox", choices=isolation.MODES, default=isolation.DEFAULT_MODE,
                       help=isolation.MODES_HELP)
    check.set_defaults(run=_check)
