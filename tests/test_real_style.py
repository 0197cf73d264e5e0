"""Submissions in the styles students really write (tests/submissions/real_style/), each with the grade it must get:
other names for layers and arguments, the book's own idioms, other conventions, other frameworks, and real mistakes
that must cost the same points whoever hands them in."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.results import SubmissionResult

from .bundled_classes import REAL_STYLE, BundledClasses
from .conftest import ROOT
from .sample_classes import by_student, student_reads

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_class_runs")]

CORPUS = ROOT / "tests" / "submissions" / "real_style"

# submission -> the score of each question it must get.
EXPECTED = {
    "attention_scoring": {
        "capital_w_v": {"q1": 25, "q2": 26, "q3": 25, "q4": 20},
        "lowercase_w_qk": {"q1": 25, "q2": 26, "q3": 25, "q4": 20},
        "descriptive_names": {"q1": 25, "q2": 26, "q3": 25, "q4": 16},
        "d_hid_signature": {"q1": 25, "q2": 30, "q3": 25, "q4": 20},
        "d2l_module_style": {"q1": 25, "q2": 30, "q3": 25, "q4": 20},
        "wrong_2d_branch": {"q1": 16, "q2": 30, "q3": 25, "q4": 20},
        "dot_softmax_dim1": {"q1": 25, "q2": 30, "q3": 5, "q4": 20},
        "dot_ignores_valid_lens": {"q1": 25, "q2": 30, "q3": 8, "q4": 20},
        "additive_no_projections": {"q1": 25, "q2": 0, "q3": 25, "q4": 20},
        "no_tanh_squeezed": {"q1": 25, "q2": 10, "q3": 25, "q4": 20},
        "tensorflow_port": {"q1": 0, "q2": 0, "q3": 0, "q4": 0},
        "mxnet_port": {"q1": 0, "q2": 0, "q3": 0, "q4": 0},
        "weights_in_a_local": {"q1": 25, "q2": 30, "q3": 22, "q4": 20},
        "book_answers_from_d2l": {"q1": 25, "q2": 0, "q3": 0, "q4": 20},
        "valid_lens_as_mask": {"q1": 3, "q2": 30, "q3": 3, "q4": 20},
        "padding_mask_unsqueezed_at_0": {"q1": 25, "q2": 30, "q3": 3, "q4": 20},
        "float_mask_arithmetic": {"q1": 3, "q2": 30, "q3": 3, "q4": 20},
        "mask_shape_asserted": {"q1": 0, "q2": 30, "q3": 3, "q4": 20},
        "mask_compared_with_zero": {"q1": 0, "q2": 30, "q3": 3, "q4": 20},
    },
    "bahdanau_attention": {
        "w1_w2_v_names": {"q1": 25, "q2": 40, "q3": 0},
        "renamed_arguments": {"q1": 30, "q2": 0, "q3": 0},
        "batched_convention": {"q1": 5, "q2": 0, "q3": 0},
        "softmax_dim1": {"q1": 11, "q2": 40, "q3": 0},
        "scores_column_no_tanh": {"q1": 5, "q2": 40, "q3": 0},
        "squeezed_then_softmax_dim1": {"q1": 5, "q2": 0, "q3": 0},
    },
    "keras_additive_attention": {
        "renamed_arguments": {"q1": 40, "q2": 45, "q3": 15},
        "scale_weight_name": {"q1": 34, "q2": 45, "q3": 15},
        "ignores_key": {"q1": 14, "q2": 45, "q3": 15},
        "transformer_signature": {"q1": 0, "q2": 0, "q3": 0},
        "torch_input_order": {"q1": 14, "q2": 45, "q3": 15},
    },
    "practical10": {
        "attn_combine": {"q1": 15, "q2": 20, "q3": 15, "q4": 46},
        "q1_only_scaled_by_d": {"q1": 15, "q2": 0, "q3": 15, "q4": 0},
        "returns_two_values": {"q1": 15, "q2": 0, "q3": 15, "q4": 50},
    },
}
# One wrong file per assignment whose mistake shows on random checks: graded under 20 student ids.
SAME_FOR_EVERYONE = {"attention_scoring": "wrong_2d_branch", "bahdanau_attention": "softmax_dim1",
                     "keras_additive_attention": "ignores_key", "practical10": "q1_only_scaled_by_d"}


@pytest.fixture(scope="module")
def corpus(bundled: BundledClasses) -> Callable[[str], dict[str, SubmissionResult]]:
    """Each assignment's corpus, graded once per session (tests/bundled_classes.py)."""
    return lambda assignment: by_student(bundled.run(assignment, REAL_STYLE))


def scores(result: SubmissionResult) -> dict[str, float]:
    return {q.id: q.score for q in result.questions}


def notes(result: SubmissionResult, question: str) -> str:
    return " ".join(next(q.notes for q in result.questions if q.id == question))


def chosen(result: SubmissionResult, question: str) -> str:
    """What "How your code was read" says of ``question``."""
    return " ".join(c.line for c in result.choices if c.question == question)


def check(result: SubmissionResult, check_id: str) -> object:
    return next(c for c in result.checks if c.check_id == check_id)


@pytest.mark.parametrize(("assignment", "student"), [(a, s) for a, files in EXPECTED.items() for s in files])
def test_each_real_style_submission_gets_its_grade(corpus: Callable[[str], dict[str, SubmissionResult]],
                                                   assignment: str, student: str) -> None:
    result = corpus(assignment)[student]
    assert result.status == "graded", result.reason
    assert scores(result) == EXPECTED[assignment][student], [(c.check_id, c.message) for c in result.checks
                                                              if not c.passed]


def readme_sections() -> dict[str, str]:
    text = (CORPUS / "README.md").read_text()
    return {part.split("\n", 1)[0].strip("` "): part for part in text.split("\n## ")[1:]}


def test_the_folder_holds_exactly_the_expected_submissions_each_in_the_readme_with_its_grade() -> None:
    sections = readme_sections()
    for assignment, files in EXPECTED.items():
        assert {p.name for p in (CORPUS / assignment).iterdir()} == {f"{s}.py" for s in files}, assignment
        for student, expected in files.items():
            assert f"| `{student}.py` | {sum(expected.values()):g} |" in sections[assignment], student


def test_renamed_layers_cost_only_the_parameters_check_which_names_them(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    scoring = corpus("attention_scoring")
    assert student_reads(scoring["capital_w_v"], "q2.parameters") == (
        "AdditiveAttention's parameters are not named as the assignment specifies: found `W_v` (1 x 4) used as "
        "`w_v`: rename it `w_v`")
    assert "found `w_q` (4 x 5) used as `W_q` and `w_k` (4 x 3) used as `W_k`: rename them `W_q` and `W_k`" in \
        student_reads(scoring["lowercase_w_qk"], "q2.parameters")
    assert "found `query_proj` (4 x 5) used as `W_q`, `key_proj` (4 x 3) used as `W_k` and `score_proj` (1 x 4) " \
           "used as `w_v`" in student_reads(scoring["descriptive_names"], "q2.parameters")
    assert "found `interaction` (5 x 3) used as `W`" in student_reads(scoring["descriptive_names"],
                                                                     "q4.parameter_shape")
    assert "found `W1` (3 x 5) used as `query_layer`, `W2` (3 x 5) used as `key_layer` and `V` (1 x 3) used as " \
           "`energy_layer`" in student_reads(corpus("bahdanau_attention")["w1_w2_v_names"], "q1.parameters")
    assert "found `scale_weight` (5) used as `scale`" in \
        student_reads(corpus("keras_additive_attention")["scale_weight_name"], "q1.scale_parameter")
    assert "found `attn_combine` (6 x 12) used as `W_c`" in \
        student_reads(corpus("practical10")["attn_combine"], "q4.parameters")


def test_arguments_named_otherwise_are_matched_by_their_names_and_the_report_says_so(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    renamed = corpus("attention_scoring")["d_hid_signature"]
    assert "q2: AdditiveAttention given num_hiddens as `d_hid`, because its constructor names its arguments " \
           "differently from the assignment, and the grader matched them by what their names say." in \
        chosen(renamed, "q2")
    assert "BilinearAttention given query_size as `d_q`, key_size as `d_k`" in chosen(renamed, "q4")
    assert "dim as `units`, dropout as `dropout_rate`" in \
        chosen(corpus("keras_additive_attention")["renamed_arguments"], "q1")
    assert "input_dim as `in_features`, hidden_dim as `hidden_size`" in \
        chosen(corpus("bahdanau_attention")["renamed_arguments"], "q1")


def test_a_signature_that_cannot_be_matched_is_said_once_with_both_signatures(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    result = corpus("keras_additive_attention")["transformer_signature"]
    said = ("KerasAdditiveAttention takes (d_model, d_k=None, d_v=None, dropout=0.0); the assignment passes dim, "
            "use_scale, causal, dropout: could not match use_scale and causal")
    for question in ("q1", "q2", "q3"):
        assert notes(result, question).count(said) == 1
        messages = [student_reads(result, c.check_id) for c in result.checks if c.question == question]
        # No TypeError from a positional guess (q1.scale_parameter builds it with dim and use_scale only: its own
        # sentence, "could not match use_scale").
        assert all(m.startswith(said[:said.index(", causal")]) for m in messages), messages


def test_answers_taken_from_d2l_are_named_with_their_question(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    result = corpus("attention_scoring")["book_answers_from_d2l"]
    assert student_reads(result, "q2.toy_example").startswith(
        "`d2l.AdditiveAttention` is the answer to q2: write your own")
    assert student_reads(result, "q3.toy_example").startswith(
        "`d2l.DotProductAttention` is the answer to q3: write your own")


def test_other_conventions_and_frameworks_say_so(corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    batched = corpus("bahdanau_attention")["batched_convention"]
    message = student_reads(batched, "q1.seed_example")
    assert message.startswith("AdditiveAttention.forward raised IndexError: Dimension out of range")
    assert "It was called with tensors of shapes (1, 20), (10, 20), (10, 20); the assignment passes one query, " \
           "unbatched" in message
    for student, framework in (("tensorflow_port", "TensorFlow"), ("mxnet_port", "MXNet")):
        result = corpus("attention_scoring")[student]
        said = f"could not import {framework}: this assignment is graded in PyTorch, and code written for " \
               f"{framework} cannot run in the grader"
        assert said in student_reads(result, "q1.textbook_1d")
        assert said in student_reads(result, "q2.toy_example")
        # Said once per question, not on each of its checks.
        assert notes(result, "q2").count(said) == 1


def test_real_mistakes_are_named(corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    scoring = corpus("attention_scoring")

    def named(student: str) -> set[str]:
        return {c.diagnosis.variant for c in scoring[student].checks if c.diagnosis is not None}

    assert named("dot_softmax_dim1") == {"q3.softmax_over_queries"}
    assert named("dot_ignores_valid_lens") == {"q3.ignores_valid_lens"}
    assert named("additive_no_projections") == {"q2.no_projections"}
    assert named("no_tanh_squeezed") == {"q2.no_tanh"}  # behind the shape error its squeeze() causes on one query
    assert named("padding_mask_unsqueezed_at_0") == set()  # its shape is told, with what it shows (below)
    bahdanau = corpus("bahdanau_attention")
    assert {c.diagnosis.variant for c in bahdanau["softmax_dim1"].checks
            if c.diagnosis is not None} == {"q1.softmax_size_one_axis"}
    # Behind an (n, 1) column of weights: read as (n,), its values show the missing tanh.
    assert {c.diagnosis.variant for c in bahdanau["scores_column_no_tanh"].checks
            if c.diagnosis is not None} == {"q1.no_tanh"}
    # A 0-d-like error with one key, but no bare .squeeze() in the code that raised: no squeeze named.
    assert all(c.diagnosis is None for c in bahdanau["squeezed_then_softmax_dim1"].checks)


def test_shape_errors_say_what_the_answer_shows(corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    scoring = corpus("attention_scoring")
    assert "something indexed by the batch was broadcast along the queries axis" in \
        student_reads(scoring["padding_mask_unsqueezed_at_0"], "q3.toy_example")
    assert "your code calls .squeeze() with no axis (line 33: `scores = self.w_v(features).squeeze()`)" in \
        student_reads(scoring["no_tanh_squeezed"], "q2.toy_example")
    assert "it has an extra axis of size 1; read as (10,), it differs from the reference" in \
        student_reads(corpus("bahdanau_attention")["scores_column_no_tanh"], "q1.seed_example")


@pytest.mark.parametrize("assignment", SAME_FOR_EVERYONE)
def test_the_same_wrong_file_gets_one_grade_whoever_submits_it(assignment: str, tmp_path: Path) -> None:
    source = CORPUS / assignment / f"{SAME_FOR_EVERYONE[assignment]}.py"
    folder = tmp_path / "class"
    folder.mkdir()
    for number in range(20):
        shutil.copy(source, folder / f"student{number:02d}.py")
    results = grade_class(RunRequest(assignment=assignment, submissions_dir=folder, out_dir=tmp_path / "out"),
                          RunOptions(jobs=2)).results
    assert len(results) == 20
    assert len({r.score for r in results}) == 1
    assert len({frozenset(c.check_id for c in r.checks if not c.passed) for r in results}) == 1
    assert 0 < results[0].score < results[0].max_score


def test_parameters_in_another_order_are_named_once_for_the_question(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    """Graded as called (Keras's order): the checks that pass the key fail as the code does, and the question says
    why, once."""
    result = corpus("keras_additive_attention")["torch_input_order"]
    said = ("Your KerasAdditiveAttention.forward takes (query, key, value=None, query_mask=None, value_mask=None, "
            "return_attention_scores=False): the assignment calls forward(query, value, key, query_mask, value_mask, "
            "return_attention_scores), in that order; reorder your parameters")
    assert notes(result, "q1").count(said) == 1
    assert student_reads(result, "q1.key_given") == ("KerasAdditiveAttention.forward raised TypeError: "
                                                     "KerasAdditiveAttention.forward() got multiple values for "
                                                     "argument 'key'")
    assert said not in notes(result, "q2") + notes(result, "q3")  # their checks pass: nothing to explain


def test_lengths_used_as_a_mask_are_named_where_a_mask_makes_the_check_pass(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    result = corpus("attention_scoring")["valid_lens_as_mask"]
    causes = {c.check_id: c.diagnosis.variant for c in result.checks if c.diagnosis is not None}
    assert causes == {**{c: "q1.lengths_as_mask" for c in ("q1.textbook_1d", "q1.textbook_2d", "q1.random_1d",
                                                           "q1.random_2d", "q1.large_scores")},
                      **{c: "q3.lengths_as_mask" for c in ("q3.toy_example", "q3.toy_weights", "q3.random_1d",
                                                           "q3.eval_deterministic", "q3.dropout_in_training")}}
    # Its 2-D branch indexes the mask as 1-D: no mask of 2-D lengths makes q3.random_2d pass, so no cause is given.
    assert check(result, "q3.random_2d").diagnosis is None
    assert check(result, "q3.toy_example").diagnosis.explanation == (
        "Your DotProductAttention.forward uses valid_lens as a boolean mask (given one, it passes this check), but "
        "valid_lens holds each sequence's number of valid keys (lengths such as [2, 3]): build the mask from it, "
        "torch.arange(num_keys) < valid_lens[..., None]")


def test_masks_of_floats_asserted_or_compared_with_zero_are_named_at_the_line_that_raised(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    """Mask code that torch refuses bools for (1 - mask), that asserts the mask's shape, or that has no None branch:
    each check a mask makes pass is named, with what the code takes and its line that raised on the lengths."""
    scoring = corpus("attention_scoring")
    q1_all = {"q1.textbook_1d", "q1.textbook_2d", "q1.random_1d", "q1.random_2d", "q1.large_scores"}
    q3_not_2d = {"q3.toy_example", "q3.toy_weights", "q3.random_1d", "q3.eval_deterministic",
                 "q3.dropout_in_training"}
    expected = {  # student -> (named checks, what q1's and q3's code takes)
        "float_mask_arithmetic": (q1_all | q3_not_2d, "a 0/1 float mask", "a 0/1 float mask"),
        "mask_shape_asserted": (q1_all | q3_not_2d, "a boolean mask", "a boolean mask True where a key is padding"),
        "mask_compared_with_zero": ({"q1.textbook_1d", "q1.random_1d", "q1.large_scores"} | q3_not_2d
                                    | {"q3.random_2d"}, "a boolean mask", "a boolean mask"),
    }
    for student, (named, q1_kind, q3_kind) in expected.items():
        result = scoring[student]
        lines = (CORPUS / "attention_scoring" / f"{student}.py").read_text().splitlines()
        causes = {c.check_id: c for c in result.checks if c.diagnosis is not None}
        assert set(causes) == named, (student, sorted(causes))
        for cause in causes.values():
            label, kind = ("masked_softmax", q1_kind) if cause.question == "q1" else \
                ("DotProductAttention.forward", q3_kind)
            assert cause.diagnosis.variant == f"{cause.question}.lengths_as_mask"
            assert cause.diagnosis.explanation.startswith(f"Your {label} uses valid_lens as {kind} (given one, it "
                                                          "passes this check)"), (student, cause.check_id)
            if cause.status == "error":  # the line that raised, quoted from the grader's copy, hidden checks too
                place = cause.diagnosis.where.removeprefix(f"your {label}, line ")
                number, text = place.split(": ", 1)
                assert text == f"`{lines[int(number) - 1].strip()}`", (student, cause.check_id)
                assert text.strip("`") in cause.detail  # where the traceback says it raised
    assert "reorder your parameters" not in notes(scoring["mask_shape_asserted"], "q3")  # key_padding_mask: a mask
    said = check(scoring["mask_compared_with_zero"], "q3.toy_example").diagnosis.said
    assert said.endswith("Where: your DotProductAttention.forward, line 41: "
                         "`scores = scores.masked_fill(valid_lens == 0, -1e6)`."), said


def test_weights_not_kept_cost_only_the_check_that_asks_for_them(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    """Its output is right: the random output checks read the weights too, and only note that they are missing."""
    result = corpus("attention_scoring")["weights_in_a_local"]
    failed = [c.check_id for c in result.checks if not c.passed]
    assert failed == ["q3.toy_weights"]
    assert student_reads(result, "q3.toy_weights") == "DotProductAttention does not store self.attention_weights in " \
                                                     "forward"
    noted = [n for c in result.checks if c.check_id in ("q3.random_1d", "q3.random_2d") for n in c.notes]
    assert noted == ['DotProductAttention.attention_weights is not kept: that costs points only in "toy example: '
                     'stores attention_weights, uniform over the valid keys"; this check grades the rest.'] * 2


def test_a_partial_return_is_told_which_of_its_values_are_right(
        corpus: Callable[[str], dict[str, SubmissionResult]]) -> None:
    """No credit for two of five values (the check is the unit of points), but the message says they are right."""
    result = corpus("practical10")["returns_two_values"]
    assert student_reads(result, "q2.practical").endswith(
        "self_attention should return 5 values (Q, K, V, A, Z), but returned a tuple of 2 items; the values it "
        "returned are right for A, Z: return all 5, in that order (the check's points come with the whole answer)")
