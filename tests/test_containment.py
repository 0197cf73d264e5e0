"""The account of what contained a class's code (grader/containment.py), from the results as they were recorded: every
submission graded with a layer missing is counted, whatever else the class holds (runs that never started, results
reused from a protected run), the instructor's exports say so, and nothing of it reaches a student's page or
results.json."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from grader.containment import containment
from grader.export.canvas import CANVAS_DIR, README, write_canvas_exports
from grader.record.gradescope import gradescope_results
from grader.report.render import render_dashboard, render_student_report
from grader.results import EXPOSED, SubmissionResult

ROOT_PARTIAL = ("uid-65534, cgroup-memory, cgroup-pids, rlimits", "partial",
                "student code could reach every file that all users may read; the network")
OFF = ("rlimits", "off", "student code could reach every file the grader's user can read or write; the network")
PROTECTED = ("bubblewrap, seccomp, cgroup-memory, cgroup-pids, rlimits", "require", "")


def result(student: str, how: tuple[str, str, str] | None) -> SubmissionResult:
    environment: dict[str, str] = {"python": "3.11.7"}
    if how is not None:  # None: the file could not be run at all (a syntax error), so no sandbox is recorded
        layers, mode, exposed = how
        environment |= {"sandbox": layers, "sandbox_mode": mode} | ({EXPOSED: exposed} if exposed else {})
    return SubmissionResult(student=student, assignment="toy", source=f"{student}.py", kind="python", sha256="",
                            status="graded" if how else "invalid", reason="" if how else "syntax error",
                            questions=(), units=(), answers=(), notes=(), submitted_at="", graded_at="",
                            duration_s=0.0, environment=tuple(sorted(environment.items())))


classes = st.lists(st.sampled_from([ROOT_PARTIAL, OFF, PROTECTED, None]), max_size=12).map(
    lambda hows: [result(f"s{i}", how) for i, how in enumerate(hows)])


@given(classes)
def test_every_exposed_submission_is_counted_and_said(results: list[SubmissionResult]) -> None:
    account = containment(results)
    exposed = [r for r in results if r.exposed]
    assert account.exposed_count == len(exposed)
    assert account.submissions == len(results)
    assert sum(count for _, count in account.layers) == sum(1 for r in results if "sandbox" in dict(r.environment))
    assert bool(account.warning()) == bool(exposed)
    for text in {r.exposed for r in exposed}:
        assert text in account.warning()
    dashboard = render_dashboard(results, title="Toy", max_score=100)
    assert ("Student code was not fully contained" in dashboard) == bool(exposed)
    if exposed:
        assert f"for {len(exposed)} of {len(results)} submission" in " ".join(dashboard.split())


@given(st.sampled_from([ROOT_PARTIAL, OFF, PROTECTED]))
def test_a_student_never_sees_what_their_code_could_have_reached(how: tuple[str, str, str]) -> None:
    graded = result("ana", how)
    page = render_student_report(graded, title="Toy")
    shown = gradescope_results(graded)["extra_data"]["environment"]
    assert EXPOSED not in shown and shown["sandbox"] == how[0] and shown["sandbox_mode"] == how[1]
    assert "could reach" not in page and "not fully contained" not in page
    assert EXPOSED not in dict(graded.for_student().environment)


def test_canvas_readme_warns_whoever_uploads_the_grades(tmp_path: Path) -> None:
    write_canvas_exports(tmp_path, [], [result("ana", OFF), result("ben", PROTECTED)], gradebook=None)
    readme = (tmp_path / CANVAS_DIR / README).read_text()
    assert "WARNING: 1 of 2 submissions were graded with a layer of the sandbox missing, --sandbox off" in readme
    write_canvas_exports(tmp_path, [], [result("ben", PROTECTED)], gradebook=None)
    assert "WARNING" not in (tmp_path / CANVAS_DIR / README).read_text()
