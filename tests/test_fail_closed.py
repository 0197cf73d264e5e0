"""Fail closed: without the namespace layer, student code does not run unless the instructor says so, and then every
instructor page says what it could reach.

A submission that looks for the course's solutions and grades itself with the reference it finds
(tests/hostile/cases.py, ``steal_the_reference``) is graded through the real CLI by a grader from which bubblewrap
is hidden (a PATH without it, as on a machine where it was never installed), then with the explicit opt-out, then
with bubblewrap: refused; graded with a banner on the dashboard and the instructor's pages (and the theft shows in
the score); graded again, contained, once bubblewrap is back.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grader.review.server import graded_assignment, serve
from tests.conftest import ROOT, SAMPLES
from tests.hostile.cases import CASES
from tests.no_bubblewrap import path_without_bubblewrap
from tests.test_review_hardening import signed_in

pytestmark = pytest.mark.slow

STEALER = next(c for c in CASES if c.name == "steal_the_reference")
LIMITS = ("unit_seconds=10", "call_seconds=5", "submission_seconds=120")


def write_class(folder: Path) -> None:
    folder.mkdir(parents=True)
    source = "\n\n".join(STEALER.cells).replace("{PROJECT}", str(ROOT))
    (folder / f"{STEALER.name}.py").write_text(source)
    shutil.copy(SAMPLES / "textbook.ipynb", folder / "textbook.ipynb")


def grade(submissions: Path, out: Path, *extra: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path} if path is not None else None
    command = [sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out", str(out),
               "--jobs", "1", "--no-similarity", *(a for limit in LIMITS for a in ("--limit", limit)), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=ROOT, env=env)


def as_read(page: Path) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())))


def q1(out: Path, student: str) -> tuple[float, float]:
    results = json.loads((out / "students" / student / "results.json").read_text())
    question = next(q for q in results["extra_data"]["questions"] if q["id"] == "q1")
    return question["score"], question["max_score"]


def review_overview(out: Path) -> str:
    """The review app's first page for ``out``, through the real server, signed in with the link it prints."""
    review = serve(out, graded_assignment(out, None))
    thread = threading.Thread(target=review.run, daemon=True)
    thread.start()
    try:
        session = signed_in(review)
        status, _, page = session.get("/")
        assert status == 200
        return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.decode())))
    finally:
        review.close()
        thread.join(timeout=10)


def graded_now(completed: subprocess.CompletedProcess[str]) -> int:
    found = re.search(r"Graded (\d+) submission", completed.stdout)
    assert found, completed.stdout[-2000:]
    return int(found.group(1))


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The class, and a PATH on which the grader finds no bubblewrap."""
    base = tmp_path_factory.mktemp("fail_closed")
    write_class(base / "submissions")
    return base, path_without_bubblewrap(base / "bin")


def test_without_bubblewrap_nothing_is_graded_and_the_refusal_says_what_to_do(hidden: tuple[Path, str]) -> None:
    base, path = hidden
    out = base / "refused"
    completed = grade(base / "submissions", out, path=path)
    assert completed.returncode == 6, completed.stderr[-3000:]
    message = completed.stderr
    assert "bubblewrap is not installed" in message
    assert "--sandbox partial" in message and "--sandbox off" in message  # the explicit ways on
    if shutil.which("apt-get"):
        assert "apt-get install bubblewrap" in message  # the command for this system
    assert "Traceback" not in message
    assert message.count("error:") == 1  # one message
    assert not out.exists()  # refused before anything was graded or written
    # grader check and grader kit run code too, and refuse alike.
    check = subprocess.run([sys.executable, "-m", "grader", "check", str(base / "submissions" / "textbook.ipynb"),
                            "--out", str(base / "check")], capture_output=True, text=True, timeout=300, check=False,
                           cwd=ROOT, env={**os.environ, "PATH": path})
    assert check.returncode == 6 and "bubblewrap is not installed" in check.stderr, check.stderr[-2000:]
    kit = subprocess.run([sys.executable, "-m", "grader", "kit", "attention_scoring", "--no-wheel", "--out",
                          str(base / "kit")], capture_output=True, text=True, timeout=300, check=False, cwd=ROOT,
                         env={**os.environ, "PATH": path})
    assert kit.returncode == 6 and "bubblewrap is not installed" in kit.stderr, kit.stderr[-2000:]
    assert "solution" not in kit.stderr.split("refusing")[0]  # never the model solution's fault


def test_with_the_explicit_opt_out_every_instructor_page_says_what_student_code_could_reach(
        hidden: tuple[Path, str]) -> None:
    base, path = hidden
    out = base / "off"
    completed = grade(base / "submissions", out, "--sandbox", "off", path=path)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "warning: student code could reach every file the grader's user can read" in completed.stderr
    # Unprotected, the theft works: exactly what the banner is there to say.
    assert q1(out, STEALER.name)[0] == q1(out, STEALER.name)[1]
    assert "STOLEN-FROM: /" in as_read(out / "students" / STEALER.name / "instructor.html")  # what it printed
    dashboard = as_read(out / "index.html")
    assert "Student code was not fully contained for 2 of 2 submissions" in dashboard
    assert "--sandbox off" in dashboard and "could have read the solutions" in dashboard
    assert "Student code ran in: rlimits" in dashboard
    # The review app, where TAs mark the same class, says it too.
    assert "Student code was not fully contained for 2 of 2 submissions (a layer of the sandbox missing, --sandbox " \
           "off): student code could reach every file" in review_overview(out)
    for student in (STEALER.name, "textbook"):
        instructor = as_read(out / "students" / student / "instructor.html")
        assert "Student code was not fully contained when this submission was graded" in instructor
        # The student's own page and results.json say what protected the run, never what it lacked.
        assert "not fully contained" not in as_read(out / "students" / student / "report.html")
        environment = json.loads((out / "students" / student / "results.json").read_text())["extra_data"][
            "environment"]
        assert environment["sandbox"] == "rlimits" and environment["sandbox_mode"] == "off"
        assert "exposed" not in environment


def test_results_graded_without_the_namespace_layer_are_graded_again_once_it_is_there(
        hidden: tuple[Path, str]) -> None:
    if not shutil.which("bwrap"):
        pytest.fail("bubblewrap is not installed: run `make system-deps`")
    base, path = hidden
    out = base / "again"
    assert grade(base / "submissions", out, "--sandbox", "off", path=path).returncode == 0
    unchanged = grade(base / "submissions", out, "--sandbox", "off", path=path)
    assert graded_now(unchanged) == 0  # same protection: reused as before
    protected = grade(base / "submissions", out)
    assert protected.returncode == 0, protected.stderr[-3000:]
    assert graded_now(protected) == 2  # the unprotected results are not kept
    assert q1(out, STEALER.name)[0] == 0  # contained, it finds nothing to steal
    assert q1(out, "textbook")[0] == q1(out, "textbook")[1]
    dashboard = as_read(out / "index.html")
    assert "not fully contained" not in dashboard
    assert "not fully contained" not in review_overview(out)
    assert re.search(r"Student code ran in: bubblewrap, [^.]*rlimits \(--sandbox require\)", dashboard), dashboard
    with (out / "grades.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 2
    assert "STOLEN-FROM: /" not in as_read(out / "students" / STEALER.name / "instructor.html")  # what it printed
