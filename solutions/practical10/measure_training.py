"""Measure what checks.py's training thresholds are derived from: `python -m solutions.practical10.measure_training`.

Trains the string-reversal model with the reference DotProdAttention and without attention, on one thread as the
grader's student processes run, and prints each one's training time and accuracy on the harness's validation strings.

``--calibrate`` writes the staged verdict of the training check (training_stages.py; grader/check/staged.py): each
kind of attention is trained from the calibration seeds and scored on the grader's strings after every stage, the
thresholds are derived from those trajectories, and the error rates are measured on trainings the calibration did not
see (other seeds, and the harness's seed under other float kernels).

``--machines`` measures how far the training check's figure (exact matches on the grader's 300 strings) moves when
the same code trains on another computer: each training runs in a process of its own under another set of float
kernels (PyTorch's AVX-512, AVX2 and plain kernels, ``ATEN_CPU_CAPABILITY``; MKL's AVX2 and SSE4.2 matrix products,
``MKL_ENABLE_INSTRUCTIONS``), which is what differs between one CPU and another; and, for comparison, from other
seeds. It trains the reference, the model without attention and attention with known mistakes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

from grader.check import StagedVerdict, assignment_file, calibrate, error_rates

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

# Float kernels another computer would use: (label, environment). The first is this machine's own choice.
KERNELS = (
    ("as detected", {}),
    ("ATen AVX2", {"ATEN_CPU_CAPABILITY": "avx2"}),
    ("ATen plain", {"ATEN_CPU_CAPABILITY": "default"}),
    ("MKL AVX2", {"MKL_ENABLE_INSTRUCTIONS": "AVX2"}),
    ("MKL SSE4.2, ATen plain", {"MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ATEN_CPU_CAPABILITY": "default"}),
)
OTHER_SEEDS = (11, 12, 13, 14)


class Mistaken(torch.nn.Module):
    """The reference DotProdAttention with one known mistake (``kind``), as students make them."""

    kind = "reference"

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.W_c = torch.nn.Linear(2 * hidden_size, hidden_size, bias=False)
        self.hidden_size = hidden_size

    def forward(self, query: torch.Tensor, context: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        scores = query @ context.transpose(1, 2)
        if self.kind == "scaled by sqrt(H)":
            scores = scores / self.hidden_size ** 0.5
        if self.kind == "uniform weights":
            scores = torch.zeros_like(scores)
        if mask is not None and self.kind != "padding not masked":
            scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        steps = self.kind == "softmax over the target steps"
        weights = torch.nan_to_num(torch.softmax(scores, dim=1 if steps else -1))
        contexts = weights @ context
        joined = torch.cat([query, contexts] if self.kind == "[s_t; c_t]" else [contexts, query], dim=-1)
        out = self.W_c(joined)
        return (out if self.kind == "no tanh" else torch.tanh(out)), weights


KINDS = ("reference", "no attention", "softmax over the target steps", "uniform weights", "padding not masked",
         "[s_t; c_t]", "scaled by sqrt(H)", "no tanh")
# The training check's verdict on each kind, as the fixed 5-epoch schedule gives it from the harness's seed: what the
# staged verdict must keep (docs/assignments.md, the table of known mistakes).
SHOULD_PASS = ("reference", "padding not masked", "[s_t; c_t]", "no tanh")
SHOULD_FAIL = ("no attention", "softmax over the target steps", "uniform weights", "scaled by sqrt(H)")
CALIBRATION_SEEDS = tuple(range(10, 20))
HELD_OUT_SEEDS = tuple(range(20, 30))
# A stage passes a score this far above every training that should fail, and fails one this far below every
# training that should pass (exact-match rates on 300 strings, whose sampling error is about 3 points).
PASS_MARGIN, FAIL_MARGIN = 0.10, 0.15
STAGES_FILE = Path(__file__).with_name("training_stages.py")
# Where the check scores the training: every quarter epoch from half of one to all five (63 batches an epoch; a
# decoding of the grader's 300 strings costs about a fortieth of a quarter epoch's training).
STAGE_EPOCHS = tuple(quarter / 4 for quarter in range(2, 21))


def load_harness() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("reversal", assignment_file("practical10", "reversal.py"))
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


def graded_exact(kind: str, seed: int) -> float:
    """The training check's figure for one training: exact matches on the grader's strings."""
    harness = load_harness()
    Mistaken.kind = kind
    model = harness.train(None if kind == "no attention" else Mistaken,
                          harness.Config(seed=seed), log=lambda line: None)
    strings = evaluation_strings(np.random.default_rng(EVALUATION_SEED), EVALUATION_STRINGS)
    tokens, _ = model.greedy(harness.encode(strings), max(map(len, strings)) + 1)
    return float(np.mean([p == s[::-1] for p, s in zip(decode(tokens.numpy()), strings)]))


def attention_of(kind: str) -> type[torch.nn.Module] | None:
    return None if kind == "no attention" else type(f"Mistaken_{kind}", (Mistaken,), {"kind": kind})


def trajectory(kind: str, seed: int, stages: tuple[float, ...] = STAGE_EPOCHS) -> list[float]:
    """The training check's figure after each stage of one training, through the harness's own grade_reversal as
    the check calls it (one training, gone on with from stage to stage)."""
    harness = load_harness()
    strings = evaluation_strings(np.random.default_rng(EVALUATION_SEED), EVALUATION_STRINGS)
    attention = attention_of(kind)
    scores = []
    for epochs in stages:
        tokens, _ = harness.grade_reversal(attention, " ".join(strings), seed, epochs)
        scores.append(float(np.mean([p == s[::-1] for p, s in zip(decode(tokens.numpy()), strings)])))
    return scores


def _trajectory_in_process(kind: str, seed: int, environment: dict[str, str], stages: tuple[float, ...]) -> list[float]:
    done = subprocess.run([sys.executable, "-m", __spec__.name, "--trajectory", kind, "--seed", str(seed),
                           "--stages", ",".join(f"{e:g}" for e in stages)],
                          env={**os.environ, **environment}, capture_output=True, text=True, check=True)
    return [float(x) for x in json.loads(done.stdout)]


def _rates(rates: Any) -> dict[str, object]:
    return {"should_pass": rates.passing, "should_fail": rates.failing, "failed_early": rates.failed_passing,
            "passed_early": rates.passed_failing, "decided_at": rates.decided_at,
            "mean_epochs": round(rates.mean_work, 3)}


def calibration(*, kinds: tuple[str, ...] = KINDS, seeds: tuple[int, ...] = CALIBRATION_SEEDS,
                held_out: tuple[int, ...] = HELD_OUT_SEEDS, kernels: int = len(KERNELS),
                stages: tuple[float, ...] = STAGE_EPOCHS, out: Path = STAGES_FILE, mark: float = PASS_EXACT,
                workers: int | None = None) -> StagedVerdict:
    """Train every kind from each seed, each in a process of its own on one thread; derive the stages from the
    ``seeds`` trainings, measure the error rates on the ``held_out`` seeds' and the harness's seed under the other
    ``kernels``, and write all of it to ``out``."""
    harness_seed = load_harness().CONFIG.seed
    plan = [("calibration", kind, seed, "as detected", {}) for kind in kinds for seed in seeds]
    plan += [("held out", kind, seed, "as detected", {}) for kind in kinds for seed in held_out]
    plan += [("held out", kind, harness_seed, label, environment) for kind in kinds
             for label, environment in KERNELS[1:kernels]]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = [pool.submit(_trajectory_in_process, kind, seed, environment, stages)
                   for _, kind, seed, _, environment in plan]
        runs = [(*entry[:4], future.result()) for entry, future in zip(plan, futures)]
    seconds = time.perf_counter() - started

    def of(part: str, should: tuple[str, ...]) -> list[list[float]]:
        return [scores for used, kind, _, _, scores in runs if used == part and kind in should]

    verdict = calibrate(stages, of("calibration", SHOULD_PASS), of("calibration", SHOULD_FAIL), mark=mark,
                        pass_margin=PASS_MARGIN, fail_margin=FAIL_MARGIN)
    measured: dict[str, object] = {
        "margins": {"pass": PASS_MARGIN, "fail": FAIL_MARGIN},
        "calibration": {"seeds": list(seeds), **_rates(error_rates(verdict, of("calibration", SHOULD_PASS),
                                                                   of("calibration", SHOULD_FAIL)))},
    }
    if held_out or kernels > 1:
        measured["held_out"] = {"seeds": list(held_out), "kernels": [label for label, _ in KERNELS[1:kernels]],
                                **_rates(error_rates(verdict, of("held out", SHOULD_PASS),
                                                     of("held out", SHOULD_FAIL)))}
    measured["harness_seed"] = {kind: _decided(verdict, scores) for used, kind, seed, label, scores in runs
                                if used == "calibration" and seed == harness_seed}
    verdict = StagedVerdict(verdict.mark, verdict.stages, measured)
    write_stages(verdict, out, trainings=len(runs), seconds=seconds)
    return verdict


def _decided(verdict: StagedVerdict, scores: list[float]) -> str:
    index, decision = verdict.first_decision(scores)
    return f"{'pass' if decision else 'fail'} after {verdict.stages[index].after:g} epochs ({scores[index]:.1%})"


def write_stages(verdict: StagedVerdict, out: Path, *, trainings: int, seconds: float) -> None:
    """``out`` as checks.py imports it: the stages and what was measured, as Python literals (a kit holds them as
    the constants of a module it does not ship)."""
    stages = ",\n".join(f"    ({s.after!r}, {s.pass_at!r}, {s.fail_below!r})" for s in verdict.stages)
    out.write_text(f'''"""The training check's stages (grader/check/staged.py), written by `python -m
solutions.practical10.measure_training --calibrate` on {datetime.now(UTC):%Y-%m-%d} ({trainings} trainings in
{seconds:.0f} s): do not edit by hand, run it again."""

MARK = {verdict.mark!r}
STAGE_EPOCHS = {tuple(s.after for s in verdict.stages)!r}
# (epochs trained, pass at or above, fail below): the exact-match rate on the grader's strings after that stage.
STAGES = (
{stages},
)
MEASURED = {json.dumps(dict(verdict.measured), indent=4)}
''', encoding="utf-8")


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


def numbers(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machines", action="store_true", help="the training check's figure under other kernels")
    parser.add_argument("--calibrate", action="store_true", help="measure and write the training check's stages")
    parser.add_argument("--kinds", default=",".join(KINDS), help="with --calibrate: kinds, comma-separated")
    parser.add_argument("--seeds", default=",".join(map(str, CALIBRATION_SEEDS)), help="with --calibrate")
    parser.add_argument("--held-out", default=",".join(map(str, HELD_OUT_SEEDS)), help="with --calibrate")
    parser.add_argument("--kernels", type=int, default=len(KERNELS), help="with --calibrate: how many kernel sets")
    parser.add_argument("--stages", default=",".join(f"{e:g}" for e in STAGE_EPOCHS),
                        help="with --calibrate: the stages, in epochs (the last one decides at the pass mark)")
    parser.add_argument("--out", type=Path, default=STAGES_FILE, help="with --calibrate: the file written")
    parser.add_argument("--one", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--trajectory", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    stages = tuple(float(e) for e in args.stages.split(","))
    if args.one:
        print(json.dumps({"exact": graded_exact(args.one, args.seed)}))
        return
    if args.trajectory:
        print(json.dumps(trajectory(args.trajectory, args.seed, stages)))
        return
    if args.calibrate:
        verdict = calibration(kinds=tuple(k for k in args.kinds.split(",") if k), seeds=numbers(args.seeds),
                              held_out=numbers(args.held_out), kernels=args.kernels, stages=stages, out=args.out)
        print(f"wrote {args.out}")
        print(json.dumps(dict(verdict.measured), indent=1))
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
