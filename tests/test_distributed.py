"""Grading on a Dask cluster (--scheduler): a LocalCluster's worker processes grade the sample class with the same
sandbox and checks, and every student gets the same result as when the class is graded on this machine."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.errors import ConfigurationError
from grader.execute import Limits
from grader.paths import SOLUTIONS_DIR
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class
from grader.pipeline.backends.dask import Parcel, grade_parcel
from grader.pipeline.settings import RunSettings

from .conftest import ROOT, SAMPLES

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as local:
        yield local.scheduler_address


def outcomes(run: ClassRun) -> dict[str, tuple]:
    """Per student: status, score and every check's outcome, score and diagnosis."""
    return {r.student: (r.status, r.score, tuple((c.check_id, c.status, c.score, c.diagnosis) for c in r.checks))
            for r in run.results}


def test_the_cluster_grades_the_sample_class_as_this_machine_does(cluster: str, sample_run: ClassRun,
                                                                   tmp_path: Path) -> None:
    remote = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=SAMPLES, out_dir=tmp_path / "out"),
                         RunOptions(scheduler=cluster))
    assert outcomes(remote) == outcomes(sample_run)
    assert remote.internal_errors == 0
    # The files an instructor reads are written by the client as the results arrive, as locally.
    for student in outcomes(remote):
        assert (tmp_path / "out" / "students" / student / "report.html").is_file()
    assert (tmp_path / "out" / "grades.csv").read_text().count("\n") == len(outcomes(remote)) + 1


def test_a_worker_that_would_grade_differently_refuses(tmp_path: Path) -> None:
    source = (SAMPLES / "einsum_style.py").read_bytes()
    parcel = Parcel("ana", "ana.py", "python", source, "2026-01-01T00:00:00+00:00", ())
    settings = RunSettings(assignment="attention_scoring", solutions_dir=SOLUTIONS_DIR, root=tmp_path, device="cpu",
                           limits=Limits(), sandbox="require", fingerprint="0" * 64)
    with pytest.raises(ConfigurationError, match="would grade attention_scoring differently"):
        grade_parcel(parcel, settings)


def test_the_cli_grades_through_a_scheduler(cluster: str, tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    for name in ("textbook.ipynb", "mistake_softmax_axis.py", "broken_syntax.py"):
        (submissions / name).write_bytes((SAMPLES / name).read_bytes())
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out",
                           str(tmp_path / "out"), "--scheduler", cluster], capture_output=True, text=True,
                          timeout=600, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Graded 3 submission(s)" in done.stdout
    assert "textbook" in (tmp_path / "out" / "grades.csv").read_text()
