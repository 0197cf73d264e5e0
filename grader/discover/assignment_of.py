"""Which assignment a single submission file is for, when a student checks their own work (``grader check``).

In order: the notebook's metadata (``grader.assignment``, written into every generated template), the file's name
(``attention_scoring.py``), then the names the file defines (``def masked_softmax``, ``class AdditiveAttention``)
against the names each assignment's questions ask for: the assignment with the largest share of its names defined
wins, ties going to the one with more; when none is defined, the names near them (grader/near_names.py:
``masked_sofmax``) count in their place. Nothing matching, or a tie, is an error that asks for ``--assignment``.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from grader.errors import ConfigurationError
from grader.near_names import near_names


def _metadata_assignment(path: Path) -> str | None:
    try:
        notebook = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return None  # not readable as a notebook: the grader's own reading will say why
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    grader = metadata.get("grader") if isinstance(metadata, dict) else None
    name = grader.get("assignment") if isinstance(grader, dict) else None
    return name if isinstance(name, str) else None


def defined_names(sources: Sequence[str]) -> set[str]:
    """Functions and classes defined at the top level of the code units (or under an ``if``), for any that parse."""
    names: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        nodes = list(tree.body)
        while nodes:
            node = nodes.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                nodes += [*node.body, *getattr(node, "orelse", [])]
    return names


def _shares(available: Sequence[str], asks_for: Callable[[str], Sequence[str]],
            hits_of: Callable[[set[str]], int]) -> dict[str, tuple[float, int]]:
    shares: dict[str, tuple[float, int]] = {}
    for name in available:
        wanted = set(asks_for(name))
        hits = hits_of(wanted)
        if wanted and hits:
            shares[name] = (hits / len(wanted), hits)
    return shares


def infer_assignment(path: Path, *, available: Sequence[str], asks_for: Callable[[str], Sequence[str]],
                     sources: Callable[[], Sequence[str]]) -> str:
    """The assignment of ``path`` among ``available``; ``asks_for(name)`` gives the names an assignment's questions
    define, ``sources()`` the submission's code units (read only when the cheap clues say nothing)."""
    if path.suffix.lower() == ".ipynb" and (named := _metadata_assignment(path)) in available:
        return named
    if path.stem in available:
        return path.stem
    found = defined_names(sources())
    shares = _shares(available, asks_for, lambda wanted: len(wanted & found))
    if not shares:  # only near names (`masked_sofmax`): the check then tells the student to rename them
        shares = _shares(available, asks_for,
                         lambda wanted: sum(bool(near_names(n, found, taken=wanted)) for n in wanted))
    which = ", ".join(available)
    if not shares:
        raise ConfigurationError(f"could not tell which assignment {path.name} is for: it defines none of the names "
                                 f"an assignment asks for; name it with --assignment ({which})")
    best = max(shares.values())
    winners = sorted(name for name, share in shares.items() if share == best)
    if len(winners) == 1 and found:
        # A larger share is no answer when every name the file defines for the winner is one another assignment
        # asks for too (practical10's self_attention, and a new assignment's): nothing in the file tells them apart.
        mine = set(asks_for(winners[0])) & found
        winners += sorted(name for name in shares if name != winners[0] and mine <= set(asks_for(name)))
        if len(winners) > 1:
            shared, choices = ", ".join(sorted(mine)), " or ".join(sorted(winners))
            raise ConfigurationError(f"{path.name} could be for {choices} (each asks for {shared}): name it with "
                                     "--assignment")
    if len(winners) > 1:
        raise ConfigurationError(f"{path.name} could be for {' or '.join(winners)}: name it with --assignment")
    return winners[0]


def shared_names(asked: dict[str, Sequence[str]]) -> dict[str, list[str]]:
    """Each name that more than one assignment asks for -> those assignments (``asked``: assignment -> its names)."""
    askers: dict[str, list[str]] = {}
    for assignment, names in sorted(asked.items()):
        for name in sorted(set(names)):
            askers.setdefault(name, []).append(assignment)
    return {name: who for name, who in askers.items() if len(who) > 1}


def shared_name_warnings(asked: dict[str, Sequence[str]], *, involving: Sequence[str] = ()) -> list[str]:
    """A warning per name several assignments ask for (only those involving ``involving``, when given)."""
    return [f"warning: {name} is asked for by {' and '.join(who)}: `grader check` on a file that defines only such "
            "names asks for --assignment (the notebooks `grader assign` writes name their assignment, and a file "
            "named after its assignment is told by its name)"
            for name, who in shared_names(asked).items() if not involving or set(who) & set(involving)]
