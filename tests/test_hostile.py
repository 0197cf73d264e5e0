"""The hostile corpus (tests/hostile/cases.py) graded as one class beside correct submissions, through the real CLI.

Each case must end in the result its Case says, explained in the student's report; the correct submissions keep
full marks; every submission has one row in grades.csv; nothing the submissions started is still running; no file
outside their scratch folders changed; the grader's memory stays bounded. A second, smaller run checks that with
the isolation layers turned off the grader still grades, and says what is not protected.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import re
import resource
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader.execute.cgroups import GROUP, V1_ROOT
from tests.conftest import ROOT, SAMPLES
from tests.hostile.cases import CASES, DAEMON_TAG, QUESTIONS, Case
from tests.processes import student_processes

pytestmark = pytest.mark.slow

CORRECT = ("textbook.ipynb", "einsum_style.py", "older_edition.py")
LIMITS = ("unit_seconds=3", "call_seconds=3", "submission_seconds=150")
MARKER = f"hostile-marker-{os.getpid()}"
# Safe to run without namespaces: they attack nothing outside their own process tree.
UNPROTECTED_CASES = ("loop_at_import", "loop_in_call", "output_flood", "huge_tensor", "sys_exit_py", "lying_tensor")


class Listener:
    """A TCP listener on this machine's loopback that records every connection a submission manages to make."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@dataclass
class HostileRun:
    submissions: Path
    out: Path
    completed: subprocess.CompletedProcess[str]
    children_maxrss_bytes: int
    listener_connections: int
    before: dict[str, str]
    after: dict[str, str]
    grader_pid_prefix: str

    def results(self, student: str) -> dict:
        return student_results(self.out, student)

    def report_text(self, student: str) -> str:
        return report_as_read(self.out, student)


def student_results(out: Path, student: str) -> dict:
    return json.loads((out / "students" / student / "results.json").read_text())


def report_as_read(out: Path, student: str) -> str:
    """The student's report as a reader sees it: tags dropped, entities decoded."""
    page = (out / "students" / student / "report.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def assert_points(results: dict, case: Case) -> None:
    """The case's status, and points lost on its questions and on no other."""
    assert results["extra_data"]["status"] == case.status, results["output"][-2000:]
    scores = {q["id"]: (q["score"], q["max_score"]) for q in results["extra_data"]["questions"]}
    for question in QUESTIONS:
        score, max_score = scores[question]
        if question in case.lost:
            assert score < max_score, f"{case.name} should lose points on {question}"
        else:
            assert score == max_score, f"{case.name} should keep full marks on {question}: {results['output']}"


def _fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def write_cases(folder: Path, cases: list[Case], values: dict[str, str]) -> None:
    folder.mkdir(parents=True)
    for case in cases:
        cells = [_fill(cell, values) for cell in case.cells]
        if case.kind == "py":
            (folder / f"{case.name}.py").write_text("\n\n".join(cells))
        else:
            notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
            nbformat.write(notebook, folder / f"{case.name}.ipynb")
    for name in CORRECT:
        shutil.copy(SAMPLES / name, folder / name)


def snapshot(*folders: Path) -> dict[str, str]:
    """Content hash of every file under the folders (caches left out)."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and ".pytest_cache" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def run_cli(submissions: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out", str(out),
               "--jobs", "2", *(a for limit in LIMITS for a in ("--limit", limit)), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False, cwd=ROOT)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileRun:
    base = tmp_path_factory.mktemp("hostile")
    submissions, out = base / "submissions", base / "out"
    listener = Listener()
    values = {"OUT": str(out), "SUBMISSIONS": str(submissions), "PROJECT": str(ROOT), "PORT": str(listener.port),
              "MARKER": MARKER}
    write_cases(submissions, CASES, values)
    watched = (submissions, ROOT / "solutions", ROOT / "grader", ROOT / "tests" / "submissions")
    before = snapshot(*watched)
    try:
        completed = run_cli(submissions, out, "--sandbox", "require")
    finally:
        listener.close()
    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    pid_line = re.search(r"grader pid (\d+)", completed.stdout)
    return HostileRun(submissions, out, completed, maxrss, listener.connections, before, snapshot(*watched),
                      f"{pid_line.group(1)}-" if pid_line else "")


def test_the_grader_survives_and_each_submission_has_one_row(hostile: HostileRun) -> None:
    assert hostile.completed.returncode == 0, hostile.completed.stderr[-3000:]
    with (hostile.out / "grades.csv").open() as handle:
        students = [row["student"] for row in csv.DictReader(handle)]
    expected = sorted([c.name for c in CASES] + [Path(n).stem for n in CORRECT])
    assert sorted(students) == expected


def test_the_active_layers_are_printed_once_and_recorded(hostile: HostileRun) -> None:
    assert hostile.completed.stdout.count("sandbox: namespaces (bubblewrap") == 1
    environment = hostile.results("textbook")["extra_data"]["environment"]
    assert "bubblewrap" in environment["sandbox"]


@pytest.mark.parametrize("name", [Path(n).stem for n in CORRECT])
def test_correct_submissions_beside_the_hostile_ones_earn_full_marks(hostile: HostileRun, name: str) -> None:
    results = hostile.results(name)
    assert results["score"] == results["extra_data"]["max_score"] == 100


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_hostile_case_gets_its_result(hostile: HostileRun, case: Case) -> None:
    results = hostile.results(case.name)
    assert_points(results, case)
    outcomes = {t["extra_data"]["check_id"]: t["extra_data"]["outcome"] for t in results["tests"]}
    for check_id, outcome in case.checks.items():
        assert outcomes[check_id] == outcome, f"{case.name}: {check_id}"
    report = hostile.report_text(case.name)
    for phrase in case.mentions:
        assert phrase in report, f"{case.name}: the report should say {phrase!r}"


def without_student_source(text: str) -> str:
    """An instructor page less the student's own code (its notebook cells' input, an unreadable file's text, the
    two codes of a similar pair's page)."""
    text = re.sub(r'<div class="input_area">.*?</pre></div>\s*</div>', "", text, flags=re.DOTALL)
    text = re.sub(r'<div class="sides">.*</div>', "", text, flags=re.DOTALL)  # a similar pair's two codes, side by side
    return re.sub(r'<pre class="source">.*?</pre>', "", text, flags=re.DOTALL)


def test_nothing_a_hostile_case_forbids_reached_the_output(hostile: HostileRun) -> None:
    """Pages, exports and the gradebook's numbers are the grader's alone (stored stdout may quote anything; the
    instructor's page shows the student's code, which may hold any phrase, as code)."""
    texts = {str(p): without_student_source(p.read_text()) if p.name == "instructor.html" or p.parent.name == "similar"
             else p.read_text() for p in hostile.out.rglob("*") if p.suffix in (".html", ".csv", ".json")}
    for case in CASES:
        for phrase in case.absent:
            leaked = [path for path, text in texts.items() if phrase in text]
            assert not leaked, f"{case.name}: {phrase!r} found in {leaked}"
    with sqlite3.connect(f"file:{hostile.out / 'gradebook.sqlite'}?mode=ro", uri=True) as book:
        rows = book.execute("SELECT student, score, max_score FROM submissions").fetchall()
    assert len(rows) == len(CASES) + len(CORRECT)
    assert all(0 <= score <= max_score == 100 for _, score, max_score in rows)


def test_nothing_started_by_a_submission_is_still_running(hostile: HostileRun) -> None:
    assert hostile.grader_pid_prefix, "the CLI should print its pid"
    assert not student_processes(int(hostile.grader_pid_prefix[:-1]), also_matching=DAEMON_TAG)
    for controller in ("memory", "pids"):
        parent = V1_ROOT / controller / GROUP
        if parent.is_dir():
            left = [p.name for p in parent.iterdir() if p.is_dir() and p.name.startswith(hostile.grader_pid_prefix)]
            assert not left, f"cgroups left behind: {left}"


def test_no_file_outside_the_scratch_folders_changed(hostile: HostileRun) -> None:
    assert hostile.after == hostile.before
    assert not Path(f"/tmp/{MARKER}").exists()
    assert not (ROOT / "planted.txt").exists()
    expected_names = {"index.html", "grades.csv", "report.html", "instructor.html", "results.json", ".grader.lock",
                      "manual.csv", "lms.csv",  # the written answers to mark; the LMS gradebook import
                      "accounting.json", "student-folders.json"}  # what the run found and wrote; whose folder is whose
    unexpected = [p for p in hostile.out.rglob("*")
                  if p.is_file() and p.name not in expected_names and not p.name.startswith("gradebook.sqlite")
                  and not (p.parent == hostile.out / "similar" and p.suffix == ".html")]  # the instructor's pairs
    assert not unexpected


def test_no_submission_reached_the_loopback_listener(hostile: HostileRun) -> None:
    assert hostile.listener_connections == 0


def test_memory_and_kept_output_stay_bounded(hostile: HostileRun) -> None:
    peak = re.search(r"Peak memory of the grader: (\d+) MiB", hostile.completed.stdout)
    assert peak and int(peak.group(1)) < 6 * 1024
    assert hostile.children_maxrss_bytes < 6 << 30
    flood = hostile.out / "students" / "output_flood"
    assert (flood / "report.html").stat().st_size < 2 << 20
    assert "more characters not kept" in hostile.report_text("output_flood")


def test_without_isolation_layers_the_grader_still_grades_and_says_so(tmp_path: Path) -> None:
    cases = [c for c in CASES if c.name in UNPROTECTED_CASES]
    assert not any(c.namespaces_only for c in cases)
    submissions, out = tmp_path / "submissions", tmp_path / "out"
    values = {"OUT": str(out), "SUBMISSIONS": str(submissions), "PROJECT": str(ROOT), "PORT": "9", "MARKER": MARKER}
    write_cases(submissions, cases, values)
    completed = run_cli(submissions, out, "--sandbox", "off")
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "NOT active: namespaces and cgroups (turned off with --sandbox off)" in completed.stdout
    assert "warning: student code could reach every file the grader's user can read" in completed.stderr
    for case in cases:
        results = json.loads((out / "students" / case.name / "results.json").read_text())
        assert results["extra_data"]["environment"]["sandbox"] == "rlimits"
        lost = {q["id"] for q in results["extra_data"]["questions"] if q["score"] < q["max_score"]}
        assert lost == set(case.lost), case.name
