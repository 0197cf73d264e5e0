"""The training check's calibration (`grader calibrate practical10`, grader/check/calibration.py): the kinds of
attention trained, which should pass and which fail, the seeds and the stages. It writes training_stages.py.

Each kind is the reference DotProdAttention or one known mistake, as students make them; the verdict the fixed
5-epoch schedule gives each from the harness's seed is what the staged verdict must keep (docs/assignments.md, the
table of known mistakes).
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import torch

from grader.check import Calibration, assignment_file

from .checks import EVALUATION_SEED, EVALUATION_STRINGS, HARNESS_SEED, PASS_EXACT, decode, evaluation_strings


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


def attention_of(kind: str) -> type[torch.nn.Module] | None:
    return None if kind == "no attention" else type(f"Mistaken_{kind}", (Mistaken,), {"kind": kind})


def trajectory(kind: str, seed: int, stages: tuple[float, ...]) -> list[float]:
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



CALIBRATION = Calibration(trajectory, should_pass=SHOULD_PASS, should_fail=SHOULD_FAIL, stages=STAGE_EPOCHS,
                          mark=PASS_EXACT, pass_margin=PASS_MARGIN, fail_margin=FAIL_MARGIN, seeds=CALIBRATION_SEEDS,
                          held_out=HELD_OUT_SEEDS, check_seed=HARNESS_SEED, unit="epochs",
                          score="the exact-match rate on the grader's strings")
