"""The references, as the student kit has them: what they returned on the public checks' inputs, from the bundle.

A check's inputs come from its seed, whatever the student's code does, so each call a check makes to a reference is
one of those recorded for it (on the solution, and with the check failing at each of its expectations in turn): it
is answered by the recorded call of the same function on the same inputs. In a replay with a known-wrong variant in
place of the reference (the runner's diagnosis), the variant's recorded result is returned instead.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from grader.check.variants import stand_in_for
from grader.kit.bundle import ArrayStore, Unrecorded, decode, same_input


def replaced(*args: Any, **kwargs: Any) -> Any:
    """What every variant of a kit replaces (``Variant.replaces``): the recorded references as a whole."""
    raise Unrecorded("the kit's references are answered from the bundle")


replaced.__wrapped__ = replaced  # type: ignore[attr-defined]  # marks it substitutable (grader/check/variants.py)


@dataclass(frozen=True)
class VariantMark:
    """Stands for one variant while a replay substitutes it: the oracle returns that variant's recorded result."""

    variant: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise Unrecorded(self.variant)


@dataclass
class _Cursor:
    check: str
    calls: list[dict[str, Any]]


_RUN: ContextVar[_Cursor | None] = ContextVar("kit_run", default=None)


@contextmanager
def answering(check: str, calls: list[dict[str, Any]]) -> Iterator[None]:
    """One run of a check: its references answer from the first recorded call."""
    token = _RUN.set(_Cursor(check, calls))
    try:
        yield
    finally:
        _RUN.reset(token)


class Oracle:
    def __init__(self, store: ArrayStore, constants: dict[str, Any]) -> None:
        self.store = store
        self.constants = constants
        self._inputs: dict[tuple[int, str], Any] = {}  # the recorded inputs, decoded once

    def call(self, module: str, attribute: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        cursor = _RUN.get()
        recorded = next((entry for entry in (cursor.calls if cursor is not None else [])
                         if (entry["module"], entry["attribute"]) == (module, attribute)
                         and same_input(self._decoded(entry, "args"), args)
                         and same_input(self._decoded(entry, "kwargs"), kwargs)), None)
        if recorded is None:
            raise Unrecorded(f"{module}.{attribute}: no recorded call on these inputs")
        answer = {"returned": recorded["returned"]}
        mark = stand_in_for(replaced)
        if isinstance(mark, VariantMark):
            answer = recorded["variants"].get(mark.variant, answer)
        if "raised" in answer:
            raise ArithmeticError(f"the variant raised {answer['raised']} on these inputs")
        return decode(answer["returned"], self.store)

    def _decoded(self, entry: dict[str, Any], part: str) -> Any:
        key = (id(entry), part)
        if key not in self._inputs:
            self._inputs[key] = decode(entry[part], self.store)
        return self._inputs[key]

    def module(self, name: str) -> types.ModuleType:
        oracle = self

        class Recorded(types.ModuleType):
            def __getattr__(self, attribute: str) -> Any:
                key = f"{name}.{attribute}"
                if key in oracle.constants:
                    return decode(oracle.constants[key], oracle.store)
                if attribute.startswith("__"):
                    raise AttributeError(attribute)
                return self.function(attribute)

            def function(self, attribute: str) -> Any:
                def call(*args: Any, **kwargs: Any) -> Any:
                    return oracle.call(name, attribute, args, kwargs)

                call.__name__ = attribute
                return call

        return Recorded(name)
