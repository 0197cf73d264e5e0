"""Measure what checks.py's training thresholds are derived from: `python -m solutions.practical10.measure_training`.

Trains the string-reversal model with the reference DotProdAttention and without attention, on one thread as the
grader's student processes run, and prints each one's training time and accuracy on the harness's validation strings.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import types

import numpy as np
import torch

from grader.layout import ASSIGNMENTS_DIR

from .checks import anti_diagonal
from .reference_torch import DotProdAttention


def load_harness() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("reversal", ASSIGNMENTS_DIR / "practical10" / "reversal.py")
    assert spec is not None and spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    sys.modules["reversal"] = harness
    spec.loader.exec_module(harness)
    return harness


def measure(attention_class: type[torch.nn.Module] | None) -> dict[str, float]:
    """Training time, exact-match and per-character accuracy on 500 validation strings, and for a model with
    attention how anti-diagonal its weights are (checks.anti_diagonal)."""
    harness = load_harness()
    start = time.perf_counter()
    model = harness.train(attention_class, log=lambda line: None)
    figures = {"seconds": time.perf_counter() - start}
    strings = harness.validation_strings()
    figures["exact"], figures["per_char"] = harness.evaluate(model, strings)
    src = harness.encode(strings)
    _, weights = model.greedy(src, src.shape[1] + 1)
    if weights is not None:
        figures["peaks"], figures["near"] = anti_diagonal(weights.numpy().astype(np.float64), strings)
    return figures


def main() -> None:
    torch.set_num_threads(1)
    for name, attention_class in (("reference DotProdAttention", DotProdAttention), ("no attention", None)):
        figures = measure(attention_class)
        line = (f"{name}: trained in {figures['seconds']:.1f} s; exact match {figures['exact']:.3f}, "
                f"per character {figures['per_char']:.4f}")
        if "peaks" in figures:
            line += f"; peak on the anti-diagonal {figures['peaks']:.2f}, weight within one {figures['near']:.2f}"
        print(line)


if __name__ == "__main__":
    main()
