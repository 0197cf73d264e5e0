"""Arrays as short text for the traces and cases a report shows (the calls a check made, the values it expected).

``np.array2string`` costs about a millisecond an array, and a class's checks print thousands of them; nested lists
of values rounded to 4 decimals read the same and cost microseconds.
"""

from __future__ import annotations

import numpy as np

MAX_ENTRIES = 100  # larger arrays show their first entries, flattened


def array_text(array: np.ndarray, *, max_entries: int = MAX_ENTRIES) -> str:
    """'[[0.1234, 1.0], [0.0, -2.5]]', or '[0.1, 0.2, ... 120 entries in all]' for a large array."""
    values = np.asarray(array)
    shown = values if values.size <= max_entries else values.ravel()[:max_entries]  # not a million entries rounded
    if shown.dtype.kind == "f":
        shown = np.round(shown.astype(np.float64), 4) + 0.0  # + 0.0: -0.0 reads as 0.0
    if values.size <= max_entries:
        return repr(shown.tolist())
    head = ", ".join(repr(v) for v in shown.tolist())
    return f"[{head}, ... {values.size} entries in all]"
