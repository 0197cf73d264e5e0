"""``grader check SUBMISSION``: a student checks their work with the public checks, before handing it in.

Exit code 0 when every public check passes, 1 otherwise (a check failed, or the file could not be run), 2 for a
mistake on the command line (no such file, an assignment that cannot be told), 3 when the grader itself failed.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from pathlib import Path
from typing import TextIO

from grader.execute import isolation
from grader.layout import SOLUTIONS_DIR
from grader.pipeline.self_check import SelfCheck, check_submission, submission_file
from grader.results import INTERNAL, PASSED, CheckResult

_COLOURS = {"green": "32", "red": "31", "yellow": "33", "bold": "1", "dim": "2"}
_OUTCOMES = {"failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT", "crashed": "CRASHED", "not_run": "NOT RUN",
             "internal_error": "GRADER ERROR"}


def wants_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


class _Printer:
    def __init__(self, stream: TextIO, colour: bool) -> None:
        self.stream, self.colour = stream, colour

    def paint(self, text: str, colour: str) -> str:
        return f"\033[{_COLOURS[colour]}m{text}\033[0m" if self.colour else text

    def line(self, text: str = "") -> None:
        print(text, file=self.stream)

    def block(self, text: str, indent: int) -> None:
        """Multi-line text under a label, every line indented to the same column."""
        pad = " " * indent
        for line in text.strip().splitlines() or [""]:
            self.line(f"{pad}{line}".rstrip())


def _same_cause(message: str) -> str:
    """The message with a call's arguments left out: checks that raised the same way share it."""
    return re.sub(r"\([^()]*\)(?= raised )", "(...)", message)


def _failed_lines(out: _Printer, failed: list[CheckResult]) -> None:
    """Each failed check with its message; checks in a row that failed the same way (a function not written yet)
    are listed together under one message, and a diagnosis already given is not repeated in full."""
    told: set[str] = set()
    for _, group in itertools.groupby(failed, key=lambda c: (c.status, _same_cause(c.message))):
        checks = list(group)
        for check in checks:
            out.line(f"    {out.paint(_OUTCOMES.get(check.status, check.status.upper()), 'red')}  {check.title}")
        first = checks[0]
        out.block(first.message, 6)
        if first.diagnosis is not None:
            cause = out.paint(f"Likely cause: {first.diagnosis.name}.", "bold")
            out.block(f"{cause} (as above)" if first.diagnosis.variant in told
                      else f"{cause} {first.diagnosis.explanation}", 6)
            told.add(first.diagnosis.variant)
        if first.smallest is not None:  # a failing random check, run again at the smallest sizes that fail it
            out.block(f"Smallest failing case: {first.smallest.text}. {first.smallest.message}", 6)
        for note in dict.fromkeys(n for c in checks for n in c.notes):
            out.block(note, 6)


def print_summary(check: SelfCheck, *, source: str, stream: TextIO = sys.stdout, colour: bool = False) -> None:
    out = _Printer(stream, colour)
    result = check.result
    out.line(f"{out.paint('grader check', 'bold')} {source}: {check.title} ({result.assignment}), public checks only")
    if result.status != "graded":
        out.line()
        out.line(out.paint(f"Your {result.kind} could not be checked ({result.status}):", "red"))
        out.block(result.reason, 2)
    else:
        width = max((len(f"{q.id}  {q.title}") for q in result.questions), default=0)
        out.line()
        for question in result.questions:
            passed = sum(1 for c in question.checks if c.status == PASSED)
            total = len(question.checks)
            verdict = (out.paint(f"passed ({total} public check{'s' * (total != 1)})", "green") if passed == total
                       else out.paint(f"{passed} of {total} public checks passed", "red"))
            out.line(f"{f'{question.id}  {question.title}':<{width}}  {question.score:>5g} / {question.max_score:<4g}"
                     f"  {verdict}")
            # What the checks point to (a problem they share, said once) and how the grader adapted to the code (a
            # renaming); not the standing note on grading with the reference.
            for note in question.notes:
                if not note.startswith("Graded with the reference"):
                    out.block(out.paint(note, "red" if note.startswith("Not graded") else "dim"), 4)
            _failed_lines(out, [c for c in question.checks if c.status != PASSED])
        for qid, title in check.unchecked:
            out.line(f"{f'{qid}  {title}':<{width}}  {out.paint('no public check', 'dim')}")
        broken = [u for u in result.units if u.status not in ("ok", "skipped")]
        if broken:
            out.line()
            what = "cell" if result.kind == "notebook" else "statement"
            first = broken[0]
            why = first.error.strip().splitlines()[-1] if first.error.strip() else first.status
            out.line(f"While your {result.kind} ran, {len(broken)} {what}(s) did not finish normally; the first:")
            out.block(f"{first.label}: {why}", 2)
        empty = [a.id for a in result.answers if not a.text]
        if empty:
            out.line(f"Written answers still empty: {', '.join(empty)} (read by your instructor).")
    out.line()
    checks = result.checks
    passed = sum(1 for c in checks if c.status == PASSED)
    if check.passed:
        every = f"All {len(checks)} public checks" if len(checks) != 1 else "The public check"
        out.line(out.paint(f"{every} passed ({result.score:g} / {result.max_score:g} points).", "green"))
    else:
        out.line(out.paint(f"{len(checks) - passed} of {len(checks)} public checks did not pass "
                           f"({result.score:g} / {result.max_score:g} points).", "red"))
    if check.has_hidden:
        out.line("Hidden checks, on other inputs, also count towards your grade: your instructor runs them when "
                 "grading.")
    out.line(f"Report: {check.report.resolve()}")


def _check(args: argparse.Namespace) -> int:
    submission_file(Path(args.submission))  # a mistyped name is said at once, before the sandbox is probed
    layers = isolation.detect(args.sandbox)
    if layers.missing:
        print("warning: your code runs with less isolation than on a Linux machine with bubblewrap: "
              f"{layers.describe()}", file=sys.stderr, flush=True)
    check = check_submission(path=Path(args.submission), out_dir=Path(args.out), assignment=args.assignment,
                             solutions_dir=Path(args.solutions), device=args.device, sandbox=args.sandbox,
                             limit_overrides=args.limit)
    print_summary(check, source=args.submission, colour=wants_colour(sys.stdout))
    if check.result.status == INTERNAL or any(c.status == INTERNAL for c in check.result.checks):
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
    check.add_argument("--sandbox", choices=isolation.MODES, default="auto",
                       help="isolation: auto (every layer this machine offers), require, off (rlimits only)")
    check.set_defaults(run=_check)
