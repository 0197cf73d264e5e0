"""The public checks' own code, cut out of ``checks.py`` for the student kit.

A check's logic (which calls it makes, what it expects of the answers, what it names a mistake) runs in the student's
kernel as it runs in the grader, so the kit says what the grader says. What is cut away: every hidden check, every
helper and constant only hidden checks use, the assignment's declaration, docstrings and comments. The references
stay behind: the checks call them through the names they import from the assignment's package (``from . import
reference_numpy as ref``), which the kit answers from the bundle (oracle.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from grader.errors import ConfigurationError

HEADER = ('"""The public checks of {name}, as the grader runs them; what the references return comes from the '
          'bundle."""\n\n')


@dataclass(frozen=True)
class DerivedChecks:
    source: str
    relative_imports: tuple[tuple[str, str, str], ...]  # (module, attribute or "", bound name) of `from . import`


def _bound(statement: ast.stmt) -> set[str]:
    """The top-level names a statement defines."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def _used(node: ast.AST) -> set[str]:
    """The names a statement reads, annotations left out (``from __future__ import annotations`` keeps them text)."""
    used: set[str] = set()

    def visit(item: ast.AST) -> None:
        if isinstance(item, ast.arg):
            return
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for child in [*item.decorator_list, *item.args.defaults, *item.args.kw_defaults, *item.body]:
                if child is not None:
                    visit(child)
            return
        if isinstance(item, ast.AnnAssign):
            for child in (item.target, item.value):
                if child is not None:
                    visit(child)
            return
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load):
            used.add(item.id)
        for child in ast.iter_child_nodes(item):
            visit(child)

    visit(node)
    return used


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body or [ast.Pass()]


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.body = _without_docstring(node.body)


def derive_public_checks(source: str, *, name: str, public: Iterable[str], hidden: Iterable[str],
                         declaration: str = "ASSIGNMENT") -> DerivedChecks:
    """The module source holding the functions named in ``public`` (undecorated) and what they need, and none of
    the functions named in ``hidden``; raises ConfigurationError when a public check needs the declaration."""
    public, hidden = set(public), set(hidden)
    tree = ast.parse(source)
    body = _without_docstring(list(tree.body))
    kept_checks: list[ast.stmt] = []
    others: list[tuple[ast.stmt, set[str], set[str]]] = []
    future: list[ast.stmt] = []
    for statement in body:
        bound = _bound(statement)
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            future.append(statement)
        elif isinstance(statement, ast.FunctionDef) and statement.name in hidden:
            continue
        elif isinstance(statement, ast.FunctionDef) and statement.name in public:
            statement.decorator_list = []
            kept_checks.append(statement)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a string standing alone: a comment
        elif bound:
            others.append((statement, bound, _used(statement)))
        else:
            raise ConfigurationError(f"{name}/checks.py: the kit cannot tell what a top-level "
                                     f"{type(statement).__name__} at line {statement.lineno} is for")
    missing = public - {s.name for s in kept_checks if isinstance(s, ast.FunctionDef)}
    if missing:
        raise ConfigurationError(f"{name}/checks.py: public checks {sorted(missing)} are not top-level functions")
    needed = set().union(*(_used(s) for s in kept_checks)) if kept_checks else set()
    kept: set[int] = set()
    changed = True
    while changed:  # what the kept code reads, and what that reads, to the end
        changed = False
        for index, (_, bound, used) in enumerate(others):
            if index not in kept and bound & needed:
                kept.add(index)
                needed |= used
                changed = True
    if declaration in needed:
        raise ConfigurationError(f"{name}/checks.py: a public check uses {declaration}, which the kit does not hold")
    statements = [*future, *[s for i, (s, _, _) in enumerate(others) if i in kept]]
    relative: list[tuple[str, str, str]] = []
    for statement in statements:
        if isinstance(statement, ast.ImportFrom) and statement.level:
            if statement.level != 1:
                raise ConfigurationError(f"{name}/checks.py: the kit only follows `from . import` and `from .module "
                                         "import`")
            # only the names the kept code reads
            statement.names = [a for a in statement.names if (a.asname or a.name) in needed]
            for alias in statement.names:
                if statement.module:
                    relative.append((statement.module, alias.name, alias.asname or alias.name))
                else:
                    relative.append((alias.name, "", alias.asname or alias.name))
        elif isinstance(statement, ast.Import) or (isinstance(statement, ast.ImportFrom)
                                                   and statement.module != "__future__"):
            statement.names = [a for a in statement.names if (a.asname or a.name).split(".")[0] in needed]
    statements = [s for s in statements if not isinstance(s, (ast.Import, ast.ImportFrom)) or s.names]
    order = {id(s): i for i, s in enumerate(body)}
    module = ast.Module(body=sorted([*statements, *kept_checks], key=lambda s: order[id(s)]), type_ignores=[])
    _strip_docstrings(module)
    return DerivedChecks(HEADER.format(name=name) + ast.unparse(module) + "\n", tuple(relative))
