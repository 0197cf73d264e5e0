"""keras_additive_attention: the references are what Keras 3 computes, and the sample class gets its grades.

Keras (a test dependency only) runs on its torch backend; its layer is called with masks as
``mask=[query_mask, value_mask]`` and causality as ``use_causal_mask=True``, on random inputs.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

os.environ.setdefault("KERAS_BACKEND", "torch")  # read once, when keras is imported
import keras

from grader.check import load_solution_module
from grader.pipeline import ClassRun

from .bundled_classes import BundledClasses
from .conftest import ROOT
from .sample_classes import (
    assert_full_marks,
    assert_loses_only,
    assert_readme_lists_every_sample,
    by_student,
)

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

ref_np = load_solution_module("keras_additive_attention", "reference_numpy")
ref_torch = load_solution_module("keras_additive_attention", "reference_torch")
SAMPLES = ROOT / "tests" / "submissions" / "keras_additive_attention"
FULL = {"q1": 40, "q2": 45, "q3": 15}


def test_keras_runs_on_the_torch_backend() -> None:
    assert keras.backend.backend() == "torch"


def random_case(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    batch, tq, tv, dim = (int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(2, 7)),
                          int(rng.integers(1, 5)))
    lengths = rng.integers(1, tv + 1, batch)
    query_mask = rng.random((batch, tq)) < 0.7
    return {"query": rng.normal(0, 1.5, (batch, tq, dim)), "value": rng.normal(size=(batch, tv, dim)),
            "key": rng.normal(0, 1.5, (batch, tv, dim)) if seed % 2 else None,
            "scale": rng.uniform(0.2, 2.0, dim) if seed % 3 else None,
            "value_mask": np.arange(tv)[None, :] < lengths[:, None] if seed % 4 else None,
            "query_mask": query_mask if seed % 5 else None, "causal": bool(seed % 2 == 0)}


def keras_result(case: dict) -> tuple[np.ndarray, np.ndarray]:
    layer = keras.layers.AdditiveAttention(use_scale=case["scale"] is not None)
    inputs = [case["query"].astype("float32"), case["value"].astype("float32")]
    if case["key"] is not None:
        inputs.append(case["key"].astype("float32"))
    mask = None
    if case["value_mask"] is not None or case["query_mask"] is not None:
        mask = [case["query_mask"], case["value_mask"]]
    layer.build([x.shape for x in inputs])
    if case["scale"] is not None:
        layer.set_weights([case["scale"].astype("float32")])
    output, scores = layer(inputs, mask=mask, use_causal_mask=case["causal"], return_attention_scores=True)
    return keras.ops.convert_to_numpy(output), keras.ops.convert_to_numpy(scores)


@pytest.mark.parametrize("seed", range(24))
def test_numpy_reference_is_what_keras_computes(seed: int) -> None:
    case = random_case(seed)
    expected = ref_np.additive_attention(case["query"], case["value"], case["key"], scale=case["scale"],
                                         query_mask=case["query_mask"], value_mask=case["value_mask"],
                                         causal=case["causal"])
    got = keras_result(case)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", range(12))
def test_torch_reference_agrees_with_numpy(seed: int) -> None:
    case = random_case(seed)
    dim = case["query"].shape[-1]
    layer = ref_torch.KerasAdditiveAttention(dim, use_scale=case["scale"] is not None, causal=case["causal"])
    layer = layer.double().eval()
    if case["scale"] is not None:
        with torch.no_grad():
            layer.scale.copy_(torch.from_numpy(case["scale"]))
    t = {k: (torch.from_numpy(np.asarray(v)) if isinstance(v, np.ndarray) else v) for k, v in case.items()}
    output, scores = layer(t["query"], t["value"], key=t["key"], query_mask=t["query_mask"],
                           value_mask=t["value_mask"], return_attention_scores=True)
    expected = ref_np.additive_attention(case["query"], case["value"], case["key"], scale=case["scale"],
                                         query_mask=case["query_mask"], value_mask=case["value_mask"],
                                         causal=case["causal"])
    np.testing.assert_allclose(scores.detach().numpy(), expected[1], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(output.detach().numpy(), expected[0], rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def sample(bundled: BundledClasses) -> ClassRun:
    return bundled.run("keras_additive_attention")  # the session's run, shared


@pytest.mark.slow
@pytest.mark.parametrize("student", ["reference_style", "keras_port"])
def test_correct_samples_earn_full_marks(sample: ClassRun, student: str) -> None:
    assert_full_marks(by_student(sample)[student], FULL)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "question", "check_id", "says"), [
    ("mistake_scale_ignored", "q1", "q1.key_given", "the attention scores (key given) differs from the reference"),
    ("mistake_mask_zero", "q2", "q2.value_mask", "the attention scores with value_mask differs from the reference"),
    ("mistake_causal_reversed", "q2", "q2.causal_square", "the attention scores (causal) differs"),
    ("mistake_query_mask_ignored", "q2", "q2.query_mask", "the output with query_mask differs from the reference"),
    ("mistake_value_mask_inverted", "q2", "q2.value_mask",
     "the attention scores with value_mask differs from the reference"),
    ("mistake_dropout_in_eval", "q3", "q3.eval_deterministic", "the output in eval mode differs from the reference"),
])
def test_each_mistake_loses_points_on_its_question_only(sample: ClassRun, student: str, question: str,
                                                        check_id: str, says: str) -> None:
    assert_loses_only(by_student(sample)[student], FULL, question, check_id, says)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "variant"), [
    ("reference_style", None),
    ("keras_port", None),
    ("mistake_scale_ignored", "q1.scale_ignored"),
    ("mistake_mask_zero", "q2.mask_zero"),
    ("mistake_causal_reversed", "q2.causal_reversed"),
    ("mistake_query_mask_ignored", "q2.query_mask_ignored"),
    ("mistake_value_mask_inverted", "q2.value_mask_inverted"),
    ("mistake_dropout_in_eval", "q3.dropout_in_eval"),
])
def test_each_sample_report_names_its_misconception(sample: ClassRun, student: str, variant: str | None) -> None:
    """Every failed check of a mistake sample names that sample's misconception; correct samples name none."""
    checks = by_student(sample)[student].checks
    diagnosed = {c.diagnosis.variant for c in checks if c.diagnosis is not None}
    assert diagnosed == ({variant} if variant else set())
    if variant:
        assert all(c.diagnosis is not None for c in checks if not c.passed)


def test_sample_readme_lists_every_sample() -> None:
    assert_readme_lists_every_sample(SAMPLES)
