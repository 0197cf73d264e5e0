"""The words of each choice the grader makes for a student (grader/results.py:Choice), in one place: the grader, `grader
check` and the student kit record them through the same runner, so all three say the same lines.

A choice is recorded without its question (the code that makes it does not know which question runs it); the runner
sets it (``in_question``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from grader.check.binding import STRUCTURE, Binding
from grader.check.signature import CallPlan
from grader.results import Choice, ChoiceKind


def in_question(choices: Iterable[Choice], question: str) -> list[Choice]:
    """``choices`` as made in ``question``, each once, in the order first made."""
    placed = [dataclasses.replace(c, question=question) for c in choices]
    return list(dict.fromkeys(placed))


def renamed_arguments(class_name: str, plan: CallPlan) -> Choice:
    pairs = ", ".join(f"{ours} as `{theirs}`" for ours, theirs in plan.renamed)
    return Choice(ChoiceKind.ARGUMENTS, "", f"{class_name} given {pairs}",
                  "its constructor names its arguments differently from the assignment, and the grader matched them "
                  "by what their names say")


def bound_parameters(owner: str, binding: Binding) -> Choice | None:
    """Weights set in parameters the assignment names otherwise (``W_v`` for ``w_v``); None when all are named so."""
    pairs = binding.renamed()
    if not pairs:
        return None
    used = ", ".join(f"`{student}` used as `{spec}`" for student, spec in pairs)
    if any(binding.how[spec] == STRUCTURE for spec in binding.bound):
        why = ("the assignment's names are not in it, so the grader set the weights where the shapes fit and the "
               "names say the role")
    else:
        why = "its names are the assignment's up to case, or names the question accepts"
    return Choice(ChoiceKind.PARAMETERS, "", f"{owner}'s {used}", why)


def near_name(asked: str, near: str) -> Choice:
    return Choice(ChoiceKind.NEAR_NAME, "", f"`{near}` not graded as `{asked}`",
                  f"the assignment asks for `{asked}` itself, and a guess could grade the wrong code: rename it")


def with_reference(question: str, names: Sequence[str], owners: Sequence[str]) -> Choice:
    return Choice(ChoiceKind.REFERENCE, question, f"graded with the reference {', '.join(names)} in place of yours",
                  f"a mistake there then costs points only in {', '.join(owners)}")


def with_own_answers(question: str, names: Sequence[str], title: str, *, before: str, after: str) -> Choice:
    """``before``: what the student's code did with the reference in place ("raised"); ``after``: with their own."""
    return Choice(ChoiceKind.OWN_ANSWER, question, f"\"{title}\" graded with your own {', '.join(names)}",
                  f"with the reference in its place your code {before}, and with yours {after}")
