"""The command line, as an instructor runs it: exit codes and what it prints."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import SAMPLES
from .processes import as_from_a_terminal


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=300)


def test_grade_prints_progress_and_the_dashboard(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(SAMPLES / "einsum_style.py", submissions / "ana.py")
    shutil.copy(SAMPLES / "broken_notebook.ipynb", submissions / "ben.ipynb")
    (submissions / "notes.docx").write_bytes(b"PK")
    result = run("grade", "attention_scoring", str(submissions), "--out", str(tmp_path / "out"), "--jobs", "1")
    assert result.returncode == 0, result.stderr
    assert "ana" in result.stdout and "100 / 100" in result.stdout
    assert "invalid: ben.ipynb is not a valid notebook" in result.stdout
    assert "skipped " in result.stdout and "notes.docx" in result.stdout
    assert f"Dashboard: {(tmp_path / 'out' / 'index.html').resolve()}" in result.stdout
    # How long the pages took to render, measured around the rendering, e.g. "2 student pages in 0.02 s (9.1 ms each)"
    assert re.search(r"^Reports: 2 student pages in \d+\.\d+ s \(\d+\.\d ms each\); 2 instructor pages", result.stdout,
                     re.MULTILINE), result.stdout
    # Where the time went, every stage named, summed over the submissions graded
    stages = r"read [\d.]+ s \(\d+%\), execute [\d.]+ s \(\d+%\), check [\d.]+ s \(\d+%\), record [\d.]+ s " \
             r"\(\d+%\), report [\d.]+ s \(\d+%\)"
    assert re.search(r"^Time by stage \(summed over the 2 submission\(s\) graded\): " + stages, result.stdout,
                     re.MULTILINE), result.stdout
    for name in ("grades.csv", "index.html", "gradebook.sqlite", "students/ana/report.html",
                 "students/ana/instructor.html", "students/ben/results.json"):
        assert (tmp_path / "out" / name).is_file()


def test_ctrl_c_keeps_what_was_graded_and_a_rerun_grades_the_rest(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    for index in range(6):
        shutil.copy(SAMPLES / "einsum_style.py", submissions / f"student{index}.py")
    command = [sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out",
               str(tmp_path / "out"), "--jobs", "1"]
    # SIGINT as a terminal's Ctrl-C sends it: to the whole process group, with its default handling restored.
    grading = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
                               preexec_fn=as_from_a_terminal)
    assert grading.stdout is not None
    for line in grading.stdout:  # the first student's line: one result recorded, five to go
        if re.match(r"\[\s*1/6\]", line):
            os.killpg(grading.pid, signal.SIGINT)
            break
    _, err = grading.communicate(timeout=120)
    assert grading.returncode == 130, err
    assert "interrupted: the results recorded so far are kept" in err and "Traceback" not in err
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    graded = re.search(r"Graded (\d) submission\(s\) of attention_scoring, (\d) unchanged since the last run",
                       again.stdout)
    assert graded is not None, again.stdout
    assert int(graded[1]) + int(graded[2]) == 6 and int(graded[2]) >= 1
    assert (tmp_path / "out" / "grades.csv").read_text().count("100") >= 6


def test_instructor_mistakes_exit_with_code_2(tmp_path: Path) -> None:
    unknown = run("grade", "no_such_assignment", str(SAMPLES), "--out", str(tmp_path))
    assert unknown.returncode == 2
    assert "no assignment 'no_such_assignment'" in unknown.stderr and "attention_scoring" in unknown.stderr
    missing = run("grade", "attention_scoring", str(tmp_path / "nowhere"), "--out", str(tmp_path))
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_grading_on_the_gpu_without_a_memory_cgroup_warns_that_nothing_caps_memory(
        capsys: pytest.CaptureFixture[str]) -> None:
    # --sandbox off keeps rlimits only; on the GPU the address-space rlimit is off too (CUDA could not start under it).
    from grader.cli.grade import _print_sandbox
    from grader.execute import isolation

    _print_sandbox(isolation.detect("off"), "cuda")
    assert "with --device cuda and no memory cgroup, a submission's processes have no memory limit" in \
        capsys.readouterr().err
    _print_sandbox(isolation.detect("off"), "cpu")
    assert "no memory limit" not in capsys.readouterr().err
