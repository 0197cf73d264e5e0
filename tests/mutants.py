"""The known mistakes put into each assignment's model solution: the mutants the mutation test (test_variants.py) and
the kit's parity sweep (test_kit_parity.py) grade, graded once per test session (conftest.py's ``mutants``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.check.variants import Variant
from grader.paths import SOLUTIONS_DIR
from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .conftest import ROOT, SUBMISSIONS

# Each assignment's model solution, in tests/submissions/<name>/, which the mutations edit.
BASES = {"attention_scoring": "einsum_style.py"}


def base_of(assignment: str, submissions: Path = SUBMISSIONS) -> Path:
    """The sample the mutations edit; a missing one fails the test saying which file to add and what it holds."""
    path = submissions / assignment / BASES.get(assignment, "reference_style.py")
    if not path.is_file():
        pytest.fail(missing_base(assignment, path), pytrace=False)
    return path


def missing_base(assignment: str, path: Path, *, solutions_dir: Path = SOLUTIONS_DIR) -> str:
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    names = ", ".join(load_assignment(assignment, solutions_dir=solutions_dir).withheld_names)
    return (f"{shown} is missing: the mutation test grades it, then edits it into one submission per known mistake in "
            f"solutions/{assignment}/variants.py. Add the model solution written as a student would hand it in: a .py "
            f"that defines {names} as solutions/{assignment}/solution.ipynb does (the code between the ### BEGIN/END "
            "SOLUTION markers, without them), earns full marks, and holds each variant's mutation=[(old, new)] `old` "
            "text exactly once (`grader new NAME` writes one for a new assignment)")


def mutant_name(variant: Variant) -> str:
    return variant.id.replace(".", "_")


def mutate(source: str, variant: Variant) -> str:
    """The model solution with ``variant``'s mistake in it; a mutation that leaves a file Python cannot read (an
    edit that breaks the indentation) fails here, naming the variant, its edit and the line, not later in a grading
    thread as an invalid submission."""
    assert variant.mutation, f"{variant.id} has no mutation to test it with"
    for old, new in variant.mutation:
        assert source.count(old) == 1, f"{variant.id}: {old!r} is not in the model solution exactly once"
        source = source.replace(old, new)
    try:
        ast.parse(source)
    except SyntaxError as exc:
        edits = "; ".join(f"{old!r} -> {new!r}" for old, new in variant.mutation)
        line = source.splitlines()[exc.lineno - 1] if exc.lineno and exc.lineno <= len(source.splitlines()) else ""
        pytest.fail(f"{variant.id}'s mutation ({edits}) makes a file Python cannot read: {exc.msg} at line "
                    f"{exc.lineno}: {line!r}. Keep the edit's indentation as the model solution's", pytrace=False)
    return source


def variants_of(assignment: str) -> list[Variant]:
    return load_assignment(assignment).variants



def write_mutants(assignment: str, folder: Path) -> list[Path]:
    """The model solution and one file per variant with a mutation, in ``folder``."""
    base = base_of(assignment)
    source = base.read_text()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / base.name).write_text(source)
    paths = [folder / base.name]
    for variant in variants_of(assignment):
        paths.append(folder / f"{mutant_name(variant)}.py")
        paths[-1].write_text(mutate(source, variant))
    return paths


def graded_mutants(assignment: str, folder: Path) -> ClassRun:
    write_mutants(assignment, folder / "class")
    return grade_class(RunRequest(assignment=assignment, submissions_dir=folder / "class", out_dir=folder / "out"),
                       RunOptions(jobs=2))
