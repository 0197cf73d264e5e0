"""The code every student may hand in without having it counted as shared: the assignment's template (its .py
files) and the textbook's code (d2l 1.0.3's pieces the grader's d2l stand-in holds, and section 11.3 as printed)."""

from __future__ import annotations

import ast
import textwrap
from functools import cache
from pathlib import Path

from grader.paths import ASSIGNMENTS_DIR
from grader.similar.textbook import D2L_11_3

STAND_IN = Path(__file__).resolve().parent.parent / "execute" / "child" / "stubs.py"


@cache
def textbook_code() -> tuple[str, ...]:
    """The textbook's functions and classes, each as its own piece of source.

    Read from the stand-in's file rather than imported: the stand-in builds them with torch, which the parent
    process need not load. Its pieces follow d2l/torch.py (d2l 1.0.3); the section's own text follows them, with the
    MXNet and TensorFlow versions and the examples students paste too.
    """
    text = STAND_IN.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    pieces: list[str] = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == "sequence_mask":
            pieces.append(_lines_of(lines, node))
        if isinstance(node, ast.FunctionDef) and node.name == "_build_textbook":
            for inner in node.body:
                if isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
                    pieces.append(textwrap.dedent(_lines_of(lines, inner)))
    return (*(p for p in pieces if p), D2L_11_3)


def _lines_of(lines: list[str], node: ast.stmt) -> str:
    """A statement's whole lines (from its ``def`` or ``class``, decorators excluded, to its last line).
    ``ast.get_source_segment`` splits the whole file again at every call: 0.5 s for the stand-in's pieces."""
    return "".join(lines[node.lineno - 1:node.end_lineno])


def template_code(assignment: str, assignments_dir: Path = ASSIGNMENTS_DIR) -> tuple[str, ...]:
    """The assignment's Python files as handed out: the template (the notebook's twin) and any module it ships."""
    folder = assignments_dir / assignment
    return tuple(path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.py")))


def boilerplate_for(assignment: str, assignments_dir: Path = ASSIGNMENTS_DIR) -> list[str]:
    """The template's code and the textbook's code, for ``similar_pairs(boilerplate=...)``."""
    return [*template_code(assignment, assignments_dir), *textbook_code()]
