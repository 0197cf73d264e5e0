"""The staged verdict (grader/check/staged.py): thresholds calibrated from measured trajectories decide every one of
them as its class should be decided, before the last stage or at it; the file the calibration writes reads back as
the same verdict; and practical10's calibration command runs end to end on a few short trainings."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.check import Stage, StagedVerdict, load_solution_module
from grader.check.staged import calibrate, error_rates
from grader.errors import ConfigurationError

from .conftest import ROOT

STAGES = (0.5, 1.0, 2.0, 5.0)
score = st.floats(0.0, 1.0, allow_nan=False)
trajectories = st.lists(st.lists(score, min_size=len(STAGES), max_size=len(STAGES)), min_size=1, max_size=8)
margin = st.floats(0.001, 0.3, allow_nan=False)


@given(trajectories, trajectories, margin, margin)
def test_a_calibrated_verdict_never_decides_its_own_trainings_wrongly_before_the_last_stage(
        passing: list[list[float]], failing: list[list[float]], pass_margin: float, fail_margin: float) -> None:
    verdict = calibrate(STAGES, passing, failing, mark=0.84, pass_margin=pass_margin, fail_margin=fail_margin)
    rates = error_rates(verdict, passing, failing)
    assert (rates.failed_passing, rates.passed_failing) == (0, 0)
    assert sum(rates.decided_at.values()) == len(passing) + len(failing)
    for stage in verdict.stages[:-1]:  # beyond every measured training of the other class, by the margin
        assert stage.pass_at >= max(t[STAGES.index(stage.after)] for t in failing) + pass_margin - 1e-9
        assert stage.fail_below <= min(t[STAGES.index(stage.after)] for t in passing) - fail_margin + 1e-9


@given(trajectories, trajectories, margin, margin)
def test_what_the_calibration_writes_reads_back_as_the_same_verdict(
        tmp_path_factory: pytest.TempPathFactory, passing: list[list[float]], failing: list[list[float]],
        pass_margin: float, fail_margin: float) -> None:
    verdict = calibrate(STAGES, passing, failing, mark=0.84, pass_margin=pass_margin, fail_margin=fail_margin)
    path = tmp_path_factory.mktemp("stages") / "stages.json"
    verdict.write(path)
    assert StagedVerdict.read(path) == verdict


def test_separated_trainings_are_decided_early_and_overlapping_ones_wait() -> None:
    passing = [[0.2, 0.7, 0.95, 0.99], [0.25, 0.6, 0.9, 0.98]]
    failing = [[0.06, 0.05, 0.3, 0.55], [0.01, 0.1, 0.35, 0.8]]
    verdict = calibrate(STAGES, passing, failing, mark=0.84, pass_margin=0.1, fail_margin=0.15)
    assert verdict.first_decision(passing[0]) == (0, True)  # 0.2 at half an epoch: over 0.06 + 0.1
    assert verdict.first_decision(failing[1]) == (0, False)  # 0.01 at half an epoch: under 0.2 - 0.15
    assert verdict.first_decision(failing[0]) == (1, False)  # 0.05 at one epoch: under 0.6 - 0.15
    assert verdict.first_decision([0.05, 0.3, 0.6, 0.9]) == (3, True)  # between the classes throughout: the end
    rates = error_rates(verdict, passing, failing)
    assert rates.decided_at == {"0.5": 3, "1": 1} and rates.mean_work == pytest.approx(0.625)


def test_a_verdict_that_could_not_decide_consistently_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="fail_below > pass_at"):
        StagedVerdict(0.84, (Stage(1.0, 0.3, 0.5), Stage(5.0, 0.84, 0.84)))
    with pytest.raises(ConfigurationError, match="pass mark"):
        StagedVerdict(0.84, (Stage(1.0, 0.3, 0.2), Stage(5.0, 0.9, 0.84)))
    with pytest.raises(ConfigurationError, match="in order"):
        StagedVerdict(0.84, (Stage(2.0, 0.3, 0.2), Stage(1.0, 0.84, 0.84)))


def test_practical10_reads_the_stages_its_calibration_wrote() -> None:
    checks = load_solution_module("practical10", "checks")
    stages = load_solution_module("practical10", "training_stages")
    verdict = checks.staged_verdict()
    assert verdict.mark == checks.PASS_EXACT == stages.MARK
    assert [s.after for s in verdict.stages] == list(load_solution_module("practical10", "calibration").STAGE_EPOCHS)
    assert verdict.work == load_solution_module("practical10", "calibration").load_harness().CONFIG.epochs


def test_the_calibration_command_writes_a_verdict_checks_can_read(tmp_path: Path) -> None:
    """Two kinds, one calibration seed and one held out, two kernel sets, trained to a single epoch (the command
    the stages in solutions/practical10/training_stages.py came from, made short)."""
    out = tmp_path / "stages.py"
    subprocess.run([sys.executable, "-m", "grader", "calibrate", "practical10",
                    "--kinds", "reference,no attention", "--seeds", "10", "--held-out", "20", "--kernels", "2",
                    "--stages", "0.5,1", "--out", str(out)], cwd=ROOT, check=True, capture_output=True, text=True)
    spec = importlib.util.spec_from_file_location("written_stages", out)
    assert spec is not None and spec.loader is not None
    written = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(written)
    verdict = StagedVerdict.from_module(written)
    assert [stage.after for stage in verdict.stages] == [0.5, 1.0] and written.UNIT == "epochs"
    assert verdict.stages[-1] == Stage(1.0, written.MARK, written.MARK)
    held_out = written.MEASURED["held_out"]
    assert (held_out["should_pass"], held_out["should_fail"]) == (2, 2)  # seed 20, and seed 10 on other kernels
    assert held_out["kernels"] == ["ATen AVX2"]
    assert written.MEASURED["calibration"]["failed_early"] == written.MEASURED["calibration"]["passed_early"] == 0
    assert set(written.MEASURED["check_seed"]) == {"reference", "no attention"}


@given(trajectories, trajectories, st.lists(score, min_size=len(STAGES), max_size=len(STAGES)))
def test_a_staged_run_trains_only_until_the_first_stage_that_decides(
        passing: list[list[float]], failing: list[list[float]], scores: list[float]) -> None:
    verdict = calibrate(STAGES, passing, failing, mark=0.84, pass_margin=0.05, fail_margin=0.05)
    asked: list[float] = []

    def score_after(work: float) -> tuple[float, int]:
        asked.append(work)
        return scores[STAGES.index(work)], len(asked)

    decided = verdict.run(score_after)
    index, decision = verdict.first_decision(scores)
    assert asked == list(STAGES[:index + 1])  # no stage trained past the one that decides
    assert (decided.work, decided.score, decided.kept) == (STAGES[index], scores[index], index + 1)
    if index < len(STAGES) - 1:
        assert decided.decision is decision
        side = "at or above" if decision else "under"
        threshold = verdict.stages[index].pass_at if decision else verdict.stages[index].fail_below
        assert decided.said(score="exact").startswith(
            f"decided after {STAGES[index]:g} of 5 epochs: {scores[index]:.1%} exact, {side} {threshold:.1%}")
        assert decided.said().endswith("the mark after all 5 epochs is 84%")
    else:  # the last stage is the check's own rule (near the mark, a second training), not the staged verdict's
        assert decided.decision is None and decided.said().startswith("trained all 5 epochs: ")


def test_calibrate_names_what_an_assignment_without_a_calibration_lacks(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "grader", "calibrate", "attention_scoring"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "attention_scoring/calibration.py: an assignment whose checks train something declares" in done.stderr
