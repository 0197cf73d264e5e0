"""practical10: the references agree, the harness trains what the assignment says, and the sample class gets the
grades its README table says, with the training check scored by the grader from the tokens the model wrote."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.check import load_assignment, load_solution_module
from grader.check.provided import ProvidedFile
from grader.discover import Submission
from grader.execute import isolation
from grader.execute.workers import WarmUp, Worker
from grader.pipeline import ClassRun, RunRequest, grade_class
from grader.pipeline.submission_run import grade_submission

from .bundled_classes import BundledClasses
from .conftest import ROOT
from .sample_classes import (
    assert_full_marks,
    assert_loses_only,
    assert_readme_lists_every_sample,
    by_student,
)

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

ref_np = load_solution_module("practical10", "reference_numpy")
ref_torch = load_solution_module("practical10", "reference_torch")
checks = load_solution_module("practical10", "checks")
measure = load_solution_module("practical10", "measure_training")
SAMPLES = ROOT / "tests" / "submissions" / "practical10"
FULL = {"q1": 15, "q2": 20, "q3": 15, "q4": 50}


def as_torch(*arrays: np.ndarray) -> list[torch.Tensor]:
    return [torch.from_numpy(a) for a in arrays]


def test_question_1_references_agree_on_the_practical_and_random_matrices() -> None:
    rng = np.random.default_rng(10)
    cases = [(checks.X, checks.W_Q, checks.W_K, checks.W_V)]
    cases += [(rng.normal(size=(n, d)), rng.normal(size=(d, k)), rng.normal(size=(d, k)), rng.normal(size=(d, v)))
              for n, d, k, v in ((5, 4, 3, 2), (2, 2, 1, 5), (7, 3, 6, 1))]
    for X, W_Q, W_K, W_V in cases:
        for got, expected in zip(ref_torch.self_attention(*as_torch(X, W_Q, W_K, W_V)),
                                 ref_np.self_attention(X, W_Q, W_K, W_V)):
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)
        q = rng.normal(size=X.shape[1])
        for got, expected in zip(ref_torch.scaled_dot_product_attention(*as_torch(q, X)),
                                 ref_np.scaled_dot_product_attention(q, X)):
            np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)
    heads = [(checks.W_Q, checks.W_K, checks.W_V), checks.SECOND_HEAD]
    expected = ref_np.multi_head_attention(checks.X, heads, checks.W_O)
    got = ref_torch.multi_head_attention(torch.from_numpy(checks.X), [as_torch(*h) for h in heads],
                                         torch.from_numpy(checks.W_O))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    assert expected.shape == (4, 3)


def test_the_practicals_attention_map_is_a_distribution_per_row() -> None:
    _, _, _, A, Z = ref_np.self_attention(checks.X, checks.W_Q, checks.W_K, checks.W_V)
    np.testing.assert_allclose(A.sum(axis=1), 1.0)
    # The practical's third row by hand: scores Q[2] . K^T / sqrt(2).
    scores = np.array([-1.25, 4.75]) @ np.array([[5.75, 1.5], [2.0, -0.5], [4.5, 2.0], [-2.5, 0.5]]).T / np.sqrt(2)
    np.testing.assert_allclose(A[2], np.exp(scores) / np.exp(scores).sum())
    np.testing.assert_allclose(Z, A @ (checks.X @ checks.W_V))


@pytest.mark.parametrize("lengths", [None, [4, 1, 3]])
def test_dot_prod_attention_references_agree(lengths: list[int] | None) -> None:
    rng = np.random.default_rng(3)
    layer = ref_torch.DotProdAttention(4).double()
    W_c = layer.W_c.weight.detach().numpy()
    query, context = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 4, 4))
    mask = None if lengths is None else np.arange(4)[None, :] < np.array(lengths)[:, None]
    output, weights = layer(*as_torch(query, context), None if mask is None else torch.from_numpy(mask))
    expected_output, expected_weights = ref_np.dot_prod_attention(query, context, mask, W_c)
    np.testing.assert_allclose(weights.detach().numpy(), expected_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(output.detach().numpy(), expected_output, rtol=1e-12, atol=1e-14)
    if mask is not None:
        assert (expected_weights[~np.broadcast_to(mask[:, None, :], expected_weights.shape)] == 0).all()


def test_the_grader_decodes_and_draws_strings_as_the_harness_does() -> None:
    harness = measure.load_harness()
    assert (checks.ALPHABET, checks.EOS, checks.FIRST_LETTER) == (harness.ALPHABET, harness.EOS, 3)
    assert (harness.CONFIG.min_length, harness.CONFIG.max_length) == (checks.MIN_LENGTH, checks.MAX_LENGTH)
    strings = checks.evaluation_strings(np.random.default_rng(0), 50)
    assert {len(s) for s in strings} <= set(range(checks.MIN_LENGTH, checks.MAX_LENGTH + 1))
    tokens = harness.encode([s[::-1] for s in strings], eos=True).numpy()
    assert checks.decode(tokens) == harness.decode(torch.from_numpy(tokens)) == [s[::-1] for s in strings]


@pytest.mark.slow
def test_the_recorded_training_figures_hold_on_this_machine_within_what_machines_differ_by() -> None:
    """The thresholds in checks.py come from runs on one machine; another CPU trains to other figures (measured: the
    model without attention reached 0.534 on an AMD EPYC and 0.47 on an Intel Xeon, the reference 0.994 on both).
    Whatever machine runs this, the reference and the model without attention are both further than the machine
    margin from the pass mark, so neither's verdict can depend on the machine."""
    torch.set_num_threads(1)
    try:
        with_attention, without = measure.measure(ref_torch.DotProdAttention), measure.measure(None)
    finally:
        torch.set_num_threads(2)
    assert with_attention["exact"] >= 0.97
    assert 0.35 <= without["exact"] <= 0.70
    assert checks.REFERENCE_PEAKS - 0.15 <= with_attention["peaks"] <= 1.0
    assert checks.REFERENCE_NEAR - 0.15 <= with_attention["near"] <= 1.0
    assert without["exact"] + checks.MACHINE_MARGIN < checks.PASS_EXACT < with_attention["exact"] - \
        checks.MACHINE_MARGIN


def test_a_training_near_the_pass_mark_is_trained_again_and_the_mean_decides() -> None:
    def again() -> float:
        raise AssertionError("trained a second time, far from the pass mark")

    pass_mark, margin = checks.PASS_EXACT, checks.MACHINE_MARGIN
    assert checks.trainings(pass_mark + margin + 0.01, again) == [pass_mark + margin + 0.01]
    assert checks.trainings(pass_mark - margin - 0.01, again) == [pass_mark - margin - 0.01]
    runs = checks.trainings(pass_mark - margin / 2, lambda: pass_mark + margin)
    assert runs == [pass_mark - margin / 2, pass_mark + margin] and np.mean(runs) >= pass_mark
    told = checks.what_it_reached([0.8, 0.9], 0.95, 300)
    assert "trained again" in told and "80.0%" in told and "90.0%" in told and "85.0% on average" in told


@pytest.mark.parametrize("suffix", [".ipynb", ".py"])
def test_the_assignment_states_the_measured_figures(suffix: str) -> None:
    """Students read what a correct attention reaches, what the model without it reaches, and the pass mark."""
    text = (ROOT / "assignments" / "practical10" / f"practical10{suffix}").read_text()
    for figure in (f"{checks.REFERENCE_EXACT:.1%}", f"{checks.BASELINE_EXACT:.1%}", f"{checks.PASS_EXACT:.0%}"):
        assert figure in text


@pytest.fixture(scope="module")
def sample(bundled: BundledClasses) -> ClassRun:
    return bundled.run("practical10")  # the session's run, shared


@pytest.mark.slow
@pytest.mark.parametrize("student", ["reference_style", "seed_style"])
def test_correct_samples_earn_full_marks(sample: ClassRun, student: str) -> None:
    assert_full_marks(by_student(sample)[student], FULL)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "question", "check_id", "says"), [
    ("mistake_unscaled", "q1", "q1.practical", "the probability vector p differs from the reference in 4 of 4"),
    ("mistake_typed_numbers", "q2", "q2.key_size", "the Q returned by self_attention has shape (4, 2)"),
    ("mistake_heads_summed", "q3", "q3.practical", "the output Z of multi_head_attention differs"),
    ("mistake_padding_ignored", "q4", "q4.padding", "the attention tensor a differs from the reference"),
    ("mistake_concat_order", "q4", "q4.no_mask", "the output tanh(W_c [c_t; s_t]) differs from the reference"),
    ("mistake_softmax_axis", "q4", "q4.no_mask", "the attention tensor a differs from the reference"),
    ("mistake_scaled_scores", "q4", "q4.no_mask", "the attention tensor a differs from the reference"),
])
def test_each_mistake_loses_points_on_its_question_only(sample: ClassRun, student: str, question: str,
                                                        check_id: str, says: str) -> None:
    assert_loses_only(by_student(sample)[student], FULL, question, check_id, says)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "failed"), [
    ("mistake_typed_numbers", ["q2.key_size", "q2.random"]),  # the practical's own numbers pass
    ("mistake_padding_ignored", ["q4.padding", "q4.one_step", "q4.random"]),  # and the model still learns
    ("mistake_concat_order", ["q4.no_mask", "q4.padding", "q4.one_step", "q4.random"]),  # W_c learns either order
    ("mistake_softmax_axis", ["q4.no_mask", "q4.padding", "q4.one_step", "q4.random", "q4.training"]),
    ("mistake_scaled_scores", ["q4.no_mask", "q4.padding", "q4.one_step", "q4.random", "q4.training"]),
])
def test_which_checks_tell_each_mistake(sample: ClassRun, student: str, failed: list[str]) -> None:
    assert [c.check_id for c in by_student(sample)[student].checks if not c.passed] == failed


@pytest.mark.slow
def test_training_is_scored_by_the_grader_and_shown(sample: ClassRun) -> None:
    training = next(c for c in by_student(sample)["seed_style"].checks if c.check_id == "q4.training")
    assert training.passed
    assert "strings the grader chose exactly" in training.notes[0]
    assert f"the pass mark is {checks.PASS_EXACT:.0%}" in training.notes[0]
    assert "the highest weight falls on the character being written" in training.notes[1]
    (heatmap,) = training.heatmaps
    assert heatmap.reference_title == "Ideal (anti-diagonal)"
    n = len(heatmap.xticks)
    assert checks.MIN_LENGTH <= n <= checks.MAX_LENGTH and heatmap.title.endswith(f"'{''.join(heatmap.xticks)}'")
    assert np.array_equal(heatmap.reference, np.eye(n)[::-1])
    student = np.array(heatmap.student)
    np.testing.assert_allclose(student.sum(axis=1), 1.0, atol=1e-4)
    # Reversal: most output steps put their highest weight on the character they write.
    assert np.mean(student.argmax(axis=1) == np.arange(n)[::-1]) > 0.5
    failed = next(c for c in by_student(sample)["mistake_softmax_axis"].checks if c.check_id == "q4.training")
    assert "below the pass mark" in failed.message and "the model without attention" in failed.message


@pytest.mark.slow
def test_the_same_submission_trains_to_the_same_accuracy(sample: ClassRun, tmp_path: Path) -> None:
    """Same code, same figures, whoever submits it: reference_style graded again under another student id trains with
    the harness's fixed seed and is scored on the same strings (the evaluation set does not depend on the student)."""
    again = tmp_path / "class"
    again.mkdir()
    shutil.copy(SAMPLES / "reference_style.py", again / "another_student.py")
    (result,) = grade_class(RunRequest(assignment="practical10", submissions_dir=again,
                                       out_dir=tmp_path / "out")).results
    first = by_student(sample)["reference_style"]

    def training(r: object) -> object:
        return next(c for c in r.checks if c.check_id == "q4.training")  # type: ignore[attr-defined]

    assert training(result).notes == training(first).notes
    assert training(result).heatmaps == training(first).heatmaps


@pytest.mark.slow
def test_hand_computed_answers_are_shown_beside_the_reference(sample: ClassRun) -> None:
    check = next(c for c in by_student(sample)["reference_style"].checks if c.check_id == "q2.practical")
    assert [t.label for t in check.tables] == [f"the {name} returned by self_attention"
                                               for name in ("Q", "K", "V", "attention map A", "Z")]
    assert all(not t.bad for t in check.tables)
    typed = next(c for c in by_student(sample)["mistake_typed_numbers"].checks if c.check_id == "q2.practical")
    assert typed.passed and len(typed.tables) == 5  # 4 decimals are enough for the practical's own numbers
    report = (sample.out_dir / "students" / "mistake_unscaled" / "report.html").read_text()
    assert "the probability vector p, shape (4)" in report and "marked ≠ differ" in report
    hidden = next(c for c in by_student(sample)["reference_style"].checks if c.check_id == "q2.random")
    assert not hidden.tables  # random matrices are not shown


@pytest.mark.slow
def test_the_training_stops_at_the_first_stage_that_decides_and_says_so(sample: ClassRun) -> None:
    """Every sample's training is decided before the last epoch (the stages in training_stages.py were measured on
    such trainings), each verdict what the full five epochs give (docs/assignments.md), and the message or note says
    how much training decided. Scores scaled by sqrt(H), which five epochs leave near the pass mark (74-77% from the
    harness's seed), are far below every training that passes at that stage."""
    verdict = checks.staged_verdict()
    expected = {"reference_style": True, "seed_style": True, "mistake_padding_ignored": True,
                "mistake_concat_order": True, "mistake_softmax_axis": False, "mistake_scaled_scores": False}
    for student, passes in expected.items():
        training = next(c for c in by_student(sample)[student].checks if c.check_id == "q4.training")
        assert training.passed is passes, (student, training.message)
        told = " ".join((training.message, *training.notes))
        epochs = float(re.search(r"after ([\d.]+) of 5 epochs, which decides it", told).group(1))
        assert epochs < verdict.work and "trained again" not in told, (student, told)
        stage = next(s for s in verdict.stages if s.after == epochs)
        exact = float(re.search(r"reversed (\d+\.\d)% of 300 strings", told).group(1)) / 100
        assert (exact >= stage.pass_at) if passes else (exact < stage.fail_below), (student, exact, stage)


@settings(max_examples=30, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=1, max_size=4),
       used=st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=1, max_size=6),
       lr=st.sampled_from([1e-4, 1e-3, 3e-3, 0.1]), seed=st.integers(0, 2**16))
def test_the_harness_adam_is_torch_adam_bit_for_bit(shapes: list[tuple[int, int]], used: list[list[bool]], lr: float,
                                                     seed: int) -> None:
    """The harness trains with its own Adam (torch's class imports torch's compiler when first made: 0.8 s a
    process); the calibrated stages were measured with torch's, so every step must give the very same parameters,
    including for a parameter that has no gradient at some steps (a part the student's attention left unused)."""
    harness = measure.load_harness()
    generator = torch.Generator().manual_seed(seed)
    start = [torch.randn(shape, generator=generator, dtype=torch.float32) for shape in shapes]
    ours, theirs = ([p.clone().requires_grad_() for p in start] for _ in range(2))
    optimizers = harness.Adam(ours, lr=lr), torch.optim.Adam(theirs, lr=lr)
    targets = [torch.randn(shape, generator=generator) for shape in shapes]
    for step in used:
        for params, optimizer in zip((ours, theirs), optimizers):
            optimizer.zero_grad()
            terms = [((p - t).sin() ** 2).sum() for p, t, u in zip(params, targets, step) if u]
            if terms:
                sum(terms).backward()
            optimizer.step()
        for mine, torchs in zip(ours, theirs):
            assert torch.equal(mine, torchs), (step, (mine - torchs).abs().max())


def test_the_harness_trains_without_importing_torchs_compiler() -> None:
    """What the harness's own Adam is for: a process that trains with it never imports torch._dynamo."""
    program = ("import sys, torch\n"
               f"sys.path.insert(0, {str(SAMPLES.parents[2] / 'assignments' / 'practical10')!r})\n"
               "import reversal\n"
               "training = reversal.Training(None, reversal.Config(train_size=64, epochs=1), log=lambda line: None)\n"
               "training.until(1)\n"
               "print('torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False", done.stderr


def test_a_zygote_imports_torchs_compiler_only_for_a_harness_that_makes_a_torch_optimizer() -> None:
    spec = load_assignment("practical10")
    assert spec.warm_up == "training"
    assert load_assignment("attention_scoring").warm_up == ""
    made = {f.name: f.makes_torch_optimizer for f in spec.provided_files}
    assert made["reversal.py"] is False and not any(made.values())


@pytest.mark.parametrize("source, makes", [
    ("import torch\nopt = torch.optim.Adam(model.parameters())", True),
    ("from torch import optim\nopt = optim.SGD(ps, lr=0.1)", True),
    ("from torch.optim import AdamW", True),
    ("import torch.optim as optim", True),
    ("from torch import nn, optim", True),
    ("import torch\n# torch.optim.Adam is slow to make\nname = 'torch.optim'", False),
    ("from torch import nn\noptimizer = Adam(params)", False),
    ("def (:", False),
])
def test_a_provided_file_is_told_to_make_a_torch_optimizer_from_its_code(source: str, makes: bool) -> None:
    assert ProvidedFile("harness.py", source, reference=False).makes_torch_optimizer is makes


@pytest.mark.parametrize("warm_up", ["training", "optimizer"])
def test_a_worker_ready_to_train_stays_warm_from_one_submission_to_the_next(warm_up: WarmUp) -> None:
    """Its zygote pays a model's first pass once, and with "optimizer" the first torch optimiser's cost (torch's
    compiler, imported then, makes a cache folder in the temporary folder as the zygote's user); nothing of that may
    be left for the clean after a submission to find, or every practical10 submission would start a new zygote (2 s
    each)."""
    spec = load_assignment("practical10")
    assert spec.trains
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=spec.limits, warm_up=warm_up)
    try:
        path = SAMPLES / "reference_style.py"
        result = grade_submission(submission=Submission("s1", path, "python", datetime.now(UTC)), assignment=spec,
                                  root=path.parent, limits=spec.limits, worker=worker)
        assert result.score == result.max_score
        assert worker.clean() and not worker.swept  # nothing left to remove: the zygote is kept
    finally:
        worker.close()


def test_sample_readme_lists_every_sample() -> None:
    assert_readme_lists_every_sample(SAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "diagnosis"), [
    ("mistake_unscaled", "q1.unscaled"),
    ("mistake_typed_numbers", "q2.typed_numbers"),
    ("mistake_heads_summed", "q3.heads_added"),
    ("mistake_padding_ignored", "q4.padding_not_masked"),
    ("mistake_concat_order", "q4.state_first"),
    ("mistake_softmax_axis", "q4.softmax_over_steps"),
    ("mistake_scaled_scores", "q4.scaled"),
    ("reference_style", None),
    ("seed_style", None),
])
def test_each_sample_mistake_is_named(sample: ClassRun, student: str, diagnosis: str | None) -> None:
    result = by_student(sample)[student]
    named = {c.diagnosis.variant for c in result.checks if c.diagnosis is not None}
    assert named == ({diagnosis} if diagnosis else set())
    if diagnosis:
        report = (sample.out_dir / "students" / student / "report.html").read_text()
        assert "Likely cause:" in report
