"""A checkout in a private folder (mode 0700, as `mktemp -d` or a home folder gives) grades each assignment's model
solution with full marks in every mode the grader allows, or the mode refuses at start, naming the folder and the
permission that lets it through: never a correct submission marked down for the grader's own set-up.

Run by root, a grader without bubblewrap (``--sandbox partial``) makes each student process uid 65534 on the real
filesystem, which cannot enter a 0700 folder: the Python packages inside it (torch imports more as it trains) are
out of reach. The test mounts the repository inside a fresh 0700 folder, in a mount namespace of its own, and grades
from there with that copy's Python, as a checkout made there would; with bubblewrap, and with ``--sandbox off``, it
must keep full marks; ``partial`` must refuse, then grade with full marks once the way is open (``chmod o+x`` on
the private folder, and the folders above this machine's own Python opened in the namespace).
"""

from __future__ import annotations

import csv
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.check.load import load_assignment
from tests.conftest import ROOT
from tests.no_bubblewrap import path_without_bubblewrap
from tests.open_the_way import opening_script

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="only a grader run by root runs students as another uid; "
                                                           "a user's own 0700 folder is theirs to read")]

SOLUTIONS = ROOT / "solutions"
ASSIGNMENTS = sorted(p.parent.name for p in SOLUTIONS.glob("*/solution.ipynb"))


def _in_private_checkout(private: Path, argv: list[str], *, open_the_way: bool = False) -> list[str]:
    """``argv`` run from ``private``/main, the repository mounted there, in a mount namespace of its own."""
    checkout = private / "main"
    script = ["set -e", f"mkdir -p {shlex.quote(str(checkout))}",
              f"mount --bind {shlex.quote(str(ROOT))} {shlex.quote(str(checkout))}"]
    if open_the_way:
        # The fix the refusal names for the private folder, and the way to this machine's own Python (root's
        # home, say), which the test may not change for real.
        python = [Path(sys.base_prefix), Path(os.path.realpath(sys.executable))]
        script += [f"chmod o+x {shlex.quote(str(private))}", *opening_script(python)]
    script += [f"cd {shlex.quote(str(checkout))}", "exec " + shlex.join(argv)]
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(script)]


def _grade(private: Path, assignment: str, mode: str, work: Path, *, open_the_way: bool = False,
           ) -> subprocess.CompletedProcess[str]:
    submissions, out = work / "submissions", work / f"out-{mode}{'-open' if open_the_way else ''}"
    submissions.mkdir(exist_ok=True)
    shutil.copy(SOLUTIONS / assignment / "solution.ipynb", submissions / "model.ipynb")
    python = private / "main" / Path(sys.prefix).relative_to(ROOT) / "bin" / "python"
    argv = [str(python), "-m", "grader", "grade", assignment, str(submissions), "--out", str(out), "--jobs", "1",
            "--no-similarity", "--sandbox", mode]
    # partial is the mode for a machine without bubblewrap: there, it is hidden (elsewhere it would be used).
    env = {**os.environ, "PATH": path_without_bubblewrap(work / "bin")} if mode == "partial" else None
    return subprocess.run(_in_private_checkout(private, argv, open_the_way=open_the_way), capture_output=True,
                          text=True, timeout=600, check=False, cwd=work, env=env)


def _full_marks(completed: subprocess.CompletedProcess[str], out: Path, assignment: str) -> None:
    """Every automatic point: a written question's come only when someone marks it."""
    assert completed.returncode == 0, completed.stderr[-3000:]
    with (out / "grades.csv").open() as handle:
        (row,) = csv.DictReader(handle)
    written = sum(w.points for w in load_assignment(assignment).written)
    assert float(row["score"]) == float(row["max_score"]) - written, row


@pytest.fixture
def private(tmp_path: Path) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="private-checkout-"))  # 0700, as mktemp -d makes it
    assert folder.stat().st_mode & 0o777 == 0o700
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_model_solution_keeps_full_marks_or_the_mode_refuses_at_start(
        assignment: str, private: Path, tmp_path: Path) -> None:
    if not Path(sys.prefix).is_relative_to(ROOT):
        pytest.skip("the grader's Python is not the checkout's own .venv")
    if not shutil.which("bwrap"):
        pytest.fail("bubblewrap is not installed: run `make system-deps`")
    for mode in ("require", "off"):
        _full_marks(_grade(private, assignment, mode, tmp_path), tmp_path / f"out-{mode}", assignment)
    refused = _grade(private, assignment, "partial", tmp_path)
    assert refused.returncode == 6, refused.stderr[-3000:]
    assert f"{private} (mode 0700" in refused.stderr  # the folder
    assert f"chmod o+x {private}" in refused.stderr  # and the permission that lets it through
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "out-partial").exists()  # refused before anything was graded
    _full_marks(_grade(private, assignment, "partial", tmp_path, open_the_way=True), tmp_path / "out-partial-open",
                assignment)
