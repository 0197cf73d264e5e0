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
    tree = ast.parse(text)
    pieces: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "sequence_mask":
            pieces.append(ast.get_source_segment(text, node) or "")
        if isinstance(node, ast.FunctionDef) and node.name == "_build_textbook":
            for inner in node.body:
                if isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
                    pieces.append(textwrap.dedent(ast.get_source_segment(text, inner, padded=True) or ""))
    return (*(p for p in pieces if p), D2L_11_3)


def template_code(assignment: str, assignments_dir: Path = ASSIGNMENTS_DIR) -> tuple[str, ...]:
    """The assignment's Python files as handed out: the template (the notebook's twin) and any module it ships."""
    folder = assignments_dir / assignment
    return tuple(path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.py")))


def boilerplate_for(assignment: str, assignments_dir: Path = ASSIGNMENTS_DIR) -> list[str]:
    """The template's code and the textbook's code, for ``similar_pairs(boilerplate=...)``."""
    return [*template_code(assignment, assignments_dir), *textbook_code()]
