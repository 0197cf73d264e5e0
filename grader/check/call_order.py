"""The order a question's checks pass arguments in, and a student's function or forward that declares another.

The checks call the student's code positionally, as the assignment's template (and any harness it provides) calls it:
``model(queries, keys, values, valid_lens)``. The parameters the template declares are the assignment's order
(``Question.calls``, read from ``solution.ipynb`` where the question does not declare them). A student's callable
whose parameter names say their roles (``signature.ROLE_WORDS``: ``k`` and ``keys`` are the keys) in another order,
say ``forward(self, key, query, value, valid_lens)``, receives the queries as ``key`` and fails. It is graded as
called, never by role: code that names its parameters one way and uses them another would then be graded on a guess,
and the template's own demo cells call it positionally too. A check of it that fails says so, once for the question:
the student's order, the assignment's, and the fix.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from grader.check.signature import Parameter, roles, signature_text, words

POSITIONAL_KINDS = ("positional", "either")


def _key(name: str) -> str:
    return name.casefold().replace("_", "")


# Words that make a name a mask over what its role word names: ``key_padding_mask`` masks the keys, it is not them.
MASK_WORDS = frozenset({"mask", "masks", "padding", "pad"})


def _place(name: str, assignment: Sequence[str]) -> int | None:
    """Where the assignment declares the parameter ``name`` stands for: the same name (up to case and underscores),
    else the one parameter whose roles are exactly the name's, of those the one with fewest other words (``q`` is
    Keras's ``query``, not its ``query_mask``), a mask only for a mask (PyTorch's ``key_padding_mask`` is not the
    keys); None when the name says nothing, or not which one."""
    same = [i for i, ours in enumerate(assignment) if _key(ours) == _key(name)]
    if same:
        return same[0]
    said = roles(name)
    if not said:
        return None
    mask = bool(words(name) & MASK_WORDS)
    fitting = [i for i, ours in enumerate(assignment)
               if roles(ours) == said and bool(words(ours) & MASK_WORDS) == mask]
    fewest = min((len(words(assignment[i])) for i in fitting), default=0)
    plainest = [i for i in fitting if len(words(assignment[i])) == fewest]
    return plainest[0] if len(plainest) == 1 else None


def out_of_order(assignment: Sequence[str], student: Sequence[Parameter] | None, passed: int) -> bool:
    """Whether one of the ``passed`` positional arguments lands in a parameter whose name says it is another of the
    assignment's parameters (``key`` in the place of ``queries``)."""
    if student is None:
        return False
    positional = [p.name for p in student if p.kind in POSITIONAL_KINDS]
    return any(place is not None and place != j
               for j, name in enumerate(positional[:passed]) if (place := _place(name, assignment)) is not None)


def order_message(label: str, student: Sequence[Parameter], called: str, assignment: Sequence[str]) -> str:
    """'Your DotProductAttention.forward takes (key, query, value, valid_lens=None): the assignment calls
    forward(queries, keys, values, valid_lens), in that order; reorder your parameters'."""
    return (f"Your {label} takes ({signature_text(student)}): the assignment calls {called}({', '.join(assignment)}), "
            "in that order; reorder your parameters")


def length_parameters(assignment: Sequence[str]) -> tuple[int, ...]:
    """The places of the assignment's parameters that hold lengths (``valid_lens``), by what their names say."""
    return tuple(i for i, name in enumerate(assignment) if "length" in roles(name))


def template_signatures(notebook: Path, names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The parameters of each of ``names`` as the solution notebook (the students' template) declares them: a
    function's, or a class's ``forward``'s less ``self``. A name the notebook does not define, or a cell that does not
    parse (a magic), is left out."""
    wanted = set(names)
    found: dict[str, tuple[str, ...]] = {}
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return found
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        try:
            tree = ast.parse("".join(source) if isinstance(source, list) else str(source))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in wanted:
                function = node if isinstance(node, ast.FunctionDef) else next(
                    (item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "forward"), None)
                if function is not None:
                    arguments = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
                    found[node.name] = tuple(arguments[1:] if isinstance(node, ast.ClassDef) else arguments)
    return found


def with_template_calls(calls: Mapping[str, Sequence[str]], notebook: Path,
                        names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """``calls`` as declared, completed from the template for the names it does not declare."""
    declared = {name: tuple(parameters) for name, parameters in calls.items()}
    missing = [name for name in names if name not in declared]
    return {**template_signatures(notebook, missing), **declared} if missing and notebook.is_file() else declared
