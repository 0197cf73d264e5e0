"""The session's student kits (conftest.py's ``kits``), built once for every assignment: a kit that cannot be built
is recorded as such, so that only the tests that need that kit fail, each saying whose kit it is and why; the other
assignments' tests run."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from grader.paths import ASSIGNMENTS_DIR, SOLUTIONS_DIR

FAILED = "{name}.kit-failed"  # beside the kits: why that assignment's kit could not be built


def build_kits(names: Iterable[str], out: Path, *, solutions_dir: Path = SOLUTIONS_DIR,
               assignments_dir: Path = ASSIGNMENTS_DIR) -> None:
    """Each assignment's kit in ``out``; one that fails is written down, not raised."""
    from grader.kit.build import build_kit

    for name in names:
        try:
            build_kit(name, solutions_dir=solutions_dir, assignments_dir=assignments_dir, out_dir=out)
        except Exception:  # any failure of that assignment's own, to tell with its tests only
            (out / FAILED.format(name=name)).write_text(traceback.format_exc(), encoding="utf-8")


class BuiltKits:
    """The kits' folder, as a Path for what reads all of it; ``kits / name`` fails the test that asks for a kit that
    could not be built, naming the assignment and the error."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __truediv__(self, name: str) -> Path:
        failed = self.folder / FAILED.format(name=name)
        if failed.is_file():
            last = failed.read_text(encoding="utf-8").strip().splitlines()[-1]
            pytest.fail(f"the student kit of {name} could not be built ({last}); this test needs it. Another "
                        f"assignment's tests do not: see `grader kit {name}` for the whole error", pytrace=False)
        return self.folder / name

    def __fspath__(self) -> str:
        return str(self.folder)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.folder, attribute)
