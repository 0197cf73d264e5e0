"""Large inputs a check draws from its generator, kept for the life of the grading process (``CheckContext.kept_draw``).

A public check's seed is everyone's, so it draws the same inputs for every student: bahdanau_attention's memory
check drew a million keys and converted them to float32 (about 0.4 s) for every student and again for each known
mistake a failing student's diagnosis replays. ``kept_draw(draw, *args)`` calls ``draw(rng, *args)`` once per state
of the generator: a later call from the same state gets the same arrays and leaves the generator where the first
draw left it, so whatever the check draws next is what it would have drawn without the memo. The arrays are
read-only (no check can change what the next student gets), and their digests are known to the references' memo
(reference_memo.py), which then need not read a million keys again to find the reference's answer to them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from grader.check.reference_memo import remember_digest
from grader.execute.arguments import sent_as_is

MAX_BYTES = 256 << 20  # draws kept at most; the least recently used go first


def _frozen(value: Any) -> Any:
    """``value`` with its arrays made read-only; its size in bytes."""
    if isinstance(value, np.ndarray):
        value = sent_as_is(value)  # read-only; a large one encoded once for every student it is sent to
        remember_digest(value)
        return value, value.nbytes
    if isinstance(value, tuple):
        items = [_frozen(item) for item in value]
        return tuple(item for item, _ in items), sum(size for _, size in items)
    raise TypeError(f"kept_draw keeps arrays and tuples of arrays, not {type(value).__name__}")


class DrawMemo:
    """Draws by (function, arguments, the generator's state before it); thread-safe."""

    def __init__(self, *, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple, tuple[Any, dict, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def draw(self, rng: np.random.Generator, draw: Callable[..., Any], args: tuple) -> Any:
        key = (draw, args, repr(rng.bit_generator.state))
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
        if kept is not None:
            drawn, after, _ = kept
            rng.bit_generator.state = after
            return drawn
        drawn, size = _frozen(draw(rng, *args))
        with self._lock:
            if key not in self._kept and size <= self.max_bytes:
                self._kept[key] = (drawn, rng.bit_generator.state, size)
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, (_, _, dropped) = self._kept.popitem(last=False)
                    self._bytes -= dropped
        return drawn


DRAWS = DrawMemo()
