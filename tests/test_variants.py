"""Mutation testing of the checks: every known-wrong variant, put into the model solution, is graded as a submission
and must lose points on its own question only, with its own diagnosis; the model solution must pass undiagnosed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.check.variants import Variant
from grader.pipeline import ClassRun
from grader.results import SubmissionResult

from .conftest import with_variants
from .mutants import base_of, missing_base, mutant_name, mutate, variants_of
from .sample_classes import by_student
from .seed_sweep import new_worker, sweep

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

# Every assignment with a catalogue of known mistakes (solutions/<name>/variants.py), found (tests/conftest.py); the
# repository's own all have one.
ASSIGNMENTS = tuple(with_variants())
REPOSITORY_ASSIGNMENTS = {"attention_scoring", "bahdanau_attention", "keras_additive_attention", "practical10"}
def scores(result: SubmissionResult) -> dict[str, float]:
    return {q.id: q.score for q in result.questions}


def test_the_repositorys_assignments_are_all_mutation_tested() -> None:
    assert set(ASSIGNMENTS) >= REPOSITORY_ASSIGNMENTS


def test_a_missing_model_solution_says_which_file_to_add_and_what_it_holds(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        base_of("bahdanau_attention", tmp_path).read_text()
    path = tmp_path / "bahdanau_attention" / "reference_style.py"
    assert str(failed.value) == missing_base("bahdanau_attention", path)
    assert str(failed.value).startswith(f"{path} is missing: ")
    assert "defines AdditiveAttention, MultiHeadAdditiveAttention, chunked_additive_attention as " in str(failed.value)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_question_has_variants_and_every_variant_a_mutation(assignment: str) -> None:
    variants = variants_of(assignment)
    spec = load_assignment(assignment)
    assert {v.question for v in variants} == {q.id for q in spec.questions}
    base = base_of(assignment).read_text()
    for variant in variants:
        assert mutate(base, variant) != base
        assert variant.explanation.startswith("Your ") and len(variant.explanation) < 300


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_model_solution_passes_without_a_diagnosis(mutants: Callable[[str], ClassRun], assignment: str) -> None:
    result = by_student(mutants(assignment))[base_of(assignment).stem]
    # The automatic part (written answers' points come when someone marks them).
    assert result.code_score == sum(q.max_score for q in result.questions), \
        (result.notes, [c.message for c in result.checks if not c.passed])
    assert all(c.diagnosis is None for c in result.checks)


@pytest.mark.slow
@pytest.mark.parametrize(("assignment", "variant"),
                         [(a, v) for a in ASSIGNMENTS for v in variants_of(a)], ids=lambda x: getattr(x, "id", x))
def test_each_variant_is_caught_on_its_question_with_its_diagnosis(mutants: Callable[[str], ClassRun], assignment: str,
                                                                    variant: Variant) -> None:
    run = by_student(mutants(assignment))
    mutant = run[mutant_name(variant)]
    # A mutant that did not run says why (a crash or a time-out is not a check letting the mistake through).
    assert mutant.status == "graded", (mutant.status, mutant.reason, mutant.notes)
    full, got = scores(run[base_of(assignment).stem]), scores(mutant)
    assert got[variant.question] < full[variant.question], f"{variant.id} passes every check of {variant.question}"
    assert {q: s for q, s in got.items() if q != variant.question} == \
        {q: s for q, s in full.items() if q != variant.question}
    diagnosed = {c.diagnosis.variant for c in run[mutant_name(variant)].checks if c.diagnosis is not None}
    assert diagnosed == {variant.id}


# ----- the same grade whoever submits it ------------------------------------------------------------------------
SWEPT_STUDENTS = tuple(f"s{number:03d}" for number in range(50))
# Checks left out of the sweep, each for its cost and because its verdict cannot depend on the student: q3.memory
# scores a million keys of fixed sizes by the memory the code needs; q4.training evaluates the trained model on
# strings that are the same for everyone (test_practical10.py grades it under two ids).
NOT_SWEPT = {("bahdanau_attention", "q3.memory"), ("practical10", "q4.training")}


def swept(assignment: str, tmp_path: Path) -> dict[str, dict[str, frozenset[str]]]:
    """The model solution and each mutant, graded for SWEPT_STUDENTS: submission -> student -> failing checks."""
    spec = load_assignment(assignment)
    base = base_of(assignment).read_text()
    sources = {"model solution": base} | {v.id: mutate(base, v) for v in spec.variants}
    paths = {}
    for name, source in sources.items():
        paths[name] = tmp_path / f"{name.replace('.', '_').replace(' ', '_')}.py"
        paths[name].write_text(source)
    names = list(paths)
    results: dict[str, dict[str, frozenset[str]]] = {}

    def grade_share(share: list[str]) -> None:
        worker = new_worker(spec)
        try:
            for name in share:
                results[name] = sweep(spec, paths[name], SWEPT_STUDENTS, worker,
                                      keep=lambda check: (assignment, check.id) not in NOT_SWEPT).failing()
        finally:
            worker.close()

    threads = [threading.Thread(target=grade_share, args=(names[i::2],)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_known_mistake_fails_the_same_checks_whoever_submits_it(assignment: str, tmp_path: Path) -> None:
    """Each variant, graded under 50 student ids (so 50 draws of every random check), fails the same checks for all;
    the model solution fails none for any. (That each fails some check is the mutation test's, above: q3.unchunked
    fails only q3.memory, which the sweep leaves out.)"""
    results = swept(assignment, tmp_path)
    assert len(results) == 1 + len(variants_of(assignment))
    differing = {}
    for name, failing in results.items():
        outcomes = {checks: sorted(s for s, f in failing.items() if f == checks) for checks in set(failing.values())}
        assert len(failing) == len(SWEPT_STUDENTS)
        if len(outcomes) > 1:
            differing[name] = {", ".join(sorted(checks)) or "none": students[:5]
                               for checks, students in outcomes.items()}
    assert not differing, differing
    assert results["model solution"][SWEPT_STUDENTS[0]] == frozenset()


def test_a_mutation_that_breaks_the_file_is_named_with_its_edit() -> None:
    """An edit whose new text loses the indentation: the test says which variant, which edit, and where."""
    base = "def f(x):\n    y = x * 2\n    return y\n"
    broken = Variant("q1.doubled", "q1", "doubled", "Your f doubles.", None, None,
                     (("    y = x * 2\n", "y = x * 3\n"),))
    with pytest.raises(pytest.fail.Exception) as failed:
        mutate(base, broken)
    message = str(failed.value)
    assert message.startswith("q1.doubled's mutation ('    y = x * 2\\n' -> 'y = x * 3\\n') makes a file Python cannot "
                              "read: ")
    assert "at line 2: 'y = x * 3'" in message
