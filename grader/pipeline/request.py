"""What a class run is asked to do, built once by its caller (the CLI, a test, the soak, the benchmark) and passed
whole to ``grade_class``: what to grade (``RunRequest``), how (``RunOptions``), and what the caller is told as it goes
(``RunEvents``). None of the options or events changes a result; the request says whose results there are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader.adjust import LateOverride
from grader.discover.layouts import Layout
from grader.execute.isolation import Sandbox
from grader.paths import SOLUTIONS_DIR
from grader.pipeline.handback import Handback
from grader.pipeline.recorder import Progress

Planned = Callable[[int, int], None]  # (to grade in this run, unchanged since an earlier run)
Started = Callable[[Sandbox, Layout], None]  # the isolation layers and the submissions' layout, once per run


@dataclass(frozen=True)
class RunRequest:
    """What to grade, and where the results go."""

    assignment: str
    submissions_dir: Path
    out_dir: Path
    solutions_dir: Path = SOLUTIONS_DIR
    students: tuple[str, ...] = ()  # --student: grade only theirs, report everyone else's stored result
    force: bool = False  # grade again what is unchanged since an earlier run
    layout: str = "auto"  # the submissions folder's: auto, flat, nbgrader, gradescope, moodle, canvas
    late: LateOverride | None = None  # the run's --deadline and late rule over the assignment's
    handback: Handback = field(default_factory=Handback)  # what is written for the course beyond the grades


@dataclass(frozen=True)
class RunOptions:
    """How to grade: none of it changes a result."""

    jobs: int | None = None  # submissions graded at once (None: one per core)
    device: str = "cpu"
    sandbox: str = "require"  # the isolation mode: require, auto, off (grader/execute/isolation.py)
    limit_overrides: tuple[str, ...] = ()  # name=value pairs over the assignment's limits
    scheduler: str | None = None  # a Dask scheduler's address: its workers grade (backends/dask.py)
    job_processes: bool | None = None  # parallel jobs as processes or threads (None: processes for a large class)


@dataclass(frozen=True)
class RunEvents:
    """What the caller is told as the run goes."""

    progress: Progress | None = None  # each result as it is recorded
    planned: Planned | None = None  # how many will be graded, before any is
    started: Started | None = None  # the isolation layers and the layout detected, before anything is graded
