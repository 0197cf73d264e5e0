"""Load an assignment's checks from ``solutions/<name>/`` (a package: checks.py, references, provided code)."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
import types
from pathlib import Path

from grader.check.call_order import with_template_calls
from grader.check.named_mistakes import check_named_mistakes
from grader.check.seeds import course_secret
from grader.check.spec import Assignment
from grader.errors import ConfigurationError
from grader.paths import SOLUTION_SOURCE, SOLUTIONS_DIR

PACKAGE = "_grader_solutions"
IGNORED_PARTS = {"__pycache__"}


def is_assignment(folder: Path) -> bool:
    """The one rule for what an assignment is: a package (``__init__.py``) with its checks (``checks.py``)."""
    return (folder / "__init__.py").is_file() and (folder / "checks.py").is_file()


def available_assignments(solutions_dir: Path = SOLUTIONS_DIR) -> list[str]:
    """The assignments in ``solutions_dir``, by name: what ``grader grade``, ``grader check`` and the tests find."""
    if not solutions_dir.is_dir():
        return []
    return sorted(p.name for p in solutions_dir.iterdir() if is_assignment(p))


def solutions_files(folder: Path) -> list[Path]:
    """The files that make up an assignment's solutions, in a stable order (caches and hidden files left out)."""
    files = []
    for path in folder.rglob("*"):
        parts = path.relative_to(folder).parts
        if path.is_file() and not any(p in IGNORED_PARTS or p.startswith(".") for p in parts) \
                and path.suffix not in (".pyc", ".pyo"):
            files.append(path)
    return sorted(files, key=lambda p: p.relative_to(folder).as_posix())


def load_solution_module(name: str, module: str, *, solutions_dir: Path = SOLUTIONS_DIR) -> types.ModuleType:
    """Import ``solutions_dir/name/module.py`` as part of the assignment's package (relative imports work)."""
    folder = solutions_dir / name
    if not (folder / "__init__.py").is_file():
        available = ", ".join(available_assignments(solutions_dir)) or "none"
        raise ConfigurationError(f"no assignment {name!r} in {solutions_dir} (available: {available})")
    if PACKAGE not in sys.modules:
        root = types.ModuleType(PACKAGE)
        root.__path__ = []
        sys.modules[PACKAGE] = root
    package = f"{PACKAGE}.{name}"
    existing = sys.modules.get(package)
    if existing is None or Path(existing.__file__ or "").parent != folder.resolve():
        spec = importlib.util.spec_from_file_location(package, folder.resolve() / "__init__.py",
                                                      submodule_search_locations=[str(folder.resolve())])
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[package] = loaded
        spec.loader.exec_module(loaded)
        for stale in [m for m in sys.modules if m.startswith(package + ".")]:
            del sys.modules[stale]
    return importlib.import_module(f"{package}.{module}")


def load_assignment(name: str, *, solutions_dir: Path = SOLUTIONS_DIR) -> Assignment:
    """The assignment ``solutions_dir/name``, validated: a mistake the checks name that no variant registers is an
    error here (grader/check/named_mistakes.py), not when a student's submission reaches that check."""
    folder = solutions_dir / name
    if folder.is_dir() and not is_assignment(folder):
        missing = [f for f in ("__init__.py", "checks.py") if not (folder / f).is_file()]
        raise ConfigurationError(f"{folder} is not an assignment: add {' and '.join(missing)} (an empty __init__.py "
                                 "makes it a package; checks.py defines ASSIGNMENT = Assignment(...)), or start one "
                                 "with `grader new NAME`")
    checks = load_solution_module(name, "checks", solutions_dir=solutions_dir)
    assignment = getattr(checks, "ASSIGNMENT", None)
    if not isinstance(assignment, Assignment):
        raise ConfigurationError(f"{solutions_dir / name / 'checks.py'} does not define ASSIGNMENT = Assignment(...)")
    assignment.folder = (solutions_dir / name).resolve()
    assignment.seed_key = course_secret(solutions_dir)
    # The order the checks call each answer's parameters in, as the students' template declares them.
    template = assignment.folder / SOLUTION_SOURCE
    assignment.questions = tuple(dataclasses.replace(q, calls=with_template_calls(q.calls, template, q.defines))
                                 for q in assignment.questions)
    if (assignment.folder / "variants.py").is_file():  # registers the known-wrong variants with ASSIGNMENT
        load_solution_module(name, "variants", solutions_dir=solutions_dir)
    assignment.validate()
    check_named_mistakes(assignment)
    return assignment
