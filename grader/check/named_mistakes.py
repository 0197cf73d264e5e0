"""The known mistakes an assignment's checks name by string, checked when the assignment loads.

A check names the mistake it recognises itself with ``ctx.expect(..., misconception="q1.bias_present")`` (or
``WrongAnswer(..., misconception=...)``), and the id must be one the assignment registers (``Assignment.variant`` or
``Assignment.misconception``). Python cannot tell a misspelt id until that line runs, which is when a student's
submission reaches that failure: the runner then raises ConfigurationError, the student gets 0 for an internal error
and the run exits 3. So the loader reads the checks' source instead: every ``misconception=`` keyword, its string
constants (through an ``if``/``else`` expression, and through a local name assigned one) against the registered ids.
An id computed at run time (an f-string, a call) is not seen here; the runner still catches it.
"""

from __future__ import annotations

import ast
import difflib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.check.spec import Assignment
from grader.errors import ConfigurationError

KEYWORD = "misconception"


@dataclass(frozen=True)
class NamedMistake:
    id: str  # as written: "q1.bias_present"
    path: Path
    line: int
    function: str | None  # the top-level function it is in (a check's, or a helper's), None at module level


def _strings(expr: ast.expr, scopes: list[ast.AST]) -> Iterator[str]:
    """The ids ``expr`` may evaluate to: its string constants where it picks one (``"a" if c else None``, ``x or "a"``),
    and those assigned to a name it reads, in the enclosing function or the module. A condition's strings are not
    ids (``missing == ["energy_layer.bias"]``), so they are left out."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        yield expr.value
    elif isinstance(expr, ast.IfExp):
        yield from _strings(expr.body, scopes)
        yield from _strings(expr.orelse, scopes)
    elif isinstance(expr, ast.BoolOp):
        for value in expr.values:
            yield from _strings(value, scopes)
    elif isinstance(expr, ast.Name):
        for scope in scopes:
            for node in ast.walk(scope):
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AnnAssign) else []
                value = getattr(node, "value", None)
                if value is not None and any(isinstance(t, ast.Name) and t.id == expr.id for t in targets):
                    yield from _strings(value, [])


def named_in(path: Path) -> list[NamedMistake]:
    """Every mistake id the Python file ``path`` names with a ``misconception=`` keyword argument."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[NamedMistake] = []
    functions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    # Module-level code is what is left outside the top-level functions (a mistake named in a class, say).
    module = ast.Module(body=[n for n in tree.body if n not in functions], type_ignores=[])
    for function in [*functions, None]:
        body = function if function is not None else module
        scopes: list[ast.AST] = [function, module] if function is not None else [module]
        for node in ast.walk(body):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == KEYWORD:
                    found += [NamedMistake(text, path, keyword.value.lineno, function.name if function else None)
                              for text in dict.fromkeys(_strings(keyword.value, scopes))]
    return found


def check_named_mistakes(assignment: Assignment, paths: list[Path] | None = None) -> None:
    """Raise ConfigurationError for a mistake the checks name that the assignment does not register, saying which
    check names it, where, the nearest known ids and every known one. ``paths``: the files to read (default: the
    files the assignment's check functions are defined in)."""
    if paths is None:
        paths = sorted({Path(inspect.getsourcefile(c.run) or "") for c in assignment.checks} - {Path()})
    known = sorted(v.id for v in assignment.variants)
    checks_by_function = {c.run.__name__: c.id for c in assignment.checks}
    for path in paths:
        for named in named_in(path):
            if named.id in known:
                continue
            where = f"{path.name}, line {named.line}"
            if named.function in checks_by_function:
                who = f"check {checks_by_function[named.function]} ({named.function}, {where})"
            elif named.function is not None:
                who = f"{named.function} ({where})"
            else:
                who = where
            close = difflib.get_close_matches(named.id, known, n=1, cutoff=0.6)
            guess = f"did you mean {close[0]!r}? " if close else ""
            listed = ", ".join(known) or "none: register it in variants.py with ASSIGNMENT.misconception(...)"
            raise ConfigurationError(f"{assignment.name}: {who} names misconception {named.id!r}, which no variant "
                                     f"or misconception registers; {guess}(known: {listed})")
