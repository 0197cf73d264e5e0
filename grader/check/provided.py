"""The files an assignment provides to the student's process (``Assignment(provided=...)``): a reference another
question is graded with, or a harness the students were given; and how each is named in what the student reads."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.discover.program import top_level_names

PROVIDED_PREFIX = "<provided "  # a harness's filename: "<provided reversal.py>"


REFERENCE_FILENAME = "<reference>"  # the filename of every provided file that holds an answer


@dataclass(frozen=True)
class ProvidedFile:
    """A provided file as the student's process runs it. One that defines a name students write holds a reference
    (an answer): its lines are never told; a raise in it is told at the student's line that called it, or, where none
    did, as "the grader's reference code" (grader/check/student.py). Any other (a training harness the students were
    given) is named by its file name, with its own line numbers and text."""

    name: str  # "reversal.py", as the student knows it
    source: str
    reference: bool

    @property
    def filename(self) -> str:
        """What the student's process compiles it under, which no submission's unit is named (the messages read
        it back: grader/check/student.py)."""
        return REFERENCE_FILENAME if self.reference else f"{PROVIDED_PREFIX}{self.name}>"

    @staticmethod
    def read(path: Path, answers: set[str]) -> ProvidedFile:
        source = path.read_text(encoding="utf-8")
        try:
            defined = top_level_names(ast.parse(source))
        except SyntaxError:
            defined = None  # it cannot run either; unknown, so it is treated as holding a reference
        return ProvidedFile(path.name, source, defined is None or bool(defined & answers))

    @property
    def makes_torch_optimizer(self) -> bool:
        """Whether it names ``torch.optim`` (``torch.optim.Adam(...)``, ``from torch import optim``, ``import
        torch.optim``): the first optimiser torch makes imports its compiler (0.8 s), which a worker then pays once
        rather than every student's process."""
        try:
            tree = ast.parse(self.source)
        except SyntaxError:
            return False
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "optim" and isinstance(node.value, ast.Name) \
                    and node.value.id == "torch":
                return True
            if isinstance(node, ast.ImportFrom) and node.module is not None and (
                    node.module.startswith("torch.optim") or (node.module == "torch"
                                                             and any(a.name == "optim" for a in node.names))):
                return True
            if isinstance(node, ast.Import) and any(a.name.startswith("torch.optim") for a in node.names):
                return True
        return False

    def wire(self) -> dict[str, Any]:
        return {"filename": self.filename, "source": self.source, "reference": self.reference}


def provided_name(filename: str) -> str:
    """'reversal.py' for a provided harness's frames ("<provided reversal.py>"), else ''."""
    return filename[len(PROVIDED_PREFIX):-1] if filename.startswith(PROVIDED_PREFIX) and filename.endswith(">") else ""
