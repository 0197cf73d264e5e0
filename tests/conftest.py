"""Shared fixtures: the project's paths, which assignments each kind of test covers, and one grading run of the bundled
sample class."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

from grader.assign import with_solution_source
from grader.check.load import available_assignments
from grader.paths import SOLUTIONS_DIR
from grader.pipeline import ClassRun

from . import parallel
from .built_kits import BuiltKits, build_kits

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from .bundled_classes import BundledClasses

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"  # sample submissions, a folder per assignment
SAMPLES = SUBMISSIONS / "attention_scoring"
FIXTURE_SOLUTIONS = ROOT / "tests" / "fixtures" / "solutions"
# A submission that earns full marks in the toy assignment (tests/fixtures/solutions/toy), the smallest to grade.
TOY_CORRECT = """\
def scale(x):
    return x * 2


def twice_scaled(x):
    return scale(scale(x))


counter = 0


def bump():
    global counter
    counter += 1
    return counter
"""


# Property-based tests draw the same examples on every run (derandomize), so that a suite that passed passes again and
# a failure found is a defect, not luck; no deadline, as a loaded 2-core machine is slow. `pytest
# --hypothesis-profile=explore` draws new examples, many more of them, to look for what the fixed ones miss.
settings.register_profile("default", derandomize=True, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile("explore", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile("default")


# Which assignments a test covers is found, never listed: a new solutions/<name>/ is tested for what it has.
def with_templates(solutions_dir: Path = SOLUTIONS_DIR) -> list[str]:
    """Assignments whose student templates come from a solution notebook (tests/test_assignment_templates.py)."""
    assignments = set(available_assignments(solutions_dir))
    return [name for name in with_solution_source(solutions_dir) if name in assignments]


def with_variants(solutions_dir: Path = SOLUTIONS_DIR) -> list[str]:
    """Assignments with a catalogue of known mistakes, variants.py: the mutation test's (tests/test_variants.py)."""
    return [name for name in available_assignments(solutions_dir) if (solutions_dir / name / "variants.py").is_file()]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# Measurements a test wants in the log whatever the outcome (e.g. how long rendering one student page takes).
MEASURED: dict[str, str] = {}


# The suite on several cores (tests/parallel.py): which files go together, and what each worker measured.
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    return parallel.make_scheduler(config, log) if config.getvalue("dist") == "loadfile" else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    parallel.record_groups(config, items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workeroutput"):  # a worker's measurements go back to the controller
        session.config.workeroutput["measured"] = json.dumps(MEASURED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    MEASURED.update(json.loads(getattr(node, "workeroutput", {}).get("measured", "{}")))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if MEASURED:
        terminalreporter.section("measured")
        for name, value in MEASURED.items():
            terminalreporter.write_line(f"{name}: {value}")


@pytest.fixture(scope="module", autouse=True)
def _warm_workers_end_with_the_module() -> Iterator[None]:
    """The warm workers a module's tests graded with (tests/warm_workers.py) stop when its last test has run."""
    from .warm_workers import close_all

    yield
    close_all()


@pytest.fixture(scope="module")
def warm_class_runs() -> Iterator[None]:
    """A module's small class runs share its warm workers (tests/warm_workers.py), closed with the module. For
    modules that grade many small classes and do not look at a run's processes; a module opts in with
    ``pytestmark = pytest.mark.usefixtures("warm_class_runs")``."""
    from .warm_workers import class_runs_on_module_workers

    with class_runs_on_module_workers():
        yield


@pytest.fixture(scope="session")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> BundledClasses:
    """Every assignment's sample class and real-style corpus, each graded once per session when first asked for
    (tests/bundled_classes.py): the per-assignment tests, the real-style tests and the tolerance margins share them."""
    from .bundled_classes import BundledClasses

    return BundledClasses(tmp_path_factory.mktemp("bundled"))


@pytest.fixture(scope="session")
def sample_run(bundled: BundledClasses) -> ClassRun:
    """The bundled sample class graded once, as `make grade` does."""
    return bundled.run("attention_scoring")


@pytest.fixture(scope="session")
def mutants(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ClassRun]:
    """Each assignment's model solution and one mutant per known mistake (tests/mutants.py), graded as a class once
    per session: the mutation test and the kit's parity sweep read the same run."""
    from .mutants import graded_mutants

    runs: dict[str, ClassRun] = {}

    def graded(assignment: str) -> ClassRun:
        if assignment not in runs:
            runs[assignment] = graded_mutants(assignment, tmp_path_factory.mktemp(f"mutants_{assignment}"))
        return runs[assignment]

    return graded


@pytest.fixture(scope="session")
def kits(tmp_path_factory: pytest.TempPathFactory) -> BuiltKits:
    """Every assignment's student kit, built once (`grader kit --no-wheel`): dist/<name>/. One that cannot be built
    fails only the tests that ask for it (tests/built_kits.py)."""
    with parallel.shared_folder(tmp_path_factory, "kits") as (out, made):  # once for all the session's workers
        if not made:
            build_kits(with_templates(), out)  # a kit is recorded from the solution notebook
    return BuiltKits(out)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Headless Chromium (the system's, tests/browser.py), one per test module."""
    from .browser import chromium, chromium_path

    if chromium_path() is None:
        pytest.fail("no Chromium: `make system-deps` installs Debian's chromium (as root), or set CHROMIUM")
    with chromium(browser_log=True) as launched:  # Chromium's own output shown with a failing test
        yield launched
