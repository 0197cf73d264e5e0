"""Known-wrong variants of the references: each names a misconception, explains it and says how to fix it.

A variant stands in for one reference function (marked ``@substitutable`` in the assignment's float64 reference) and
computes what a student with that misconception would return. When a check fails, the runner replays it with each
of its question's variants in place of the reference: the same seed, so the same inputs, and the student's recorded
answers instead of new calls. If the answers the check found wrong agree with the variant, the report names the
misconception. Each variant also carries a source edit that turns the assignment's model solution into a submission
with that mistake, which the mutation test (tests/test_variants.py) grades to prove the checks catch it.

Substitution is per thread (a context variable), so classes graded in parallel threads do not see each other's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from grader.check.reference_memo import MEMO

F = TypeVar("F", bound=Callable[..., Any])

_SUBSTITUTES: ContextVar[dict[Callable[..., Any], Callable[..., Any]] | None] = ContextVar("substitutes", default=None)


def substitutable(function: F) -> F:
    """Mark a reference function that variants may stand in for (a no-op outside a replay)."""

    @functools.wraps(function)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        substitutes = _SUBSTITUTES.get() or {}
        stand_in = substitutes.get(dispatch)
        if stand_in is None:
            return MEMO.call(function, substitutes, args, kwargs, lambda: function(*args, **kwargs))
        # A variant may be written as the reference with one thing changed (``ref.f(..., scale=1.0)``): inside the
        # stand-in, the name it replaces is the reference again, not the stand-in calling itself for ever.
        inside = {key: value for key, value in substitutes.items() if key is not dispatch}

        def compute() -> Any:
            token = _SUBSTITUTES.set(inside)
            try:
                return stand_in(*args, **kwargs)
            finally:
                _SUBSTITUTES.reset(token)

        return MEMO.call(stand_in, inside, args, kwargs, compute)

    return dispatch  # type: ignore[return-value]


def memoised(function: F) -> F:
    """Mark a pure reference helper that no variant stands in for but that is costly on large inputs: its answers
    are kept like a substitutable function's (reference_memo.py), with the stand-ins active around it in the key,
    since what it calls may be one."""

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        return MEMO.call(function, _SUBSTITUTES.get() or {}, args, kwargs, lambda: function(*args, **kwargs))

    return call  # type: ignore[return-value]


@dataclass(frozen=True)
class Variant:
    id: str  # "q1.softmax_queries_axis"
    question: str
    name: str  # short, for the dashboard: "softmax over the queries axis"
    explanation: str  # for the student: what their code does and the fix
    # The @substitutable reference function it stands in for, and what it computes instead; both None for a
    # mistake no reference computation shows (a bias that should not be there), which a check names itself
    # with ``ctx.expect(..., misconception=id)``.
    replaces: Callable[..., Any] | None = field(compare=False)
    function: Callable[..., Any] | None = field(compare=False)
    # Source edits, (old, new) pairs, that make the assignment's model solution commit this mistake.
    mutation: tuple[tuple[str, str], ...] = ()


@contextmanager
def substituted(variant: Variant) -> Iterator[None]:
    """Inside the block, the reference function the variant replaces computes the variant instead."""
    if variant.replaces is None or variant.function is None or not hasattr(variant.replaces, "__wrapped__"):
        raise TypeError(f"{variant.id}: {variant.replaces!r} is not a function marked @substitutable")
    token = _SUBSTITUTES.set({**(_SUBSTITUTES.get() or {}), variant.replaces: variant.function})
    try:
        yield
    finally:
        _SUBSTITUTES.reset(token)


def stand_in_for(function: Callable[..., Any]) -> Callable[..., Any] | None:
    """What computes in place of ``function`` in this block (``substituted``), or None."""
    return (_SUBSTITUTES.get() or {}).get(function)
