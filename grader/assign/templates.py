"""Build, compare and write an assignment's student templates from its solution source.

``solutions/<name>/solution.ipynb`` is the one source: ``assignments/<name>/<name>.ipynb`` and ``<name>.py`` are
generated from it (``grader assign``), byte for byte the same on every run, so a test can tell when
``assignments/`` is out of date. Other files in ``assignments/<name>/`` (practical10's ``reversal.py`` harness)
are not generated and are left alone.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from grader.assign.python_version import python_version
from grader.assign.student_notebook import demo_ids, student_notebook
from grader.errors import ConfigurationError
from grader.paths import ASSIGNMENTS_DIR, SOLUTION_SOURCE, SOLUTIONS_DIR


def with_solution_source(solutions_dir: Path = SOLUTIONS_DIR) -> list[str]:
    """The assignments in ``solutions_dir`` that have a solution source, by name."""
    if not solutions_dir.is_dir():
        return []
    return sorted(p.parent.name for p in solutions_dir.glob(f"*/{SOLUTION_SOURCE}"))


def read_solution(name: str, *, solutions_dir: Path = SOLUTIONS_DIR) -> nbformat.NotebookNode:
    path = solutions_dir / name / SOLUTION_SOURCE
    if not path.is_file():
        available = ", ".join(with_solution_source(solutions_dir)) or "none"
        raise ConfigurationError(f"no solution source {path} (assignments with one: {available})")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several kinds for a malformed notebook
        raise ConfigurationError(f"{path} is not a readable notebook: {exc}") from None


def template_files(name: str, *, solutions_dir: Path = SOLUTIONS_DIR,
                   assignments_dir: Path = ASSIGNMENTS_DIR) -> dict[Path, str]:
    """The generated files of assignment ``name`` and their text."""
    solution = read_solution(name, solutions_dir=solutions_dir)
    notebook = student_notebook(solution, name=name)
    folder = assignments_dir / name
    return {folder / f"{name}.ipynb": nbformat.writes(notebook, version=4).rstrip("\n") + "\n",
            folder / f"{name}.py": python_version(notebook, name=name, demos=demo_ids(solution))}


def stale_templates(name: str, *, solutions_dir: Path = SOLUTIONS_DIR,
                    assignments_dir: Path = ASSIGNMENTS_DIR) -> list[Path]:
    """The generated files that are missing or differ from what the solution source gives now."""
    return [path for path, text in template_files(name, solutions_dir=solutions_dir,
                                                  assignments_dir=assignments_dir).items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def write_templates(name: str, *, solutions_dir: Path = SOLUTIONS_DIR,
                    assignments_dir: Path = ASSIGNMENTS_DIR) -> list[Path]:
    """Write the generated files that changed; returns them."""
    written = []
    for path, text in template_files(name, solutions_dir=solutions_dir, assignments_dir=assignments_dir).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="")
            written.append(path)
    return written
