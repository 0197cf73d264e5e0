"""One mistake, one penalty, for a student consistent in a convention of their own: a later question graded with the
reference of an earlier answer is graded again with the student's own when it fails that way, for any reason (values
included), and the better outcome counts; the grader, `grader check` and the kit agree (docs/writing-checks.md).

The causal fixture (tests/fixtures/solutions/causal) asks for a mask True where a query may attend; PyTorch's own
convention is True where a key is hidden, and an additive float mask (0 and -inf) is a third. Every pairing of a mask
with a module that reads one is graded: the module's question passes exactly when the module is right for the mask
asked for, or for the student's own mask, and the mask's question alone pays for a mask of another convention."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from grader.check.load import load_assignment
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.kit.build import build_kit
from grader.kit.bundle import KIT_FOLDER
from grader.kit.runner import load_kit
from grader.paths import ASSIGNMENTS_DIR
from grader.pipeline.self_check import public_only
from grader.results import PASSED, PUBLIC, SubmissionResult

from .conftest import FIXTURE_SOLUTIONS
from .test_dependent_questions import graded, in_kernel, scores

MASKS = {
    "asked": "torch.ones((steps, steps), dtype=torch.bool).tril()",
    "true_is_hidden": "torch.triu(torch.ones(steps, steps, dtype=torch.bool), diagonal=1)",
    "additive": "torch.zeros(steps, steps).masked_fill(torch.ones(steps, steps, dtype=torch.bool).triu(1), "
                "float('-inf'))",
}
READINGS = {
    "keeps_true": "scores.masked_fill(~causal_mask(steps), float('-inf'))",
    "hides_true": "scores.masked_fill(causal_mask(steps), float('-inf'))",
    "adds": "scores + causal_mask(steps)",
    "ignores": "scores",
}
# Which reading is right for which mask: the module is right for the mask asked for, or for the student's own.
READS = {"asked": "keeps_true", "true_is_hidden": "hides_true", "additive": "adds"}


def source(mask: str, reading: str) -> str:
    return textwrap.dedent(f"""
        import math

        import torch
        from torch import nn


        def causal_mask(steps):
            return {MASKS[mask]}


        class CausalAttention(nn.Module):
            def forward(self, queries, keys, values):
                steps = queries.shape[1]
                scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
                scores = {READINGS[reading]}
                return torch.softmax(scores, dim=-1) @ values
        """)


@pytest.fixture(scope="module")
def causal() -> Any:
    return load_assignment("causal", solutions_dir=FIXTURE_SOLUTIONS)


@pytest.fixture(scope="module")
def worker(causal: Any) -> Any:
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=causal.limits)
    yield worker
    worker.close()


def kit_of(name: str, solutions: Path, out: Path) -> Any:
    build_kit(name, solutions_dir=solutions, assignments_dir=out / "none", out_dir=out)
    return load_kit(out / name / KIT_FOLDER)


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return kit_of("causal", FIXTURE_SOLUTIONS, tmp_path_factory.mktemp("kit"))


def verdicts(result: SubmissionResult, visibility: str | None = PUBLIC) -> dict[str, str]:
    return {c.check_id: c.status for c in result.checks if visibility is None or c.visibility == visibility}


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize("mask", MASKS)
def test_the_module_pays_only_for_its_own_mistake_whatever_the_masks_convention(
        causal: Any, worker: Any, kit: Any, tmp_path: Path, mask: str, reading: str) -> None:
    text = source(mask, reading)
    result = graded(causal, worker, tmp_path, text)
    right = reading == "keeps_true" or READS[mask] == reading
    assert scores(result) == {"q1": 5.0 if mask == "asked" else 0.0, "q2": 10.0 if right else 0.0}, \
        [(c.check_id, c.message) for c in result.checks]
    assert verdicts(in_kernel(kit, text)) == verdicts(result)
    q2 = [c for c in result.checks if c.question == "q2"]
    rescued = right and reading != "keeps_true"  # passes only with the student's own mask
    for check in q2:
        said = [n for n in check.notes if n.startswith("Graded with your own causal_mask")]
        assert bool(said) == rescued, (check.check_id, check.notes)
        if rescued:  # what happened with the reference is what happened: other values, not a raise or a shape
            assert said[0].startswith("Graded with your own causal_mask: with the reference causal_mask in its "
                                      "place, your code's answer had other values ("), said
            assert said[0].endswith("; with yours it passes; the better result counts."), said
    question = next(q for q in result.questions if q.id == "q2")
    if rescued:  # said in full in the question's note, which a summary of failed checks still shows
        assert question.notes == ("Graded with your own causal_mask where that did better than the reference's: "
                                  "\"attends to a batch of 2, 4 steps\", \"random sizes\" and \"one sequence of 3 "
                                  "steps\".",)
        assert [c.why for c in question.choices if c.kind == "own_answer"] == \
            ["with the reference in its place your code gave other values, and with yours it passes"] * 3


def test_an_inverted_mask_is_named_and_grader_check_agrees(causal: Any, worker: Any, kit: Any,
                                                          tmp_path: Path) -> None:
    text = source("true_is_hidden", "hides_true")
    result = graded(causal, worker, tmp_path, text)
    mask = next(c for c in result.checks if c.check_id == "q1.mask")
    assert mask.diagnosis is not None and mask.diagnosis.name == "mask True where a key is hidden"
    checked = graded(public_only(causal), worker, tmp_path, text, student="s2")
    assert verdicts(checked) == verdicts(result) == verdicts(in_kernel(kit, text)) == \
        {"q1.mask": "failed", "q2.attends": PASSED, "q2.one_sequence": PASSED}
    assert scores(checked) == {"q1": 0.0, "q2": 6.0}


def test_a_check_marked_reference_only_is_never_graded_with_the_students_own_answer(
        worker: Any, tmp_path: Path) -> None:
    """An author marks a check whose point is the earlier answer's effect: the same student loses it, and only it,
    in the grader and in the kit."""
    solutions = tmp_path / "solutions"
    shutil.copytree(FIXTURE_SOLUTIONS / "causal", solutions / "causal")
    checks = solutions / "causal" / "checks.py"
    marked = checks.read_text().replace('title="one sequence of 3 steps")',
                                        'title="one sequence of 3 steps", reference_only=True)')
    assert marked != checks.read_text()
    checks.write_text(marked)
    assignment = load_assignment("causal", solutions_dir=solutions)
    text = source("true_is_hidden", "hides_true")
    result = graded(assignment, worker, tmp_path, text)
    assert verdicts(result, None) == {"q1.mask": "failed", "q2.attends": PASSED, "q2.random": PASSED,
                                      "q2.one_sequence": "failed"}
    one = next(c for c in result.checks if c.check_id == "q2.one_sequence")
    assert not any("your own" in n for n in one.notes), one.notes
    assert verdicts(in_kernel(kit_of("causal", solutions, tmp_path / "kit"), text)) == verdicts(result)


def test_a_question_not_written_is_blamed_on_nothing_else(worker: Any, tmp_path: Path) -> None:
    """bahdanau_attention's template with q3 (chunked_additive_attention) still its stub and an AdditiveAttention
    whose signature cannot be matched: q3 says it is not written, and nothing says their AdditiveAttention ran or was
    compared, nor that q3 was not graded because of it."""
    template = (ASSIGNMENTS_DIR / "bahdanau_attention" / "bahdanau_attention.py").read_text()
    stub = "    def __init__(self, input_dim, hidden_dim):\n        super().__init__()\n        # YOUR CODE HERE\n" \
           "        raise NotImplementedError\n"
    assert stub in template
    text = template.replace(stub, "    def __init__(self, config, vocabulary):\n        super().__init__()\n"
                                  "        self.config = config\n", 1)
    bahdanau = load_assignment("bahdanau_attention")
    result = graded(bahdanau, worker, tmp_path, text)
    q3 = next(q for q in result.questions if q.id == "q3")
    assert q3.checks and all(c.message.startswith("not written yet: ") for c in q3.checks), \
        [c.message for c in q3.checks]
    said = [*q3.notes, *(n for c in q3.checks for n in c.notes), *(c.why for c in q3.choices)]
    assert not any("your own" in n or "compared" in n or "AdditiveAttention takes" in n for n in said), said


def test_a_named_convention_says_where_the_students_code_is(causal: Any, worker: Any, kit: Any,
                                                          tmp_path: Path) -> None:
    """The likely cause ends with the student's function it is in and its line (a module's forward), in the grader
    and in the kit alike, and nothing where the grader cannot tell."""
    text = source("true_is_hidden", "hides_true")
    line = text.splitlines().index("def causal_mask(steps):") + 1
    for result in (graded(causal, worker, tmp_path, text), in_kernel(kit, text)):
        mask = next(c for c in result.checks if c.check_id == "q1.mask")
        assert mask.diagnosis is not None and mask.diagnosis.where == f"your causal_mask, line {line}"
        assert mask.diagnosis.said.endswith(f"(torch.tril, not triu). Where: your causal_mask, line {line}.")
