"""grade_class detects the run's isolation layers and the submissions' layout once, and says so before grading."""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.discover.layouts import Layout
from grader.execute import isolation
from grader.execute.isolation import Sandbox
from grader.pipeline import RunEvents, RunOptions, RunRequest, grade_class

from .conftest import SAMPLES


def test_the_run_tells_its_sandbox_and_layout_once_before_grading(tmp_path: Path) -> None:
    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(SAMPLES / "broken_syntax.py", submissions / "ana.py")  # refused unrun: nothing to execute
    told: list[tuple[str, object]] = []

    def started(layers: Sandbox, layout: Layout) -> None:
        told.append(("started", (layers, layout.name, layout.folder)))

    run = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=submissions, out_dir=tmp_path / "out"),
                      RunOptions(sandbox="off"),
                      RunEvents(planned=lambda to_grade, kept: told.append(("planned", to_grade)), started=started))
    assert told == [("started", (isolation.detect("off"), "flat", submissions)), ("planned", 1)]
    assert [r.student for r in run.results] == ["ana"]


def test_the_submissions_folder_is_looked_at_once_for_its_layout(tmp_path: Path, monkeypatch) -> None:
    """Detection reads the folder (an nbgrader tree, a Moodle download...): the run detects once and discovers in
    what it found, rather than detecting again inside discover()."""
    from grader.discover import layouts
    from grader.pipeline import class_run

    submissions = tmp_path / "class"
    submissions.mkdir()
    shutil.copy(SAMPLES / "broken_syntax.py", submissions / "ana.py")
    calls: list[str] = []
    real = layouts.detect_layout

    def counted(directory: Path, layout: str = "auto") -> Layout:
        calls.append(layout)
        return real(directory, layout)

    monkeypatch.setattr(layouts, "detect_layout", counted)
    monkeypatch.setattr(class_run, "detect_layout", counted)
    grade_class(RunRequest(assignment="attention_scoring", submissions_dir=submissions, out_dir=tmp_path / "out"),
                RunOptions(sandbox="off"))
    assert calls == ["auto"]
