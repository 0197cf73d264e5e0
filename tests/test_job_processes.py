"""Parallel jobs as processes (a large class): each job process grades with its own warm worker and writes its
students' files, and the class ends exactly as when the jobs are threads; a job process that dies costs nobody their
result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from grader.adjust import LateOverride, deadline_rule
from grader.check.load import load_assignment
from grader.discover import discover
from grader.execute import isolation
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class
from grader.pipeline.backends import Processes
from grader.pipeline.settings import PagesSettings, RunSettings
from grader.pipeline.stage_times import StageClock

from .conftest import SAMPLES

pytestmark = pytest.mark.slow

LATE = LateOverride(deadline="2026-01-01T00:00:00+00:00", per_day=0.1)  # every sample is late


def outcomes(run: ClassRun) -> dict[str, tuple]:
    return {r.student: (r.status, r.score, r.late, tuple((c.check_id, c.status, c.score, c.diagnosis, c.smallest)
                                                         for c in r.checks)) for r in run.results}


def grade(out: Path, *, processes: bool) -> ClassRun:
    return grade_class(RunRequest(assignment="attention_scoring", submissions_dir=SAMPLES, out_dir=out, late=LATE),
                       RunOptions(jobs=2, job_processes=processes))


def test_job_processes_grade_the_sample_class_as_threads_do(tmp_path: Path) -> None:
    threads = grade(tmp_path / "threads", processes=False)
    (tmp_path / "processes").mkdir()
    # A manual mark already in the output folder is applied by the job process that writes the student's page.
    sheet = (tmp_path / "threads" / "manual.csv").read_text(encoding="utf-8-sig").splitlines()
    rows = [row.replace("textbook,ex1,,0,,", "textbook,ex1,,0,Clear heatmaps,", 1) for row in sheet]
    assert rows != sheet
    (tmp_path / "processes" / "manual.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    processes = grade(tmp_path / "processes", processes=True)
    assert outcomes(processes) == outcomes(threads)
    assert processes.internal_errors == 0 and processes.rendering.pages == len(threads.summaries)
    # Each job process's memory is counted apart from the run's (threads: none).
    assert (threads.job_processes, processes.job_processes) == (0, 2) and processes.job_peak_mib > 0
    assert all(r.late_points > 0 for r in processes.results if r.status == "graded" and r.score > 0)
    assert "Clear heatmaps" in (tmp_path / "processes" / "students" / "textbook" / "report.html").read_text()
    for student in outcomes(threads):
        for name in ("results.json", "report.html", "instructor.html"):
            assert (tmp_path / "processes" / "students" / student / name).is_file(), (student, name)
        page = (tmp_path / "processes" / "students" / student / "report.html").read_text()
        assert "late" in page.lower(), student
    assert (tmp_path / "processes" / "grades.csv").read_text().count("\n") == len(threads.summaries) + 1
    stages = dict(processes.stages.seconds)
    assert stages["execute"] > 0 and stages["check"] > 0 and stages["report"] > 0


def test_submissions_left_by_job_processes_that_died_are_graded_by_the_run_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = load_assignment("attention_scoring")
    submissions, _ = discover(SAMPLES, layout="auto", assignment=spec.name)
    chosen = [s for s in submissions if s.student in ("textbook", "mistake_softmax_axis")]
    layers = isolation.detect()
    # Job processes that cannot start (their assignment does not exist): the pool breaks before grading anything.
    settings = RunSettings(assignment="no_such_assignment", solutions_dir=SAMPLES, root=SAMPLES, device="cpu",
                           limits=spec.limits, sandbox=layers.mode, fingerprint="")
    broken = Processes(2, spec, settings, PagesSettings(tmp_path, deadline_rule(None, spec.late, None)))
    try:
        arrived = list(broken.grade(chosen, StageClock()))
    finally:
        broken.close()
    assert sorted(s.student for s, _, _ in arrived) == ["mistake_softmax_axis", "textbook"]
    scores = {s.student: (result.status, result.score, pages) for s, result, pages in arrived}
    assert scores["textbook"] == ("graded", spec.max_score, None)  # its pages: written by the run, not a job
    assert scores["mistake_softmax_axis"][1] < spec.max_score
    assert "grading the 2 submission(s) left in this process" in capsys.readouterr().err


def test_the_grader_side_never_imports_torch() -> None:
    """Job processes are forked from a server that preloads the grader's modules; torch is the student processes'
    alone (their zygotes import it). Were the grader's side to import it, every run would spend two seconds of a core
    on it before the first result, and each job process 130 MiB more."""
    program = (
        "import sys\n"
        "from grader.check.load import load_assignment\n"
        "from grader.paths import SOLUTIONS_DIR\n"
        "import grader.pipeline.backends.processes, grader.pipeline.backends.dask, grader.pipeline.class_run\n"
        "import grader.report, grader.cli\n"
        "for folder in sorted(SOLUTIONS_DIR.iterdir()):\n"
        "    if (folder / 'checks.py').is_file():\n"
        "        print(load_assignment(folder.name).name)\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=120)
    *assignments, imported = done.stdout.strip().splitlines()
    assert len(assignments) >= 4 and imported == "[]", done.stdout
