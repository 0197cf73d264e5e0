"""docs/writing-checks.md's API reference is complete: every name an assignment's files import from `grader.check`
has a row, and a row that writes a signature names every parameter the code takes (a "..." stands for the rest),
so an author who reads the table finds `rubric=` and `about=` without `help()`."""

from __future__ import annotations

import inspect
import re

import pytest

import grader.check as api
from grader.check import Assignment

from .conftest import ROOT

PAGE = ROOT / "docs" / "writing-checks.md"
# What the table documents under another spelling: the check's context and the student's code as `ctx` and `model`,
# and the loader's functions, which an assignment's files do not call.
ELSEWHERE = {"CheckContext": "ctx.", "StudentFunction": "ctx.student.function(", "StudentObject": "model.",
             "CheckSpec": None, "load_assignment": None, "load_solution_module": None, "available_assignments": None}
METHODS = {"ASSIGNMENT.check": Assignment.check, "ASSIGNMENT.variant": Assignment.variant,
           "ASSIGNMENT.misconception": Assignment.misconception}


def rows() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    reference = text[text.index("## API reference"):text.index("## Student templates")]
    return [line for line in reference.splitlines() if line.startswith("| `")]


def documented(name: str) -> list[str]:
    """Each signature the table writes for ``name``: the text between its parentheses."""
    return [m.group(1) for row in rows() for m in re.finditer(rf"`@?{re.escape(name)}\(([^`]*)\)`", row)]


def parameters(written: str) -> set[str]:
    names = set()
    for part in re.split(r",\s*(?![^(){}\[\]]*[)}\]])", written):
        part = part.strip().lstrip("*")
        match = re.match(r"([A-Za-z_]\w*)", part)
        if match:
            names.add(match.group(1))
    return names


@pytest.mark.parametrize("name", sorted(api.__all__))
def test_every_name_of_the_vocabulary_has_a_row(name: str) -> None:
    if name in ELSEWHERE:
        spelled = ELSEWHERE[name]
        assert spelled is None or any(f"`{spelled}" in row for row in rows()), name
        return
    assert any(re.search(rf"`@?{re.escape(name)}\b", row) for row in rows()), f"no row for {name}"


@pytest.mark.parametrize("name", sorted([*(n for n in api.__all__ if inspect.isclass(getattr(api, n))
                                            or inspect.isfunction(getattr(api, n))), *METHODS]))
def test_a_written_signature_names_every_parameter(name: str) -> None:
    for written in documented(name):
        target = METHODS.get(name) or getattr(api, name)
        real = {p.name for p in inspect.signature(target).parameters.values() if p.name not in ("self", "cls")}
        if "..." in written or name == "Arg":
            continue  # a few shown, the rest said to exist; Arg's kind and dtype are Arg.tensor's and Arg.array's
        missing = real - parameters(written)
        assert not missing, f"docs/writing-checks.md writes {name}({written}) without {sorted(missing)}"
