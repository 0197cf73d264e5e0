"""The session's kits: one assignment's kit that cannot be built fails only the tests that need it, naming that
assignment; the other assignments' kits are built and their tests run (tests/built_kits.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.kit.bundle import KIT_FILE, KIT_FOLDER

from .built_kits import BuiltKits, build_kits
from .conftest import FIXTURE_SOLUTIONS


def test_a_kit_that_cannot_be_built_fails_only_the_tests_that_need_it(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions"
    shutil.copytree(FIXTURE_SOLUTIONS / "positional", solutions / "positional")
    shutil.copytree(FIXTURE_SOLUTIONS / "positional", solutions / "broken")
    (solutions / "broken" / "solution.ipynb").write_text("{ not a notebook", encoding="utf-8")
    out = tmp_path / "kits"
    out.mkdir()
    build_kits(["broken", "positional"], out, solutions_dir=solutions, assignments_dir=tmp_path / "none")
    kits = BuiltKits(out)
    assert (kits / "positional" / KIT_FOLDER / KIT_FILE).is_file()  # built after the one that failed
    with pytest.raises(pytest.fail.Exception) as failed:
        kits / "broken"
    assert str(failed.value).startswith("the student kit of broken could not be built (")
    assert "Another assignment's tests do not" in str(failed.value)
    assert sorted(p.name for p in kits.iterdir() if p.is_dir()) == ["positional"]  # read as the folder it is
