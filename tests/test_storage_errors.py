"""A machine that refuses to store what the grader writes (a full disk, a read-only output folder) ends the run with
exit code 5 and a message that says so, what was graded stays, and the same command, once there is room, grades
only the rest.

The output folder is a small tmpfs mounted for the test (root only: skipped with the reason elsewhere), so the disk
fills up for real while job processes write their students' pages and the run records its gradebook.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import FIXTURE_SOLUTIONS, ROOT, TOY_CORRECT

pytestmark = pytest.mark.slow

CLASS_SIZE = 40  # job processes grade a class this large (PROCESSES_FROM): their writes fail too, not only the run's
# Room for the gradebook's journal and the pages of a few students of the toy assignment (about 70 KiB each), not 40.
SMALL_DISK = "600k"


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An empty tmpfs of SMALL_DISK, unmounted after the test."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = _mount("-t", "tmpfs", "-o", f"size={SMALL_DISK}", "tmpfs", str(folder))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root and a kernel that allows it): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def toy_class(folder: Path, size: int) -> Path:
    folder.mkdir()
    for index in range(size):
        (folder / f"s{index:02d}.py").write_text(TOY_CORRECT, encoding="utf-8")
    return folder


def grade(submissions: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", "grade", "toy", str(submissions), "--out", str(out),
                           "--solutions", str(FIXTURE_SOLUTIONS), "--no-similarity", "--jobs", "2"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def recorded(out: Path) -> set[str]:
    with sqlite3.connect(f"file:{out / 'gradebook.sqlite'}?mode=ro", uri=True) as book:
        return {student for (student,) in book.execute("SELECT student FROM submissions")}


def test_a_full_disk_ends_the_run_with_exit_5_and_once_there_is_room_the_same_command_grades_the_rest(
        tmp_path: Path, small_disk: Path) -> None:
    submissions = toy_class(tmp_path / "class", CLASS_SIZE)
    out = small_disk / "out"
    started = time.monotonic()
    full = grade(submissions, out)
    took = time.monotonic() - started
    assert full.returncode == 5, full.stdout + full.stderr
    said = full.stderr.strip().splitlines()[-1]
    assert said.startswith("error: ") and "the disk holding" in said and "is full" in said, full.stderr
    kept = recorded(out)
    assert 0 < len(kept) < CLASS_SIZE, kept
    assert f"{len(kept)} of {CLASS_SIZE} students graded and recorded" in said, said
    # A refused write is the machine's doing, not the grader failing on a submission: nothing graded again.
    assert "Traceback" not in full.stderr and "grading them again" not in full.stderr, full.stderr
    assert took < 60, f"the run went on grading into a full disk for {took:.0f} s"

    grown = _mount("-o", "remount,size=64m", str(small_disk))
    assert grown.returncode == 0, grown.stderr
    again = grade(submissions, out)
    assert again.returncode == 0, again.stdout + again.stderr
    # What was recorded is reused, the rest graded: every student once.
    assert f"{len(kept)} unchanged since the last run (use --force to regrade); grading {CLASS_SIZE - len(kept)}." \
        in again.stdout, again.stdout
    assert re.search(rf"^Graded {CLASS_SIZE - len(kept)} submission\(s\) of toy, {len(kept)} unchanged", again.stdout,
                     re.MULTILINE), again.stdout
    assert len(recorded(out)) == CLASS_SIZE
    assert (out / "grades.csv").read_text(encoding="utf-8").count("\n") == CLASS_SIZE + 1
    assert not list(out.rglob("*.tmp")), "partial writes left behind"


def test_a_read_only_output_folder_ends_the_run_with_exit_5_and_says_so(tmp_path: Path, small_disk: Path) -> None:
    submissions = toy_class(tmp_path / "class", 2)
    read_only = _mount("-o", "remount,ro", str(small_disk))
    assert read_only.returncode == 0, read_only.stderr
    refused = grade(submissions, small_disk)
    assert refused.returncode == 5, refused.stdout + refused.stderr
    said = refused.stderr.strip().splitlines()[-1]
    assert said.startswith("error: ") and f"{small_disk} is on a read-only file system" in said, refused.stderr
    assert "Traceback" not in refused.stderr
