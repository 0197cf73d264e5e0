"""Measure what checks.py's training figures are derived from: `python -m solutions.practical10.measure_training`.

Trains the string-reversal model with the reference DotProdAttention and without attention, on one thread as the
grader's student processes run, and prints each one's training time and accuracy on the harness's validation strings.

The staged verdict's thresholds come from `grader calibrate practical10` (calibration.py, which this module shares the
kinds of attention with).

``--machines`` measures how far the training check's figure (exact matches on the grader's 300 strings) moves when
the same code trains on another computer: each training runs in a process of its own under another set of float
kernels (PyTorch's AVX-512, AVX2 and plain kernels, ``ATEN_CPU_CAPABILITY``; MKL's AVX2 and SSE4.2 matrix products,
``MKL_ENABLE_INSTRUCTIONS``), which is what differs between one CPU and another; and, for comparison, from other
seeds. It trains the reference, the model without attention and attention with known mistakes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from grader.check import KERNELS

from .calibration import KINDS, Mistaken, load_harness
from .checks import (
    EVALUATION_SEED,
    EVALUATION_STRINGS,
    MACHINE_MARGIN,
    PASS_EXACT,
    anti_diagonal,
    decode,
    evaluation_strings,
)
from .reference_torch import DotProdAttention

OTHER_SEEDS = (11, 12, 13, 14)


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


def graded_exact(kind: str, seed: int) -> float:
    """The training check's figure for one training: exact matches on the grader's strings."""
    harness = load_harness()
    Mistaken.kind = kind
    model = harness.train(None if kind == "no attention" else Mistaken,
                          harness.Config(seed=seed), log=lambda line: None)
    strings = evaluation_strings(np.random.default_rng(EVALUATION_SEED), EVALUATION_STRINGS)
    tokens, _ = model.greedy(harness.encode(strings), max(map(len, strings)) + 1)
    return float(np.mean([p == s[::-1] for p, s in zip(decode(tokens.numpy()), strings)]))


def _in_process(kind: str, seed: int, environment: dict[str, str]) -> float:
    done = subprocess.run([sys.executable, "-m", __spec__.name, "--one", kind, "--seed", str(seed)],
                          env={**os.environ, **environment}, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout)["exact"])


def machines() -> None:
    """Each kind trained under every set of kernels, then from other seeds; the spread of each."""
    seed = load_harness().CONFIG.seed
    print(f"exact matches on the grader's {EVALUATION_STRINGS} strings; pass mark {PASS_EXACT:.0%}, margin "
          f"{MACHINE_MARGIN:.0%}")
    print(f"{'attention':32} " + " ".join(f"{label:>12.12}" for label, _ in KERNELS) + "  kernels±   "
          + " ".join(f"seed {s:>3}" for s in OTHER_SEEDS) + "  seeds±")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # each training is a process on one core
        runs = {kind: ([pool.submit(_in_process, kind, seed, environment) for _, environment in KERNELS],
                       [pool.submit(_in_process, kind, other, {}) for other in OTHER_SEEDS]) for kind in KINDS}
        for kind, (on_kernels, on_seeds) in runs.items():
            kernels = [future.result() for future in on_kernels]
            seeds = kernels[:1] + [future.result() for future in on_seeds]
            print(f"{kind:32} " + " ".join(f"{e:12.3f}" for e in kernels) + f"  {max(kernels) - min(kernels):8.3f}   "
                  + " ".join(f"{e:8.3f}" for e in seeds[1:]) + f"  {max(seeds) - min(seeds):6.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", action="store_true", help="the training check's figure under other kernels")
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.one:
        print(json.dumps({"exact": graded_exact(args.one, args.seed)}))
        return
    if args.machines:
        machines()
        return
    for name, attention_class in (("reference DotProdAttention", DotProdAttention), ("no attention", None)):
        figures = measure(attention_class)
        line = (f"{name}: trained in {figures['seconds']:.1f} s; exact match {figures['exact']:.3f}, "
                f"per character {figures['per_char']:.4f}")
        if "peaks" in figures:
            line += f"; peak on the anti-diagonal {figures['peaks']:.2f}, weight within one {figures['near']:.2f}"
        print(line)


if __name__ == "__main__":
    main()
