"""The bundled sample class, graded as `make grade` does: right scores, right messages, stable reruns."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .conftest import SAMPLES
from .sample_classes import student_reads

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_class_runs")]

FULL = {"q1": 25, "q2": 30, "q3": 25, "q4": 20}
CORRECT = ["textbook", "older_edition", "einsum_style", "magics", "noisy", "folder_student"]
# Each sample mistake costs points on exactly one question.
MISTAKES = {
    "mistake_softmax_axis": "q1", "mistake_mask_zero": "q1", "mistake_ignores_2d": "q1",
    "mistake_padding_lengths": "q1", "mistake_last_keys": "q1",
    "mistake_no_tanh": "q2", "mistake_extra_bias": "q2",
    "mistake_no_scaling": "q3", "mistake_dropout_in_eval": "q3",
    "mistake_bilinear_scaled": "q4",
}
# The known mistake (solutions/attention_scoring/variants.py) each sample's report names; None: no diagnosis at all.
DIAGNOSES = {
    **{student: None for student in CORRECT},
    "mistake_softmax_axis": "q1.softmax_over_queries", "mistake_mask_zero": "q1.mask_value_zero",
    "mistake_ignores_2d": "q1.ignores_2d_valid_lens",
    "mistake_padding_lengths": "q1.padding_lengths", "mistake_last_keys": "q1.last_keys_kept",
    "mistake_no_tanh": "q2.no_tanh", "mistake_extra_bias": "q2.bias_present",
    "mistake_no_scaling": "q3.unscaled", "mistake_dropout_in_eval": "q3.dropout_in_eval",
    "mistake_bilinear_scaled": "q4.scaled",
}


def by_student(run: ClassRun) -> dict:
    return {r.student: r for r in run.results}


def test_every_submission_has_exactly_one_result(sample_run: ClassRun) -> None:
    expected = {p.stem if p.is_file() else p.name for p in SAMPLES.iterdir() if p.suffix in (".py", ".ipynb") or
                p.is_dir()}
    assert {r.student for r in sample_run.results} == expected
    with open(sample_run.out_dir / "grades.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["student"] for row in rows) == sorted(expected)
    assert sample_run.internal_errors == 0


@pytest.mark.parametrize("student", CORRECT)
def test_correct_submissions_in_every_style_earn_full_marks(sample_run: ClassRun, student: str) -> None:
    result = by_student(sample_run)[student]
    failures = [f"{c.check_id}: {c.message}" for c in result.checks if not c.passed]
    assert failures == []
    assert {q.id: q.score for q in result.questions} == FULL


def test_warnings_and_stderr_never_cost_points(sample_run: ClassRun) -> None:
    noisy = by_student(sample_run)["noisy"]
    assert noisy.score == 100
    assert any("Warning" in u.stderr for u in noisy.units) or "Warning" in "".join(q.stderr for q in noisy.questions)


@pytest.mark.parametrize(("student", "question"), sorted(MISTAKES.items()))
def test_each_mistake_loses_points_only_on_its_question(sample_run: ClassRun, student: str, question: str) -> None:
    result = by_student(sample_run)[student]
    scores = {q.id: q.score for q in result.questions}
    assert scores[question] < FULL[question]
    assert {q: s for q, s in scores.items() if q != question} == {q: s for q, s in FULL.items() if q != question}
    failed = [c for c in result.checks if not c.passed]
    assert all(c.status == "failed" and c.message for c in failed)


@pytest.mark.slow
@pytest.mark.parametrize(("student", "variant"), sorted(DIAGNOSES.items()))
def test_each_mistake_is_diagnosed_and_correct_work_is_not(sample_run: ClassRun, student: str,
                                                            variant: str | None) -> None:
    result = by_student(sample_run)[student]
    diagnosed = {c.diagnosis.variant for c in result.checks if c.diagnosis is not None}
    assert diagnosed == ({variant} if variant else set())
    report = (sample_run.out_dir / "students" / student / "report.html").read_text()
    if variant:
        named = next(c.diagnosis for c in result.checks if c.diagnosis is not None)
        assert named.explanation.startswith("Your ")
        assert f"Likely cause: {html.escape(named.name)}." in report
    else:
        assert "Likely cause" not in report


@pytest.mark.parametrize(("student", "does"), [
    ("mistake_padding_lengths", "Your masked_softmax keeps the first num_keys - valid_len keys, as if valid_lens "
                                "counted the padded keys at the end: valid_lens counts the valid keys from the start"),
    ("mistake_last_keys", "Your masked_softmax keeps the last valid_len keys and hides the first ones, counting the "
                          "valid keys from the end"),
])
def test_a_convention_of_valid_lens_is_told_as_what_the_code_does_and_where(sample_run: ClassRun, student: str,
                                                                            does: str) -> None:
    """What the student's code does, what the assignment asks (keep positions 0 to valid_len - 1) and where their
    masked_softmax is, on every q1 check the lengths fail, hidden ones too, and on the student's page."""
    result = by_student(sample_run)[student]
    line = (SAMPLES / f"{student}.py").read_text().splitlines().index("def masked_softmax(X, valid_lens):") + 1
    failed = [c for c in result.checks if not c.passed]
    assert {c.check_id for c in failed} == {"q1.textbook_1d", "q1.textbook_2d", "q1.random_1d", "q1.random_2d",
                                            "q1.large_scores"}
    for check in failed:
        assert check.diagnosis is not None and check.diagnosis.said.startswith(does), check.check_id
        assert "keep positions 0 to valid_len - 1 (torch.arange(num_keys) < valid_lens)" in check.diagnosis.said
        assert check.diagnosis.said.endswith(f" Where: your masked_softmax, line {line}.")
    report = html.unescape((sample_run.out_dir / "students" / student / "report.html").read_text())
    assert f"Where: your masked_softmax, line {line}." in report


def test_messages_say_what_is_wrong(sample_run: ClassRun) -> None:
    results = by_student(sample_run)

    def message(student: str, check_id: str) -> str:
        return student_reads(results[student], check_id)

    assert message("mistake_mask_zero", "q1.textbook_1d").startswith(
        "masked_softmax(X, valid_lens) differs from the reference in 16 of 16 entries (100%): largest error")
    assert message("mistake_extra_bias", "q2.parameters") == (
        "AdditiveAttention has parameters the additive score does not use: W_q.bias, W_k.bias "
        "(create W_q, W_k and w_v with bias=False)")
    assert message("mistake_dropout_in_eval", "q3.eval_deterministic").startswith(
        "DotProductAttention gives different outputs for the same inputs in eval mode")
    # Hidden: the hint names the tensor (the weights are compared before the output they explain), no numbers.
    assert re.fullmatch(r"DotProductAttention\.attention_weights differs from the reference in \d+% of entries",
                        message("mistake_no_scaling", "q3.random_1d"))
    partial = results["partial"]
    assert {q.id: q.score for q in partial.questions} == {"q1": 25, "q2": 0, "q3": 0, "q4": 0}
    assert message("partial", "q2.toy_example").startswith(
        "AdditiveAttention(num_hiddens=8, dropout=0.1) raised NotImplementedError")


def test_checks_leave_heatmaps_and_tables_for_the_reports(sample_run: ClassRun) -> None:
    results = by_student(sample_run)
    textbook = {c.check_id: c for c in results["textbook"].checks}
    # Every attention question draws the weights, the student's beside the reference's, equal when correct.
    for check_id in ("q1.textbook_1d", "q2.toy_weights", "q3.toy_weights", "q4.random_1d"):
        heatmaps = textbook[check_id].heatmaps
        assert heatmaps and all(h.student is not None for h in heatmaps), check_id
        assert all(np.allclose(h.student, h.reference, atol=1e-5) for h in heatmaps)
        assert {(h.xlabel, h.ylabel) for h in heatmaps} == {("Keys", "Queries")}
    wrong = {c.check_id: c for c in results["mistake_softmax_axis"].checks}["q1.textbook_1d"]
    assert not np.allclose(wrong.heatmaps[0].student, wrong.heatmaps[0].reference)
    assert wrong.diff is not None and wrong.diff.shape == (2, 2, 4) and wrong.diff.bad
    assert all(abs(wrong.diff.got[i] - wrong.diff.expected[i]) > 1e-5 for i in wrong.diff.bad)
    assert any(t.startswith("masked_softmax(float64 (2, 2, 4)") for t in wrong.trace)
    assert any(t.startswith("expected masked_softmax(X, valid_lens): float64 (2, 2, 4)") for t in wrong.trace)


def test_q1_mistake_notes_that_q2_to_q4_used_the_reference(sample_run: ClassRun) -> None:
    result = by_student(sample_run)["mistake_softmax_axis"]
    q2 = result.questions[1]
    assert q2.score == 30
    assert q2.choices[0].line == ("q2: graded with the reference masked_softmax in place of yours, because a mistake "
                                  "there then costs points only in q1.")
    assert any(n.startswith("With your own masked_softmax, this check fails") for c in q2.checks for n in c.notes)


def test_broken_files_are_invalid_with_a_reason(sample_run: ClassRun) -> None:
    results = by_student(sample_run)
    assert results["broken_syntax"].status == "invalid"
    assert "syntax error at line 38" in results["broken_syntax"].reason
    assert results["broken_notebook"].status == "invalid"
    assert "broken JSON" in results["broken_notebook"].reason
    dashboard = (sample_run.out_dir / "index.html").read_text()
    assert "Could not be graded" in dashboard and "broken JSON" in dashboard


def test_results_json_follows_gradescope_format(sample_run: ClassRun) -> None:
    for result in sample_run.results:
        data = json.loads((sample_run.out_dir / "students" / result.student / "results.json").read_text())
        assert data["score"] == result.score
        assert len(data["tests"]) == 24
        assert sum(t["score"] for t in data["tests"]) == data["score"]
        for test in data["tests"]:
            assert set(test) >= {"name", "score", "max_score", "status", "output", "tags", "visibility"}
            assert test["tags"][0] in FULL
            assert isinstance(test["extra_data"]["seed"], int)


def test_results_json_names_the_likely_cause_as_the_student_page_does(sample_run: ClassRun) -> None:
    """Students graded on Gradescope see only results.json: a diagnosed failure carries its likely cause there in
    the report's words. Hidden checks too, as on the student's page (the cause names no input), and nothing more."""
    result = by_student(sample_run)["mistake_softmax_axis"]
    data = json.loads((sample_run.out_dir / "students" / result.student / "results.json").read_text())
    assert data["test_output_format"] == "text"  # plain text in a <pre>: the "\n" below break the lines
    outputs = {t["extra_data"]["check_id"]: t["output"] for t in data["tests"]}
    diagnosed = [c for c in result.checks if c.diagnosis is not None]
    assert {c.visibility for c in diagnosed} == {"public", "hidden"}
    assert {c.diagnosis.variant for c in diagnosed} == {DIAGNOSES["mistake_softmax_axis"]}
    for check in diagnosed:
        cause = f"Likely cause: {check.diagnosis.name}. {check.diagnosis.said}"
        assert outputs[check.check_id].split("\n")[:2] == [check.message, cause], check.check_id
    textbook = next(c for c in result.checks if c.check_id == "q1.textbook_1d")
    source = (SAMPLES / "mistake_softmax_axis.py").read_text().splitlines()
    line = source.index("def masked_softmax(X, valid_lens):") + 1
    assert outputs["q1.textbook_1d"] == (
        f"{textbook.message}\nLikely cause: softmax over the queries axis. Your masked_softmax normalises over dim=1, "
        "the queries, so each key's weights sum to 1 across the queries: each query's weights must sum to 1 over the "
        "keys, a softmax over the last axis (dim=-1), with valid_lens or without. Where: your masked_softmax, line "
        f"{line}.")
    # A hidden check: its hint, the cause, its notes and its smallest case's sizes; never its inputs or values.
    for check in (c for c in result.checks if c.visibility == "hidden" and not c.passed):
        allowed = [check.message]
        if check.diagnosis is not None:
            allowed.append(f"Likely cause: {check.diagnosis.name}. {check.diagnosis.said}")
        allowed += check.notes
        if check.smallest is not None:
            allowed.append(f"Smallest failing case: {check.smallest.text}.")
        output = outputs[check.check_id]
        assert output == "\n".join(allowed)
        assert "expected" not in output and check.detail not in output
        assert not [line for line in check.trace if line in output]


def test_student_report_never_shows_hidden_details(sample_run: ClassRun) -> None:
    result = by_student(sample_run)["mistake_softmax_axis"]
    report = (sample_run.out_dir / "students" / result.student / "report.html").read_text()
    assert "75 / 100" in report
    hidden = [c for c in result.checks if c.visibility == "hidden" and not c.passed]
    assert hidden
    for check in hidden:
        assert check.detail not in report and "expected" not in check.message
        assert f"seed {check.seed}" not in report


def test_gradebook_has_real_tables(sample_run: ClassRun) -> None:
    with sqlite3.connect(sample_run.out_dir / "gradebook.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM students").fetchone()[0] == len(sample_run.results)
        assert db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == len(sample_run.results)
        assert db.execute("SELECT COUNT(*) FROM test_results").fetchone()[0] == 24 * len(sample_run.results)
        score, status = db.execute("SELECT score, status FROM submissions WHERE student = 'mistake_no_tanh'").fetchone()
        assert (score, status) == (90, "graded")


def test_regrading_gives_identical_results_and_no_duplicates(sample_run: ClassRun, tmp_path: Path) -> None:
    def snapshot(out: Path) -> dict[str, dict]:
        found = {}
        for path in sorted(out.glob("students/*/results.json")):
            data = json.loads(path.read_text())
            data.pop("execution_time")
            data["extra_data"].pop("graded_at")
            found[path.parent.name] = data
        return found

    before = snapshot(sample_run.out_dir)
    out = tmp_path / "out"  # a copy: the session's sample run stays as graded for the other tests
    shutil.copytree(sample_run.out_dir, out, ignore=shutil.ignore_patterns(".grader.lock"))
    rerun = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=SAMPLES, out_dir=out, force=True),
                        RunOptions(jobs=2))
    assert rerun.unchanged == ()
    assert snapshot(rerun.out_dir) == before
    with sqlite3.connect(rerun.out_dir / "gradebook.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM submissions").fetchone()[0] == len(before)
        assert db.execute("SELECT COUNT(*) FROM test_results").fetchone()[0] == 24 * len(before)
