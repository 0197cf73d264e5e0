"""Grade the one submission Gradescope's autograder hands over, and write the results.json Gradescope reads.

Gradescope runs ``run_autograder`` (in the zip ``grader gradescope`` builds) once per submission, as root, with this
tree (``root`` is ``/autograder``, or ``$AUTOGRADER_ROOT``)::

    root/source/                     the zip: the grader, templates/, solutions/<assignment>/, autograder.json
    root/submission/                 the files the student uploaded, under whatever names they chose
    root/submission_metadata.json    who submitted, and when (created_at)
    root/results/results.json        written here, whatever happens

A submission that cannot be read or run gets a result that says why (as in a class run); a failure of the grader
itself gets one that says it is not the student's fault, with the traceback in the autograder's stdout, which
Gradescope shows to the instructor only. ``python -m grader.pipeline.gradescope_run`` is what ``run_autograder`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grader
from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover.finder import Submission, candidates, choose_submission, modified_at
from grader.discover.gradescope_export import safe_student_id
from grader.discover.times import parse_submission_time
from grader.execute import isolation
from grader.layout import PROJECT_ROOT, SOLUTIONS_DIR
from grader.pipeline.submission_run import grade_submission, unrun_questions
from grader.record.atomic import write_text_atomic
from grader.record.autograder_results import autograder_results
from grader.results import INTERNAL, SubmissionResult

CONFIG = "autograder.json"  # written into the zip: {"assignment": ..., "grader_version": ...}
DEFAULT_ROOT = "/autograder"


def read_metadata(root: Path) -> dict[str, Any]:
    """Gradescope's submission_metadata.json, or {} when it is missing or unreadable (a local test run)."""
    try:
        data = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _users(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    return [u for u in metadata.get("users") or [] if isinstance(u, dict)]


def student_of(metadata: dict[str, Any]) -> str:
    """The submitter's id (the first one of a group): their SID where the metadata has one, else their e-mail, as in
    a Gradescope export (so grading the export again draws the same random cases), else Gradescope's user id;
    'student' without metadata. It seeds the random checks, as a student id does in a class run."""
    for user in _users(metadata):
        for key in ("sid", "email", "id"):
            if str(user.get(key) or "").strip():
                return safe_student_id(str(user[key])) or "student"
    return "student"


def find_submission(folder: Path, metadata: dict[str, Any]) -> Submission:
    """The file to grade among those the student uploaded (the newest readable notebook or .py, whatever its name)."""
    student = student_of(metadata)
    submitted_at = parse_submission_time(metadata.get("created_at"))
    users = _users(metadata)
    notes = (f"group submission by {', '.join(str(u.get('name') or u.get('email')) for u in users)}",) \
        if len(users) > 1 else ()
    files = candidates(folder) if folder.is_dir() else []
    if not files:
        found = ", ".join(sorted(p.name for p in folder.iterdir())) if folder.is_dir() else ""
        problem = (f"your submission holds no notebook (.ipynb) or Python file (.py) (found: {found or 'nothing'}): "
                   "upload your notebook or .py file")
        when = submitted_at or (modified_at(folder) if folder.exists() else datetime.now(UTC))
        return Submission(student, folder, "notebook", when, notes, problem)
    return choose_submission(student, files, directory=folder, submitted_at=submitted_at, notes=notes)


def _failed(submission: Submission, spec: Assignment, root: Path, started: float) -> SubmissionResult:
    """The result of a submission the grader itself failed on: no points lost to a student's fault, a reason."""
    reason = "the grader itself failed on this submission (not the student's fault)"
    return SubmissionResult(
        student=submission.student, assignment=spec.name, source=str(submission.path.relative_to(root)),
        kind=submission.kind, sha256="", status=INTERNAL, reason=reason,
        questions=unrun_questions(spec, submission.student, f"not run: {reason}"), units=(), answers=(),
        notes=(), grader_trace=traceback.format_exc()[-2000:],
        submitted_at=submission.submitted_at.isoformat(timespec="seconds"),
        graded_at=datetime.now(UTC).isoformat(timespec="seconds"), duration_s=round(time.monotonic() - started, 3))


def _unconfigured(message: str) -> dict[str, Any]:
    """results.json when the autograder cannot grade at all (its assignment does not load): Gradescope needs one."""
    return {"score": 0, "output": f"The autograder could not grade your submission: {message}. This is not your "
                                  "fault; tell your instructor.",
            "output_format": "text", "stdout_visibility": "hidden", "tests": []}


def _print_for_instructor(result: SubmissionResult) -> None:
    """The autograder's stdout, which Gradescope shows to the instructor: every check, hidden ones' detail included."""
    print(f"{result.student}: {result.source}, {result.status}, {result.score:g} / {result.max_score:g}"
          f"{' (' + result.reason + ')' if result.reason else ''}")
    for check in result.checks:
        print(f"  {check.check_id:<32} {check.visibility:<7} {check.status:<10} {check.score:g}/{check.max_score:g}"
              f"  {check.message[:200]}")
    for note in result.notes:
        print(f"  note: {note}")


def grade_gradescope_submission(*, root: Path, assignment: str, solutions_dir: Path = SOLUTIONS_DIR,
                                sandbox: str = "auto", again: bool = True) -> dict[str, Any]:
    """Grade ``root/submission`` for ``assignment`` and write ``root/results/results.json``; return what was written.

    Never raises for anything a submission or the grader does: results.json is always written. When the grader
    fails on the submission (``again``), it is graded once more by a fresh interpreter before anything is written.
    """
    started = time.monotonic()
    results_path = root / "results" / "results.json"
    try:
        spec = load_assignment(assignment, solutions_dir=solutions_dir)
    except Exception as exc:  # the zip is broken: say so to the student, and in full to the instructor
        traceback.print_exc()
        data = _unconfigured(f"its assignment {assignment!r} does not load ({type(exc).__name__})")
        write_text_atomic(results_path, json.dumps(data, indent=2) + "\n")
        return data
    metadata = read_metadata(root)
    submission = find_submission(root / "submission", metadata)
    try:
        layers = isolation.detect(sandbox)
        print(f"grader {grader.__version__} from {Path(grader.__file__).parent}; {layers.describe()}", flush=True)
        result = grade_submission(submission=submission, assignment=spec, root=root / "submission", sandbox=layers)
    except Exception:
        traceback.print_exc()
        result = _failed(submission, spec, root / "submission", started)
    if again and result.grader_failed and (retried := _in_a_fresh_process(root, assignment, solutions_dir, sandbox)):
        return retried
    data = autograder_results(result)
    write_text_atomic(results_path, json.dumps(data, indent=2) + "\n")
    _print_for_instructor(result)  # after results.json: a failure to print must not cost the student their result
    return data


def _in_a_fresh_process(root: Path, assignment: str, solutions_dir: Path, sandbox: str) -> dict[str, Any] | None:
    """What a fresh interpreter, grading the submission again, wrote to results.json; None when it wrote nothing."""
    print("the grader failed on this submission (above); grading it again in a fresh process", flush=True)
    results_path = root / "results" / "results.json"
    results_path.unlink(missing_ok=True)
    source = str(Path(grader.__file__).resolve().parent.parent)  # where this grader is, installed or not
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (source, os.environ.get("PYTHONPATH"))))}
    subprocess.run([sys.executable, "-m", "grader.pipeline.gradescope_run", "--root", str(root), "--assignment",
                    assignment, "--solutions", str(solutions_dir), "--sandbox", sandbox, "--once"],
                   env=environment, check=False)
    try:
        return json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _configured_assignment(source: Path) -> str:
    return str(json.loads((source / CONFIG).read_text(encoding="utf-8"))["assignment"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.pipeline.gradescope_run",
                                     description="Grade the submission in a Gradescope autograder's tree")
    parser.add_argument("--root", default=os.environ.get("AUTOGRADER_ROOT", DEFAULT_ROOT),
                        help="Gradescope's /autograder (default: $AUTOGRADER_ROOT, else /autograder)")
    parser.add_argument("--assignment", help=f"the assignment (default: the one in {CONFIG} beside the grader)")
    parser.add_argument("--solutions", default=str(SOLUTIONS_DIR), help=argparse.SUPPRESS)
    parser.add_argument("--sandbox", choices=isolation.MODES, default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--once", action="store_true", help=argparse.SUPPRESS)  # the retry itself: no third try
    args = parser.parse_args(argv)
    root = Path(args.root)
    try:
        assignment = args.assignment or _configured_assignment(PROJECT_ROOT)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: no assignment given and {PROJECT_ROOT / CONFIG} does not name one ({exc})", file=sys.stderr)
        data = _unconfigured(f"it does not say which assignment it grades ({CONFIG} is missing)")
        write_text_atomic(root / "results" / "results.json", json.dumps(data, indent=2) + "\n")
        return 2
    grade_gradescope_submission(root=root, assignment=assignment, solutions_dir=Path(args.solutions),
                                sandbox=args.sandbox, again=not args.once)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
