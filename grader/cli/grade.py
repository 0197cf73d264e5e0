"""``grader grade ASSIGNMENT SUBMISSIONS --out OUT``: grade every submission in a folder."""

from __future__ import annotations

import argparse
import os
import resource
import sys
from pathlib import Path

from grader.adjust import LateOverride
from grader.cli.authoring import authoring_warnings
from grader.cli.progress import ProgressDisplay
from grader.discover import LAYOUTS
from grader.discover.layouts import Layout
from grader.execute import isolation
from grader.execute.isolation import Sandbox
from grader.names import terminal_text
from grader.paths import SOLUTIONS_DIR
from grader.pipeline import ClassRun, RunEvents, RunOptions, RunRequest, grade_class
from grader.pipeline.handback import Handback
from grader.record.output import OutputFolder
from grader.results import GRADED
from grader.similar.pages import DEFAULT_THRESHOLD


def _print_plan(to_grade: int, unchanged: int) -> None:
    if unchanged:
        print(f"{unchanged} unchanged since the last run (use --force to regrade); grading {to_grade}.", flush=True)


def _print_selected(to_grade: int, kept: int) -> None:
    print(f"Grading {to_grade} student(s) named with --student; {kept} other(s) reported from the gradebook as they "
          "are.", flush=True)


def _print_sandbox(layers: Sandbox, device: str = "cpu") -> None:
    """Once per run, before grading: which isolation layers protect this machine, and which do not."""
    print(f"{layers.describe()} (grader pid {os.getpid()})", flush=True)
    if exposed := layers.exposure():
        print(f"warning: {exposed} (--sandbox {layers.mode}); the dashboard and the instructor's pages say so; see "
              "docs/security.md", file=sys.stderr, flush=True)
    if device != "cpu" and not (layers.cgroups and "memory" in layers.cgroups.controllers):
        # On the GPU the address-space rlimit is off (CUDA reserves far more than it uses): a memory cgroup is the
        # only cap left on the host's memory.
        print(f"warning: with --device {device} and no memory cgroup, a submission's processes have no memory limit "
              "on this machine", file=sys.stderr, flush=True)


def _late_override(args: argparse.Namespace) -> LateOverride | None:
    if args.deadline is None and args.late_per_day is None and args.late_zero_after is None:
        return None
    return LateOverride(args.deadline, args.late_per_day, args.late_zero_after)


def _print_adjustments(run: ClassRun) -> None:
    """Manual marks and late penalties: what they came to, and every row that could not count (the run goes on)."""
    for line in run.adjustments.summary:
        print(line)
    for problem in run.adjustments.problems:
        print(f"warning: {problem}", file=sys.stderr)


def _handback(args: argparse.Namespace) -> Handback:
    return Handback(similarity_threshold=None if args.no_similarity else args.similarity_threshold,
                    moodle_worksheet=Path(args.moodle_worksheet) if args.moodle_worksheet else None,
                    canvas_gradebook=Path(args.canvas_gradebook) if args.canvas_gradebook else None,
                    canvas_column=args.canvas_column)


def _grade(args: argparse.Namespace) -> int:
    def started(layers: Sandbox, layout: Layout) -> None:  # grade_class detected them, once for the run
        _print_sandbox(layers, args.device)
        print(layout.describe(Path(args.submissions)), flush=True)

    for warning in authoring_warnings([args.assignment], Path(args.solutions)):
        print(warning, file=sys.stderr)
    request = RunRequest(assignment=args.assignment, submissions_dir=Path(args.submissions), out_dir=Path(args.out),
                         solutions_dir=Path(args.solutions), students=tuple(args.student), force=args.force,
                         layout=args.layout, late=_late_override(args), handback=_handback(args))
    options = RunOptions(jobs=args.jobs, device=args.device, sandbox=args.sandbox, limit_overrides=tuple(args.limit),
                         scheduler=args.scheduler)
    explain = _print_selected if args.student else _print_plan
    with ProgressDisplay() as display:
        def planned(to_grade: int, kept: int) -> None:
            explain(to_grade, kept)
            display.planned(to_grade)

        run = grade_class(request, options, RunEvents(progress=display.advance, planned=planned, started=started))
    graded = sum(1 for r in run.summaries if r.status == GRADED)
    unchanged = f", {len(run.unchanged)} unchanged since the last run; of all {len(run.summaries)}" \
        if run.unchanged else ""
    if args.student:
        unchanged = f", {len(run.unchanged)} reported from the gradebook; of all {len(run.summaries)}"
    skipped = [s for s in run.skipped if not s.ignored]
    print(f"Graded {run.graded_now} submission(s) of {run.assignment}{unchanged}: {graded} ran, "
          f"{len(run.summaries) - graded} could not run fully, {len(skipped)} file(s) skipped.")
    if run.regraded:
        print("  graded again in a fresh process, the grader having failed on them once: "
              + ", ".join(map(terminal_text, run.regraded)))
    print(run.rendering.summary())
    if run.graded_now:
        print(run.stages.summary())
    if run.missing:
        print(f"  kept in the gradebook, no submission found now: {', '.join(map(terminal_text, run.missing))}")
    if run.held_back:
        print("  not graded (--student), new or changed since their stored result: "
              f"{', '.join(map(terminal_text, run.held_back))}; grade again without --student to include them")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10)
    _print_adjustments(run)
    if run.job_processes:
        print(f"Peak memory of the grader: {peak:.0f} MiB, and {run.job_processes} job processes of at most "
              f"{run.job_peak_mib} MiB each")
    else:
        print(f"Peak memory of the grader: {peak:.0f} MiB")
    out = OutputFolder(Path(args.out))
    for platform, folder in (("Moodle", out.moodle), ("Canvas", out.canvas)):
        if folder.is_dir():
            print(f"For {platform}: {folder.resolve()} (docs/grading.md says which uploads to do)")
    if run.accounting is not None:
        for line in run.accounting.lines():
            print(line)
    print(f"Dashboard: {run.dashboard.resolve()}")
    if run.internal_errors:
        print(f"error: the grader failed on {run.internal_errors} check(s); see the reports", file=sys.stderr)
        return 3
    if run.accounting is not None and (error := run.accounting.error()) is not None:
        print(f"error: {error.message}", file=sys.stderr)
        return error.exit_code
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    grade = commands.add_parser("grade", help="grade every submission in a folder")
    grade.add_argument("assignment", help="assignment name, a folder in solutions/")
    grade.add_argument("submissions", help="folder of <student>.ipynb, <student>.py or <student>/ submissions")
    grade.add_argument("--out", required=True, help="output folder (reports, grades.csv, gradebook.sqlite)")
    grade.add_argument("--jobs", type=int, default=None,
                       help="submissions graded at once, each by a warm worker (default: the number of cores)")
    grade.add_argument("--scheduler", metavar="ADDRESS",
                       help="grade on a Dask cluster instead of this machine, e.g. tcp://10.0.0.5:8786 (see the "
                            "README: dask scheduler, dask worker); --jobs is then the workers' business")
    grade.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' solutions")
    grade.add_argument("--device", default="cpu", help="torch device for student code (cpu, cuda)")
    grade.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE",
                       help="override one of the assignment's limits, e.g. call_seconds=20 or memory_bytes=2G "
                            "(repeatable; names in grader/execute/limits.py)")
    grade.add_argument("--sandbox", choices=isolation.MODES, default=isolation.DEFAULT_MODE,
                       help=isolation.MODES_HELP)
    grade.add_argument("--layout", choices=LAYOUTS, default="auto",
                       help="how the submissions folder is laid out: auto (detected, the default), flat "
                            "(<student>.ipynb, <student>.py or <student>/), nbgrader "
                            "(submitted/<student>/<assignment>/), gradescope (an unpacked \"Download Submissions\" "
                            "export, with submission_metadata.yml), moodle (an unpacked \"Download all submissions\" "
                            "zip), canvas (an unpacked \"Download Submissions\" zip)")
    grade.add_argument("--moodle-worksheet", metavar="CSV",
                       help="the grading worksheet downloaded from Moodle: OUT/moodle/grading-worksheet.csv is it, "
                            "filled in (without it, the columns Moodle's upload needs)")
    grade.add_argument("--canvas-gradebook", metavar="CSV",
                       help="the gradebook exported from Canvas: OUT/canvas/gradebook-import.csv is it with this "
                            "assignment's column filled in, for Canvas's gradebook import")
    grade.add_argument("--canvas-column", metavar="NAME",
                       help="the gradebook's column for this assignment (its header, title or id), when its title "
                            "does not tell")
    grade.add_argument("--similarity-threshold", type=float, default=DEFAULT_THRESHOLD, metavar="SHARE",
                       help="list on the dashboard the pairs of students whose own code (template and textbook "
                            f"code aside) is at least this share in common for either (default {DEFAULT_THRESHOLD})")
    grade.add_argument("--no-similarity", action="store_true", help="do not compare the submissions' code")
    grade.add_argument("--deadline", metavar="TIME",
                       help="the deadline for this run, instead of the assignment's: ISO 8601 with its offset, e.g. "
                            "2026-12-01T23:59:00+01:00, or a date, time and zone name ('2026-12-01 23:59 "
                            "Europe/Lisbon'), or 'none'; per-student extensions go in OUT/extensions.csv")
    grade.add_argument("--late-per-day", type=float, metavar="FRACTION",
                       help="fraction of the score deducted per started day late (0.10 for 10%%), instead of the "
                            "assignment's late rule")
    grade.add_argument("--late-zero-after", type=float, metavar="DAYS",
                       help="a submission more than DAYS days late scores 0, instead of the assignment's rule")
    grade.add_argument("--force", action="store_true",
                       help="regrade every submission, even those unchanged since the last run into --out")
    grade.add_argument("--student", action="append", default=[], metavar="ID",
                       help="regrade only this student (repeatable), unchanged or not; everyone else's stored "
                            "result in --out is kept and reported as it is")
    grade.set_defaults(run=_grade)
