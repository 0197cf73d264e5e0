"""What a kit's files import, so that the kit can say what a student must install: the checker's own requirements
(the wheel's), then each package the assignment's templates and provided files import beyond them.

An import inside ``try: ... except ImportError`` (a picture that needs matplotlib, say) is optional: the file runs
without it. Any other is required: ``python practical10.py`` stops at it when it is missing. The kit writes the
required ones to ``requirements.txt`` and its guide lists both.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from grader.discover.program import read_program

REQUIREMENTS_FILE = "requirements.txt"
# Modules whose distribution has another name, for a package not installed where the kit is built.
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "PIL": "pillow", "yaml": "pyyaml", "cv2": "opencv-python"}


@dataclass(frozen=True)
class Needs:
    required: tuple[str, ...]  # distributions, beyond the checker's own
    optional: tuple[str, ...]

    def requirements_txt(self) -> str:
        lines = ["# What this assignment's files import beyond the checker's own requirements (which the wheel",
                 "# brings): pip install <the wheel> -r requirements.txt", *self.required]
        return "\n".join(lines) + "\n"


def needs_sentence(needs: Needs) -> str:
    """The kit guide's sentence on what the assignment's files need besides the checker."""
    if not needs.required and not needs.optional:
        return "This assignment's files need nothing else."
    said = []
    if needs.required:
        said.append(f"This assignment's files also need {', '.join(needs.required)} (in requirements.txt, which the "
                    "command below installs).")
    if needs.optional:
        said.append(f"Optional: {', '.join(needs.optional)} (for pictures; everything else works without).")
    return " ".join(said)


def _units(path: Path) -> list[str]:
    """The file's code as the grader reads a submission (grader/discover/program.py): a notebook's code cells with
    IPython's own syntax (%pip, !ls) made Python, a script's top-level statements."""
    kind = "notebook" if path.suffix == ".ipynb" else "python"
    program = read_program(path.read_bytes(), kind=kind, name=path.name, written_ids=())
    return [unit.source for unit in program.units]


def _guarded(tree: ast.AST) -> set[int]:
    """The import nodes inside a ``try`` whose handlers catch ImportError (or ModuleNotFoundError, or anything)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            caught = [ast.unparse(h.type) if h.type is not None else "" for h in node.handlers]
            if any(c in ("", "Exception", "BaseException") or "ImportError" in c or "ModuleNotFoundError" in c
                   for c in caught):
                guarded |= {id(n) for part in node.body for n in ast.walk(part)}
    return guarded


def imported_modules(paths: Iterable[Path]) -> dict[str, bool]:
    """Top-level module -> whether some import of it is unguarded (required), over every file in ``paths``."""
    found: dict[str, bool] = {}
    for source in (unit for path in paths for unit in _units(path)):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue  # a template is valid Python; anything else is not the kit's to judge
        guarded = _guarded(tree)
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                found[top] = found.get(top, False) or id(node) not in guarded
    return found


def distribution(module: str) -> str:
    """The name pip installs ``module`` by: from the installed packages where it is installed, else the module's."""
    installed = metadata.packages_distributions().get(module)
    return installed[0].lower() if installed else _DISTRIBUTIONS.get(module, module).lower()


def assignment_needs(files: Iterable[Path], *, own: Iterable[str], local: Iterable[str]) -> Needs:
    """What ``files`` import beyond the standard library, ``own`` (the checker's requirements, by distribution) and
    ``local`` (modules the kit holds: provided files, and the checker itself)."""
    own_names = {name.lower() for name in own}
    skipped = set(sys.stdlib_module_names) | set(local) | {"__future__"}
    required, optional = set(), set()
    for module, needed in imported_modules(files).items():
        if module in skipped:
            continue
        name = distribution(module)
        if name in own_names:
            continue
        (required if needed else optional).add(name)
    return Needs(tuple(sorted(required)), tuple(sorted(optional - required)))
