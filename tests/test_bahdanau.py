"""bahdanau_attention: the references agree, and the sample class gets the grades its README table says."""

from __future__ import annotations

import numpy as np
import pytest
import torch

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

ref_np = load_solution_module("bahdanau_attention", "reference_numpy")
ref_torch = load_solution_module("bahdanau_attention", "reference_torch")
SAMPLES = ROOT / "tests" / "submissions" / "bahdanau_attention"
FULL = {"q1": 30, "q2": 40, "q3": 30}


def torch_layer(rng: np.random.Generator, input_dim: int, hidden_dim: int) -> tuple[object, dict[str, np.ndarray]]:
    layer = ref_torch.AdditiveAttention(input_dim, hidden_dim).double()
    params = {name: rng.normal(size=tuple(p.shape)) for name, p in layer.named_parameters()}
    with torch.no_grad():
        for name, p in layer.named_parameters():
            p.copy_(torch.from_numpy(params[name]))
    return layer, params


@pytest.mark.parametrize("n", [1, 2, 10, 70_000])
def test_additive_attention_references_agree(n: int) -> None:
    rng = np.random.default_rng(n)
    layer, params = torch_layer(rng, 6, 5)
    query, key, value = rng.normal(size=(1, 6)), rng.normal(size=(n, 6)), rng.normal(size=(n, 3))
    expected_sum, expected_weights = ref_np.additive_attention(query, key, value, params)
    got_sum, got_weights = layer(*(torch.from_numpy(x) for x in (query, key, value)))
    assert got_weights.shape == (n,) and got_sum.shape == (3,)
    np.testing.assert_allclose(got_weights.detach().numpy(), expected_weights, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(got_sum.detach().numpy(), expected_sum, rtol=1e-10, atol=1e-12)
    assert np.isclose(expected_weights.sum(), 1.0)


def test_multi_head_reference_concatenates_the_heads() -> None:
    rng = np.random.default_rng(3)
    model = ref_torch.MultiHeadAdditiveAttention(4, 5, 3).double()
    heads = []
    for head in model.heads:
        heads.append({name: p.detach().numpy().copy() for name, p in head.named_parameters()})
    out = {f"out_layer.{name}": p.detach().numpy().copy() for name, p in model.out_layer.named_parameters()}
    query, key, value = rng.normal(size=(1, 4)), rng.normal(size=(7, 4)), rng.normal(size=(7, 4))
    expected_output, expected_weights = ref_np.multi_head_attention(query, key, value, heads, out)
    output, weights = model(*(torch.from_numpy(x) for x in (query, key, value)))
    assert weights.shape == (3, 7) and output.shape == (4,)
    np.testing.assert_allclose(weights.detach().numpy(), expected_weights, rtol=1e-10)
    np.testing.assert_allclose(output.detach().numpy(), expected_output, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("n", "chunk"), [(50, 7), (9, 1), (9, 100), (1, 3)])
def test_chunked_reference_equals_the_whole_computation(n: int, chunk: int) -> None:
    rng = np.random.default_rng(n * chunk)
    layer, _ = torch_layer(rng, 4, 6)
    query, key, value = (torch.from_numpy(rng.normal(0, 3, size=s)) for s in ((1, 4), (n, 4), (n, 2)))
    with torch.no_grad():
        whole = layer(query, key, value)
        chunked = ref_torch.chunked_additive_attention(layer, query, key, value, chunk)
    for got, expected in zip(chunked, whole):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12, atol=1e-15)


@pytest.fixture(scope="module")
def sample(bundled: BundledClasses) -> ClassRun:
    return bundled.run("bahdanau_attention")  # the session's run, shared


@pytest.mark.slow
@pytest.mark.parametrize("student", ["reference_style", "seed_style"])
def test_correct_samples_earn_full_marks(sample: ClassRun, student: str) -> None:
    assert_full_marks(by_student(sample)[student], FULL)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "question", "check_id", "says"), [
    ("mistake_squeeze", "q1", "q1.single_key", "AdditiveAttention.forward raised RuntimeError"),
    ("mistake_energy_without_bias", "q1", "q1.parameters", "has no parameter energy_layer.bias"),
    ("mistake_softmax_hidden_axis", "q1", "q1.seed_example",
     "the attention_weights returned by AdditiveAttention differs from the reference"),
    ("mistake_mean_of_heads", "q2", "q2.structure", "out_layer should be nn.Linear(num_heads * input_dim"),
    ("mistake_unchunked", "q3", "q3.memory", "chunked_additive_attention ran out of memory with 1,000,000 keys"),
    ("mistake_softmax_per_chunk", "q3", "q3.uneven_chunks",
     "the attention_weights returned by chunked_additive_attention differs from the reference"),
])
def test_each_mistake_loses_points_on_its_question_only(sample: ClassRun, student: str, question: str,
                                                        check_id: str, says: str) -> None:
    assert_loses_only(by_student(sample)[student], FULL, question, check_id, says)


# Each sample's diagnosis (solutions/bahdanau_attention/variants.py): its mistake's, or none for a correct one.
SAMPLE_DIAGNOSES = [
    ("reference_style", None),
    ("seed_style", None),
    ("mistake_squeeze", "q1.squeeze"),
    ("mistake_energy_without_bias", "q1.energy_without_bias"),
    ("mistake_softmax_hidden_axis", "q1.softmax_hidden_axis"),
    ("mistake_mean_of_heads", "q2.mean_of_heads"),
    ("mistake_unchunked", "q3.unchunked"),
    ("mistake_softmax_per_chunk", "q3.softmax_per_chunk"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("student", "variant"), SAMPLE_DIAGNOSES)
def test_each_sample_report_names_its_misconception(sample: ClassRun, student: str, variant: str | None) -> None:
    diagnosed = {c.diagnosis.variant for c in by_student(sample)[student].checks if c.diagnosis is not None}
    assert diagnosed == ({variant} if variant else set())


def test_every_sample_has_an_expected_diagnosis() -> None:
    samples = {p.stem for p in SAMPLES.iterdir() if p.suffix in (".py", ".ipynb")}
    assert samples == {student for student, _ in SAMPLE_DIAGNOSES}


@pytest.mark.slow
def test_only_the_memory_check_tells_chunked_from_whole(sample: ClassRun) -> None:
    failed = [c.check_id for c in by_student(sample)["mistake_unchunked"].checks if not c.passed]
    assert failed == ["q3.memory"]


@pytest.mark.slow
def test_heatmaps_show_one_row_per_head(sample: ClassRun) -> None:
    check = next(c for c in by_student(sample)["seed_style"].checks if c.check_id == "q2.four_heads")
    (heatmap,) = check.heatmaps
    assert (heatmap.xlabel, heatmap.ylabel) == ("Keys", "Heads")
    assert len(heatmap.reference) == 4 and len(heatmap.reference[0]) == 5
    assert np.allclose(heatmap.student, heatmap.reference, atol=1e-5)
    single = next(c for c in by_student(sample)["seed_style"].checks if c.check_id == "q1.seed_example")
    assert len(single.heatmaps[0].reference) == 1 and len(single.heatmaps[0].reference[0]) == 10


def test_sample_readme_lists_every_sample() -> None:
    assert_readme_lists_every_sample(SAMPLES)
