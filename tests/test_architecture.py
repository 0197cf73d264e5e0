"""The architecture held by `make lint` (import-linter, pyproject.toml [tool.importlinter]): the tree as it is keeps
every contract, and an import that breaks the picture fails with the contract's name: a stage importing the
pipeline above it, two modules importing each other, the sandboxed child importing the grader, a package no layer
names."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from .conftest import ROOT

LINT_IMPORTS = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "lint-imports"


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", str(project / "pyproject.toml")],
                          cwd=project, env={**os.environ, "PYTHONPATH": str(project)}, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the package and its contracts, to break."""
    shutil.copytree(ROOT / "grader", tmp_path / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def add_line(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_tree_keeps_every_contract() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout
    assert "Contracts: 3 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(("module", "line", "contract", "said"), [
    ("record/placed.py", "from grader.pipeline import grade_class", "grader's layers",
     "grader.record is not allowed to import grader.pipeline"),
    ("check/compare.py", "from grader.report import render_dashboard", "grader's layers",
     "grader.check is not allowed to import grader.report"),
    ("kit/display.py", "from grader.review import app", "grader's layers",
     "grader.kit is not allowed to import grader.review"),  # siblings marked independent
    ("execute/child/wire.py", "from grader import errors", "the student's process (grader/execute/child)",
     "grader.execute.child.wire -> grader.errors"),
    ("check/variants.py", "from grader.check import runner", "no import circles", "No cycles are allowed in "
                                                                                  "grader.check"),
], ids=["stage_imports_pipeline", "check_imports_report", "kit_imports_review", "child_imports_grader", "circle"])
def test_an_import_against_the_picture_fails_lint_with_the_contract_named(
        project: Path, module: str, line: str, contract: str, said: str) -> None:
    add_line(project / "grader" / module, line)
    done = lint_imports(project)
    assert done.returncode == 1
    broken = done.stdout.split("Broken contracts", 1)[1]
    assert contract in broken and said in " ".join(broken.split())


def test_a_package_no_layer_names_is_refused(project: Path) -> None:
    (project / "grader" / "grades_by_mail").mkdir()
    (project / "grader" / "grades_by_mail" / "__init__.py").write_text('"""Mails each student their grade."""\n')
    done = lint_imports(project)
    assert done.returncode == 1
    assert "grader.grades_by_mail" in done.stdout and "grader's layers" in done.stdout


def test_the_childs_contract_forbids_every_other_part_of_grader() -> None:
    """The "child" contract lists what grader/execute/child may not import; a module added to grader later is on
    that list too, or this fails (the layers contract, being exhaustive, names every top-level one)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (child,) = [c for c in config["contracts"] if c["id"] == "child"]
    grader = ROOT / "grader"
    parts = {f"grader.{p.stem}" for p in grader.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    parts |= {f"grader.execute.{p.stem}" for p in (grader / "execute").iterdir()
              if p.suffix == ".py" and p.stem != "__init__"}
    parts -= {"grader.execute"}
    assert set(child["forbidden_modules"]) == parts
