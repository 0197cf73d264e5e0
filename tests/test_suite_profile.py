"""The suite's profile (tests/suite_profile.py), as docs/performance.md runs it: a line per test with its wall time,
the machine's CPU-seconds and the warm workers it started, and a table by file at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

PROFILED = """
import time

from grader.execute import Limits, isolation
from grader.execute.workers import Worker


def test_spins():
    until = time.process_time() + 0.4
    while time.process_time() < until:
        pass


def test_starts_a_warm_worker():
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=Limits())
    try:
        worker.start()
    finally:
        worker.close()
"""


def test_each_test_has_its_wall_time_cpu_seconds_and_workers_and_the_files_a_table(tmp_path: Path) -> None:
    (tmp_path / "test_profiled.py").write_text(PROFILED, encoding="utf-8")
    rows_path = tmp_path / "profile.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.suite_profile", "-p", "no:cacheprovider",
                           str(tmp_path / "test_profiled.py")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SUITE_PROFILE": str(rows_path), "PYTEST_ADDOPTS": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {row["id"].split("::")[1]: row for row in map(json.loads, rows_path.read_text().splitlines())}
    assert set(rows) == {"test_spins", "test_starts_a_warm_worker"}
    assert rows["test_spins"]["cpu"] >= 0.3 and rows["test_spins"]["wall"] >= 0.3
    assert rows["test_spins"]["workers"] == 0
    assert rows["test_starts_a_warm_worker"]["workers"] == 1
    assert 0 < rows["test_starts_a_warm_worker"]["worker_start_s"] <= rows["test_starts_a_warm_worker"]["wall"]
    assert "where the time went" in done.stdout
    assert "1 warm worker(s) started" in done.stdout
    (line,) = [line for line in done.stdout.splitlines() if "test_profiled.py" in line and "::" not in line]
    assert line.split()[-1] == "1", line  # the file's row: its one warm worker
