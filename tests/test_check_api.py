"""The check author's API: one import (``grader.check``) for every file of an assignment, and
``ctx.expect_sequence`` for code that returns several values."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import grader.check
from grader.check import CheckContext, Returned, WrongAnswer, assignment_file, substitutable

from .conftest import FIXTURE_SOLUTIONS, ROOT

# The names other code is written against (the scaffold of `grader new`, the docs' reference table).
CHECK_API = ("Assignment", "Question", "WrittenQuestion", "CheckContext", "Arg", "Returned", "StudentObject",
             "StudentFunction", "StudentRaised", "WrongAnswer", "substitutable", "memoised", "compare_tensor", "Limits",
             "LatePolicy", "PUBLIC", "HIDDEN", "assignment_file")


def test_grader_check_exports_the_whole_check_api() -> None:
    missing = [name for name in CHECK_API if name not in grader.check.__all__ or not hasattr(grader.check, name)]
    assert not missing


def _grader_imports(path: Path) -> list[str]:
    """The modules of ``grader`` a file imports from, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "grader":
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[0] == "grader"]
    return found


def test_an_assignment_imports_from_grader_check_only() -> None:
    files = sorted([*(ROOT / "solutions").glob("*/*.py"), *FIXTURE_SOLUTIONS.glob("*/*.py")])
    assert len(files) > 10
    elsewhere = {str(f.relative_to(ROOT)): modules for f in files
                 if (modules := [m for m in _grader_imports(f) if m != "grader.check"])}
    assert not elsewhere


def test_assignment_file_names_a_file_of_the_assignments_folder() -> None:
    harness = assignment_file("practical10", "reversal.py")
    assert harness == ROOT / "assignments" / "practical10" / "reversal.py" and harness.is_file()


class _NoStudent:
    """expect_sequence looks at a returned value only: no student code is called."""

    calls: tuple[str, ...] = ()

    def start_check(self) -> None:
        pass


def _context() -> CheckContext:
    return CheckContext(student=_NoStudent(), seed=0)  # type: ignore[arg-type]


def _tensor(*shape: int) -> Returned:
    return Returned("tensor", "torch.Tensor", "float32", shape, np.zeros(shape))


def _sequence(type_name: str, *items: Returned) -> Returned:
    return Returned("sequence", type_name, items=items, length=len(items))


def test_expect_sequence_returns_the_items_of_a_tuple_or_list_of_the_right_length() -> None:
    ctx = _context()
    output, weights = ctx.expect_sequence("f", _sequence("tuple", _tensor(2, 3), _tensor(2, 2)), ("output", "weights"))
    assert output.shape == (2, 3) and weights.shape == (2, 2)
    assert len(ctx.expect_sequence("g", _sequence("list", *[_tensor(1)] * 3), ("Q", "K", "V"))) == 3
    assert ctx.met == 2  # an expectation met, as ctx.expect counts them (a replay that gets further is compared so)


@pytest.mark.parametrize(("got", "names", "message", "hint"), [
    (_sequence("tuple", *[_tensor(2)] * 3), ("output", "weights"),
     "f should return a pair (output, weights), but returned a tuple of 3 items",
     "f does not return a pair (output, weights)"),
    (_tensor(2, 3), ("output", "weights"),
     "f should return a pair (output, weights), but returned a torch.Tensor of shape (2, 3)",
     "f does not return a pair (output, weights)"),
    (_sequence("list", _tensor(2)), ("Q", "K", "V"),
     "f should return 3 values (Q, K, V), but returned a list of 1 item", "f does not return 3 values (Q, K, V)"),
])
def test_expect_sequence_fails_saying_what_was_expected_and_what_came(got: Returned, names: tuple[str, ...],
                                                                      message: str, hint: str) -> None:
    ctx = _context()
    with pytest.raises(WrongAnswer) as failed:
        ctx.expect_sequence("f", got, names)
    assert (failed.value.message, failed.value.hint) == (message, hint)
    assert ctx.met == 0


def test_a_variant_may_call_the_reference_it_replaces() -> None:
    """A variant written as the reference with one thing changed calls the reference, not itself."""
    from grader.check.variants import Variant, substituted

    @substitutable
    def scaled(x: float, scale: float = 2.0) -> float:
        return x * scale

    def unscaled(x: float) -> float:
        return scaled(x, scale=1.0)

    variant = Variant("q1.unscaled", "q1", "unscaled", "Your code does not scale.", scaled, unscaled)
    assert scaled(3.0) == 6.0
    with substituted(variant):
        assert scaled(3.0) == 3.0  # the stand-in, which reached the reference inside
    assert scaled(3.0) == 6.0
