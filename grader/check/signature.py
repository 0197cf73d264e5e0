"""How the arguments a check constructs a student's class with meet the signature the student wrote.

The assignment names the constructor's arguments (``AdditiveAttention(num_hiddens, dropout)``); students rename them
(``d_hid``, ``hidden_dim``, ``dropout_rate``). The rule, the same for everyone:

- every argument the signature names goes by that name, and an optional one (``key_size``) only when it is named;
- when some are not named but the signature takes as many arguments otherwise, in the assignment's order (its
  required ones no more than that), those go to the signature's other parameters in order, and the report says so;
- otherwise the call cannot be matched, which the check reports as such (never as the student's code raising).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

POSITIONAL_KINDS = ("positional", "either")


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  # "positional", "either", "*args", "keyword", "**kwargs" (inspect's kinds)
    has_default: bool


@dataclass(frozen=True)
class CallPlan:
    args: tuple[Any, ...]  # for positional-only parameters
    kwargs: dict[str, Any]
    renamed: tuple[tuple[str, str], ...] = ()  # (the assignment's name, the student's) for arguments matched by order
    problem: str = ""  # why the arguments could not be matched; then nothing else is set


def plan_call(signature: Sequence[Parameter] | None, wanted: Mapping[str, Any],
              optional: Mapping[str, Any]) -> CallPlan:
    """``wanted``: the arguments in the assignment's order; ``optional``: passed only where the signature names them
    (``**kwargs`` does not count: in a module it usually goes on to ``nn.Module.__init__``, which takes none)."""
    if signature is None:  # a signature Python cannot read (a C extension): call as the assignment says
        return CallPlan((), dict(wanted))
    named = {p.name for p in signature if p.kind in ("either", "keyword")}
    kwargs = {k: v for k, v in optional.items() if k in named}
    unmatched = [k for k in wanted if k not in named]
    kwargs.update({k: v for k, v in wanted.items() if k in named})
    if not unmatched:
        return CallPlan((), kwargs)
    free = [p for p in signature if p.kind in POSITIONAL_KINDS and p.name not in kwargs]
    required = [p for p in free if not p.has_default]
    if len(required) <= len(unmatched) <= len(free):
        args: list[Any] = []
        renamed = []
        for name, parameter in zip(unmatched, free):
            if parameter.kind == "positional":
                args.append(wanted[name])
            else:
                kwargs[parameter.name] = wanted[name]
            renamed.append((name, parameter.name))
        return CallPlan(tuple(args), kwargs, tuple(renamed))
    if any(p.kind == "**kwargs" for p in signature) and not required:
        return CallPlan((), {**kwargs, **{k: wanted[k] for k in unmatched}})
    theirs = ", ".join(p.name for p in signature if p.kind in (*POSITIONAL_KINDS, "keyword")) or "no arguments"
    return CallPlan((), kwargs, problem=f"it takes ({theirs}), which the grader cannot match with the assignment's "
                                        f"({', '.join(wanted)})")


def describe_renaming(class_name: str, plan: CallPlan) -> str:
    """The report's line when arguments were matched by order (no values: the same line for every check)."""
    pairs = ", ".join(f"{ours} as `{theirs}`" for ours, theirs in plan.renamed)
    return (f"{class_name}'s constructor names its arguments differently from the assignment, so the grader passed "
            f"them in the assignment's order: {pairs}.")
