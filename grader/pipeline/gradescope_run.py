"""Grade the one submission Gradescope's autograder hands over, and write the results.json Gradescope reads.

Gradescope runs ``run_autograder`` (in the zip ``grader gradescope`` builds) once per submission, as root, with this
tree (``root`` is ``/autograder``, or ``$AUTOGRADER_ROOT``)::

    root/source/                     the zip: the grader, templates/, solutions/<assignment>/, autograder.json
    root/submission/                 the files the student uploaded, under whatever names they chose
    root/submission_metadata.json    who submitted, and when (created_at)
    root/results/results.json        written here, whatever happens

A submission that cannot be read or run gets a result that says why (as in a class run); a failure of the grader
itself gets one that says it is not the student's fault, with the traceback in the autograder's stdout, which
Gradescope shows to the instructor only. ``grader gradescope-run`` (grader/cli/gradescope.py) is what
``run_autograder`` runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import grader
from grader.check.load import load_assignment
from grader.discover.gradescope import find_submission, read_submission_metadata
from grader.errors import SandboxUnavailable
from grader.execute import isolation, lifetime
from grader.export.autograder_zip import CONFIG
from grader.files import write_text_atomic
from grader.paths import SOLUTIONS_DIR
from grader.pipeline.submission_run import grade_submission, grader_failed_result
from grader.points import shown
from grader.record.autograder_results import autograder_results
from grader.results import SubmissionResult

DEFAULT_ROOT = "/autograder"
RESULTS = Path("results") / "results.json"  # under the root: where Gradescope reads the student's result


def unconfigured(message: str) -> dict[str, Any]:
    """results.json when the autograder cannot grade at all (its assignment does not load): Gradescope needs one."""
    return {"score": 0, "output": f"The autograder could not grade your submission: {message}. This is not your "
                                  "fault; tell your instructor.",
            "output_format": "text", "stdout_visibility": "hidden", "tests": []}


def _print_for_instructor(result: SubmissionResult) -> None:
    """The autograder's stdout, which Gradescope shows to the instructor: every check, hidden ones' detail included."""
    print(f"{result.student}: {result.source}, {result.status}, {shown(result.score)} / {shown(result.max_score)}"
          f"{' (' + result.reason + ')' if result.reason else ''}")
    for check in result.checks:
        print(f"  {check.check_id:<32} {check.visibility:<7} {check.status:<10} "
              f"{shown(check.score)}/{shown(check.max_score)}  {check.message[:200]}")
    for note in result.notes:
        print(f"  note: {note}")


def grade_gradescope_submission(*, root: Path, assignment: str, solutions_dir: Path = SOLUTIONS_DIR,
                                sandbox: str = "partial", again: bool = True) -> dict[str, Any]:
    """Grade ``root/submission`` for ``assignment`` and write ``root/results/results.json``; return what was written.

    Never raises for anything a submission or the grader does: results.json is always written. When the grader
    fails on the submission (``again``), it is graded once more by a fresh interpreter before anything is written.
    """
    started = time.monotonic()
    results_path = root / RESULTS
    try:
        spec = load_assignment(assignment, solutions_dir=solutions_dir)
    except Exception as exc:  # the zip is broken: say so to the student, and in full to the instructor
        traceback.print_exc()
        data = unconfigured(f"its assignment {assignment!r} does not load ({type(exc).__name__})")
        write_text_atomic(results_path, json.dumps(data, indent=2) + "\n")
        return data
    metadata = read_submission_metadata(root)
    submission = find_submission(root / "submission", metadata)
    try:
        layers = isolation.detect(sandbox)
        print(f"grader {grader.__version__} from {Path(grader.__file__).parent}; {layers.describe()}", flush=True)
        result = grade_submission(submission=submission, assignment=spec, root=root / "submission", sandbox=layers)
    except SandboxUnavailable as exc:  # this machine's, the same on a second try: said once, plainly
        print(f"error: {exc.message}", flush=True)
        again = False
        result = grader_failed_result(submission, spec, root / "submission", detail=exc.message,
                                      duration_s=round(time.monotonic() - started, 3))
    except Exception:
        traceback.print_exc()
        result = grader_failed_result(submission, spec, root / "submission", detail=traceback.format_exc(),
                                      duration_s=round(time.monotonic() - started, 3))
    if again and result.grader_failed and (retried := _in_a_fresh_process(root, assignment, solutions_dir, sandbox)):
        return retried
    data = autograder_results(result)
    write_text_atomic(results_path, json.dumps(data, indent=2) + "\n")
    _print_for_instructor(result)  # after results.json: a failure to print must not cost the student their result
    return data


def _in_a_fresh_process(root: Path, assignment: str, solutions_dir: Path, sandbox: str) -> dict[str, Any] | None:
    """What a fresh interpreter, grading the submission again, wrote to results.json; None when it wrote nothing."""
    print("the grader failed on this submission (above); grading it again in a fresh process", flush=True)
    results_path = root / RESULTS
    results_path.unlink(missing_ok=True)
    source = str(Path(grader.__file__).resolve().parent.parent)  # where this grader is, installed or not
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (source, os.environ.get("PYTHONPATH")))),
                   lifetime.OWNER_ENV: str(lifetime.this_process())}  # it ends with this process, killed or not
    subprocess.run([sys.executable, "-m", "grader", "gradescope-run", "--root", str(root), "--assignment",
                    assignment, "--solutions", str(solutions_dir), "--sandbox", sandbox, "--once"],
                   env=environment, check=False)
    try:
        return json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def configured_assignment(source: Path) -> str:
    """The assignment the zip was built for: ``CONFIG`` in ``source``, the zip's copy of the project."""
    return str(json.loads((source / CONFIG).read_text(encoding="utf-8"))["assignment"])


def write_unconfigured(root: Path, message: str) -> None:
    """results.json for an autograder that does not know what to grade."""
    write_text_atomic(root / RESULTS, json.dumps(unconfigured(message), indent=2) + "\n")
