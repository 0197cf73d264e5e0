"""The user-namespace layout, graded for real by a grader that is not root.

Run by anyone but root, bubblewrap gives each warm worker a user namespace where the zygote and every student
process share one uid, so the kernel's uid check no longer keeps a student from the zygote. These tests grade a
small class through the CLI as uid 65534, each hostile submission followed in the same worker by a correct one:
whatever a student signals, or does to the processes it can reach, it costs that student alone.

This machine may run everything as root. The grader then runs under ``setpriv`` as uid 65534, inside a mount
namespace of its own where every folder on the way to the Python installation, the repository and the class that
others may not enter (root's home, 0700, holding pyenv) is replaced by a tmpfs that shows only the way through
(bind mounts of what it held): nothing on the machine changes, and the namespace dies with the run.
"""

from __future__ import annotations

import csv
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES
from tests.hostile.cases import CASES, Case, solution
from tests.open_the_way import opening_script
from tests.test_hostile import assert_points, report_as_read, student_results, write_cases

pytestmark = pytest.mark.slow

NOBODY = 65534
LIMITS = ("unit_seconds=3", "call_seconds=3", "submission_seconds=150")
ATTACKS = ("kill_parent", "kill_parent_in_call", "kill_everything", "kill_everything_at_import",
           "kill_everything_last", "signal_the_worker_last", "starve_the_worker", "renice_the_worker")

# A correct submission that says what it inherited: graded after each attack in the same worker.
WITNESS = """
print("niceness", os.getpriority(os.PRIO_PROCESS, 0))
"""


WITNESS_CASE = Case("witness", "correct; prints the niceness and CPU limit it inherited",
                    solution(before=WITNESS), mentions=("niceness 0",))


def _as_nobody(argv: list[str], *, visible: list[Path], home: Path) -> list[str]:
    """``argv`` run as uid 65534 in a mount namespace of its own where ``visible`` can be reached (root only)."""
    script = ["set -e", *opening_script(visible)]
    drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
            "env", "-i", f"HOME={home}", f"PATH={os.defpath}", "LANG=C.UTF-8"]
    script.append("exec " + shlex.join([*drop, *argv]))
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", "\n".join(script)]


@dataclass
class NobodyRun:
    out: Path
    completed: subprocess.CompletedProcess[str]

    def results(self, student: str) -> dict:
        return student_results(self.out, student)

    def report_text(self, student: str) -> str:
        return report_as_read(self.out, student)


def _command(work: Path, argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        pytest.skip("running the grader as another user needs util-linux's unshare and setpriv")
    visible = [Path(p) for p in {sys.prefix, sys.base_prefix, os.path.realpath(sys.executable)}] + [ROOT, work]
    return _as_nobody(argv, visible=visible, home=work)


@pytest.fixture(scope="module")
def workspace() -> Iterator[Path]:
    work = Path(tempfile.mkdtemp(prefix="grader-nobody-"))
    if os.geteuid() == 0:
        os.chown(work, NOBODY, NOBODY)
    try:
        probe = subprocess.run(_command(work, [sys.executable, "-c", "from grader.execute import isolation; "
                                               "print(isolation.detect('require').describe())"]),
                               capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
        if "user namespace" not in probe.stdout:
            pytest.skip(f"no user-namespace layout for a non-root grader here: {(probe.stdout + probe.stderr)[-500:]}")
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(workspace: Path) -> NobodyRun:
    """One worker (--jobs 1, students in name order): each attack is followed by a witness and a correct notebook."""
    submissions, out = workspace / "submissions", workspace / "out"
    attacks = [c for c in CASES if c.name in ATTACKS]
    cases = []
    for index, case in enumerate(attacks):
        cases += [Case(f"{index:02d}a_{case.name}", case.why, case.cells, case.kind),
                  Case(f"{index:02d}b_witness", WITNESS_CASE.why, WITNESS_CASE.cells)]
    write_cases(submissions, cases, {"OUT": str(out), "SUBMISSIONS": str(submissions), "PROJECT": str(ROOT),
                                     "PORT": "9", "MARKER": "unused"})
    for index in range(len(attacks)):  # a notebook too, from the sample class
        shutil.copy(SAMPLES / "textbook.ipynb", submissions / f"{index:02d}c_textbook.ipynb")
    for name in ("textbook.ipynb", "einsum_style.py", "older_edition.py"):
        (submissions / name).unlink()
    if os.geteuid() == 0:
        for path in [submissions, *submissions.iterdir()]:
            os.chown(path, NOBODY, NOBODY)
    argv = [sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out", str(out),
            "--jobs", "1", "--sandbox", "require", *(a for limit in LIMITS for a in ("--limit", limit))]
    completed = subprocess.run(_command(workspace, argv), capture_output=True, text=True, timeout=1200,
                               check=False, cwd=ROOT)
    return NobodyRun(out, completed)


def _check(graded: NobodyRun, student: str, case: Case) -> None:
    assert_points(graded.results(student), case)
    for phrase in case.mentions:
        assert phrase in graded.report_text(student), f"{student}: the report should say {phrase!r}"


def test_the_grader_ran_as_a_user_in_a_user_namespace(graded: NobodyRun) -> None:
    assert graded.completed.returncode == 0, graded.completed.stderr[-3000:]
    assert "uid 65534 in a user namespace" in graded.completed.stdout
    with (graded.out / "grades.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == 3 * len(ATTACKS)


@pytest.mark.parametrize("case", [c for c in CASES if c.name in ATTACKS],
                         ids=lambda c: c.name)
def test_an_attack_on_the_worker_costs_its_author_alone(graded: NobodyRun, case: Case) -> None:
    attacks = [c.name for c in CASES if c.name in ATTACKS]
    index = attacks.index(case.name)
    _check(graded, f"{index:02d}a_{case.name}", case)
    # The next two students in that worker: nothing of the attack reached them.
    _check(graded, f"{index:02d}b_witness", WITNESS_CASE)
    textbook = graded.results(f"{index:02d}c_textbook")
    assert textbook["score"] == textbook["extra_data"]["max_score"] == 100, textbook["output"][-3000:]

