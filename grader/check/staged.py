"""A verdict on a score that grows with work (a model's accuracy as it trains), reached as soon as it is certain.

A check that trains something scores it after each stage (a fraction of an epoch, an epoch) and stops at the first
stage whose score is decisive: at or above the stage's ``pass_at``, which no training that should fail reached there
(by a margin), or below its ``fail_below``, under every training that should pass (by a margin). Between the two it
trains on; the last stage's thresholds are the pass mark itself, where the check's own rule for a result near the mark
takes over. This is a multi-stage (sequential) test in the sense of StochasticGrade (2024) and its predecessors: more
evidence is drawn only when what is there does not decide, at error rates fixed in advance.

The thresholds are never typed in: ``calibrate`` derives them from measured trainings, each a trajectory (its score
at every stage) of an implementation known to pass (the reference, mistakes that still learn) or known to fail; and
``error_rates`` measures how often the staged verdict fails one that should pass, or passes one that should fail, on
trainings the calibration did not see (other seeds, other float kernels). An assignment writes both with a command
of its own (solutions/practical10/measure_training.py ``--calibrate``) into a JSON file that its checks read
(``StagedVerdict.read``).
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from grader.errors import ConfigurationError

T = TypeVar("T")


@dataclass(frozen=True)
class Stage:
    after: float  # how much work this stage has seen (epochs, for a training)
    pass_at: float  # a score at or above it passes here
    fail_below: float  # a score below it fails here


@dataclass(frozen=True)
class StagedVerdict:
    mark: float  # the pass mark: the last stage's thresholds
    stages: tuple[Stage, ...]
    # What the calibration measured (``error_rates``, the trainings it used): for the docs, never for a decision.
    measured: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.stages:
            raise ConfigurationError("a staged verdict needs at least one stage")
        if any(b.after <= a.after for a, b in zip(self.stages, self.stages[1:])):
            raise ConfigurationError("a staged verdict's stages must come in order of work")
        if any(s.fail_below > s.pass_at for s in self.stages):
            raise ConfigurationError("a stage cannot fail a score it would pass (fail_below > pass_at)")
        last = self.stages[-1]
        if not last.fail_below == last.pass_at == self.mark:
            raise ConfigurationError("the last stage decides at the pass mark itself")

    @property
    def work(self) -> float:
        return self.stages[-1].after

    def decide(self, stage: Stage, score: float) -> bool | None:
        """True: passes; False: fails; None: train on."""
        if score >= stage.pass_at:
            return True
        if score < stage.fail_below:
            return False
        return None

    def first_decision(self, scores: Sequence[float]) -> tuple[int, bool]:
        """The stage (its index) at which a trajectory of scores, one per stage, is decided, and how."""
        for index, (stage, score) in enumerate(zip(self.stages, scores)):
            decided = self.decide(stage, score)
            if decided is not None:
                return index, decided
        raise ValueError(f"a trajectory of {len(scores)} scores for {len(self.stages)} stages is never decided")

    def run(self, score_after: Callable[[float], tuple[float, T]]) -> Decided[T]:
        """Train in stages: ``score_after(work)`` trains on to ``work`` (going on from the stage before) and returns
        the score and whatever else the check keeps of that stage; it stops at the first stage before the last that
        decides. Trained to the end, the decision is None: the check's own rule for a result near the mark decides."""
        last = len(self.stages) - 1
        for index, stage in enumerate(self.stages):
            score, kept = score_after(stage.after)
            decision = self.decide(stage, score)
            if decision is not None and index < last:
                threshold = stage.pass_at if decision else stage.fail_below
                return Decided(score, stage.after, self.work, decision, threshold, self.mark, kept)
        return Decided(score, self.work, self.work, None, self.mark, self.mark, kept)

    @classmethod
    def from_module(cls, module: types.ModuleType) -> StagedVerdict:
        """The verdict a calibration wrote as a module (grader/check/calibration.py ``write_stages``)."""
        try:
            return cls(float(module.MARK), tuple(Stage(*map(float, stage)) for stage in module.STAGES),
                       dict(getattr(module, "MEASURED", {})))
        except (AttributeError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"{module.__name__}: not the stages a calibration wrote ({exc}); run "
                                     "`grader calibrate` again") from exc

    # ----- the file the calibration writes ------------------------------------------------------------------------
    def write(self, path: Path) -> None:
        data = {"mark": self.mark, "stages": [asdict(s) for s in self.stages], "measured": dict(self.measured)}
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> StagedVerdict:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(float(data["mark"]), tuple(Stage(float(s["after"]), float(s["pass_at"]),
                                                        float(s["fail_below"])) for s in data["stages"]),
                       data.get("measured", {}))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"{path}: not a staged verdict the calibration wrote ({exc})") from exc


@dataclass(frozen=True)
class Decided(Generic[T]):
    """Where a staged training stopped, and why."""

    score: float  # at ``work``
    work: float  # trained when it stopped
    whole: float  # the schedule's work (the last stage's)
    decision: bool | None  # True: passes, False: fails; None: trained to the end, for the check's own rule
    threshold: float  # the one it cleared or fell under at ``work`` (the mark, trained to the end)
    mark: float
    kept: T  # what the last scoring returned besides its score (the model's outputs, say)

    def said(self, *, unit: str = "epochs", score: str = "") -> str:
        """"decided after 1 of 5 epochs: 61.0% exact, at or above 52.3%, which no training that should fail reached
        there; the mark after all 5 epochs is 84%" (``score``: what the rate counts)."""
        what = f"{self.score:.1%}{' ' + score if score else ''}"
        mark = f"the mark after all {self.whole:g} {unit} is {self.mark:.0%}"
        if self.decision is None:
            return f"trained all {self.whole:g} {unit}: {what}; the mark is {self.mark:.0%}"
        side = (f"at or above {self.threshold:.1%}, which no training that should fail reached there" if self.decision
                else f"under {self.threshold:.1%}, below every training that should pass there")
        return f"decided after {self.work:g} of {self.whole:g} {unit}: {what}, {side}; {mark}"


def calibrate(after: Sequence[float], passing: Sequence[Sequence[float]], failing: Sequence[Sequence[float]], *,
              mark: float, pass_margin: float, fail_margin: float) -> StagedVerdict:
    """The stages from measured trajectories (each a score per stage of ``after``), of trainings that should pass
    and that should fail: a stage passes a score ``pass_margin`` above every failing training's there, and fails
    one ``fail_margin`` below every passing training's (where those two overlap, only what is beyond both is
    decided). The last stage decides at ``mark``."""
    if not passing or not failing:
        raise ConfigurationError("calibrating a staged verdict needs trainings that pass and trainings that fail")
    if not (pass_margin > 0 and fail_margin > 0):  # a pass at a score one that should fail reached is no margin
        raise ConfigurationError("a staged verdict's margins must be above 0")
    for trajectory in (*passing, *failing):
        if len(trajectory) != len(after):
            raise ConfigurationError(f"a trajectory of {len(trajectory)} scores for {len(after)} stages")
    stages = []
    for index, work in enumerate(after[:-1]):
        above_failing = max(t[index] for t in failing) + pass_margin
        below_passing = min(t[index] for t in passing) - fail_margin
        # Rounded outward to 0.001, so that a threshold read back from the file decides as calibrated.
        pass_at = _up(max(above_failing, below_passing))
        fail_below = _down(min(above_failing, below_passing))
        stages.append(Stage(float(work), pass_at, fail_below))
    stages.append(Stage(float(after[-1]), mark, mark))
    return StagedVerdict(mark, tuple(stages))


def _up(value: float) -> float:
    return math.ceil(value * 1000) / 1000


def _down(value: float) -> float:
    return math.floor(value * 1000) / 1000


@dataclass(frozen=True)
class Rates:
    """How the staged verdict did on trainings whose right verdict is known."""

    passing: int  # trainings that should pass
    failing: int  # trainings that should fail
    failed_passing: int  # of ``passing``, failed (before the last stage: where the check's own rule cannot help)
    passed_failing: int  # of ``failing``, passed before the last stage
    decided_at: dict[str, int]  # stage (its work, as text) -> trainings decided there
    mean_work: float  # the mean work a decision took, over all of them

    @property
    def false_fail(self) -> float:
        return self.failed_passing / self.passing if self.passing else 0.0

    @property
    def false_pass(self) -> float:
        return self.passed_failing / self.failing if self.failing else 0.0


def error_rates(verdict: StagedVerdict, passing: Sequence[Sequence[float]],
                failing: Sequence[Sequence[float]]) -> Rates:
    """Each trajectory decided as the check decides it; a decision at the last stage is the check's own rule for
    results near the mark (not the staged verdict's), so only earlier ones count as the verdict's errors."""
    decided_at: dict[str, int] = {}
    errors = {True: 0, False: 0}  # wrongly passed, wrongly failed
    work = 0.0
    last = len(verdict.stages) - 1
    for trajectories, wrong in ((passing, False), (failing, True)):
        for trajectory in trajectories:
            index, decision = verdict.first_decision(trajectory)
            stage = verdict.stages[index]
            decided_at[f"{stage.after:g}"] = decided_at.get(f"{stage.after:g}", 0) + 1
            work += stage.after
            if decision == wrong and index < last:
                errors[wrong] += 1
    total = len(passing) + len(failing)
    return Rates(len(passing), len(failing), errors[False], errors[True], decided_at, work / total if total else 0.0)
