"""What ``grader new NAME`` writes: a small, complete assignment (d2l 11.3's masked softmax in PyTorch), each file's
text a Jinja template: ``{{name}}`` where the assignment's name goes, and the parts ``--training`` (a question whose
check trains a model with the student's class, decided by a staged verdict) and ``--written`` (a written question worth
points, with a rubric) add between ``{% if training %}`` and ``{% if written %}``.

The function is ``padded_softmax``, not the textbook's ``masked_softmax``: ``grader check`` tells a file's assignment
from the names it defines, and attention_scoring already asks for ``masked_softmax``.

Complete means every test that finds assignments passes on it as written: the solution notebook grades to full
marks and its blank templates to 0, its one known mistake (a variant) is caught on its question with its diagnosis,
whoever submits it. The instructor then replaces the task, keeping the shape. The model solution's body is one
string, used by both the notebook and the student-style sample, so the variant's mutation is in both exactly once.
"""

from __future__ import annotations

INIT = '''"""{{name}}: references, checks and known mistakes (written by `grader new`; replace the task with yours)."""
'''

REFERENCE_NUMPY = '''"""Float64 NumPy references for {{name}}: what the checks compare the students' answers with."""

from __future__ import annotations

import numpy as np

from grader.check import substitutable


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax over the last axis."""
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@substitutable  # a variant (variants.py) may stand in for it when a failed check is replayed for a diagnosis
def padded_softmax(X: np.ndarray, valid_lens: np.ndarray) -> np.ndarray:
    """Softmax of X (batch, queries, keys) over the keys, each batch item's keys from valid_lens[b] on given 0."""
    keep = np.arange(X.shape[-1])[None, None, :] < valid_lens[:, None, None]
    return softmax(np.where(keep, X, -np.inf))
{% if training %}


@substitutable
def attention_pooling(X: np.ndarray, valid_lens: np.ndarray, w: np.ndarray,
                      b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """X (batch, keys, features) pooled into (batch, features): a score per position, X @ w.T + b (nn.Linear(features,
    1)'s weight w (1, features) and bias b (1,)), padded_softmax over the valid positions, the weighted sum of X.
    Returns the pooled vectors and the weights (batch, 1, keys)."""
    weights = padded_softmax((X @ w.T + b).transpose(0, 2, 1), valid_lens)
    return (weights @ X)[:, 0, :], weights
{% endif %}
'''

CHECKS = '''"""Graded checks for {{name}}: padded_softmax (d2l 11.3), 10 points{% if training %};
AttentionPooling, and a classifier trained with it, 30 points{% endif %}{% if written %}; a written question, 4
points, marked by hand{% endif %}.

Each check calls the student's function in their sandboxed process and compares what it returns with the float64
reference (reference_numpy.py). The public checks are the ones students run themselves (`grader check`, the kit);
the hidden one draws other sizes from the check's seed, so an answer fitted to the public example does not pass it.
{% if training %}
The training check (q2) has the harness the students got train a classifier with the student's AttentionPooling,
and scores it on data the grader draws. It scores the training after each stage and stops as soon as the verdict is
certain (grader/check/staged.py): the stages are in training_stages.py, which the calibration writes from the
trainings calibration.py declares; run it again after changing the harness or the task:
    grader calibrate {{name}}
{% endif %}
"""

from __future__ import annotations
{% if training %}

from pathlib import Path
{% endif %}

import numpy as np

from grader.check import {{check_imports}}

from . import reference_numpy as ref
{% if training %}
from . import training_stages as calibrated

# The harness the students got, in the folder their templates are written to (grader new wrote it there).
HARNESS = Path(__file__).parent / "{{harness_path}}"
# What a student's file that imports the harness gets while the grader loads it.
HARNESS_NOT_RUN = ("the training harness did not run while your code was loaded: the grader trains your "
                   "AttentionPooling with its own copy (the training check of q2)")
{% endif %}

ASSIGNMENT = Assignment(
    name="{{name}}",
    title="{{name}}: a softmax that ignores padding{% if training %}, and attention pooling trained with it{% endif %}",
    questions=[
        Question("q1", "padded_softmax", defines=("padded_softmax",)),
{% if training %}
        # q2 masks the padding itself, so that a mistake in q1 costs q1's points only (a question graded with the
        # reference of an earlier answer needs that answer's reference in the student's process, which a student
        # kit cannot hold when the calls are a training's); the harness's grade_pooling is provided.
        Question("q2", "AttentionPooling, and a classifier trained with it", defines=("AttentionPooling",),
                 uses_provided=("grade_pooling",)),
{% endif %}
    ],
{% if written %}
    written=[
        # Marked by hand (`grader review`); the rubric's positive items add up to the points.
        WrittenQuestion("why_zero", "Why must the padded keys get a weight of exactly 0, not just a small one?",
                        points=4, rubric=(
                            RubricItem("Padding is not part of the sequence", 2,
                                       "Right: the padded positions hold no data, only filler."),
                            RubricItem("The weights over the real keys must sum to 1", 2,
                                       "Right: any weight on padding is taken from the real keys."),
                            RubricItem("Drops the softmax instead", -1,
                                       "Without the softmax the weights are no longer a distribution."),
                        )),
    ],
{% endif %}
{% if training %}
    provided=(HARNESS,),
    stubbed_modules={"{{harness_module}}": HARNESS_NOT_RUN},
{% endif %}
)
check = ASSIGNMENT.check


def expect_padded_softmax(ctx: CheckContext, X: np.ndarray, valid_lens: np.ndarray) -> None:
    got = ctx.student.function("padded_softmax")(Arg.tensor(X), Arg.tensor(valid_lens, "int64"))
    ctx.expect_tensor("padded_softmax(X, valid_lens)", got, ref.padded_softmax(X, valid_lens), attention=True)


@check("q1", points=4, title="the textbook's example: X of shape (2, 2, 4), valid_lens [2, 3]")
def q1_textbook(ctx: CheckContext) -> None:
    expect_padded_softmax(ctx, ctx.rng.uniform(size=(2, 2, 4)), np.array([2, 3]))


@check("q1", points=6, visibility=HIDDEN, title="random sizes and valid lengths")
def q1_random(ctx: CheckContext) -> None:
    batch, queries, keys = ctx.sizes(batch=(2, 5), queries=(2, 6), keys=(3, 9), distinct=("batch", "queries", "keys"))
    X = ctx.rng.normal(size=(batch, queries, keys))
    # Every item masks at least one key, so that code ignoring the mask fails whatever the draw.
    expect_padded_softmax(ctx, X, ctx.rng.integers(1, keys, size=batch))
{% if training %}


# ----- q2 AttentionPooling, and the classifier trained with it --------------------------------------------------
FEATURES, KEYS = 4, 8  # the harness's Config
HARNESS_SEED = 0  # the harness's Config.seed: the training is the one students run themselves
# The data the trained classifier is scored on: drawn from this seed, the same for everyone, by the grader (never by
# the student's process, whose copy of the harness their code could change).
EVALUATION_SEED, EVALUATION_SIZE = 2024, 500
PASS_ACCURACY = 0.85  # the reference reaches 0.95-0.99; padding weighted or one weight everywhere stay under 0.75
TRAINING_SECONDS = 60.0  # the reference trains in well under a second on one core


def evaluation_data(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The harness's task (make_data), drawn by the grader: X (n, KEYS, FEATURES), valid_lens (n,) and the labels."""
    valid_lens = rng.integers(2, KEYS // 2 + 1, size=n)
    X = rng.normal(size=(n, KEYS, FEATURES))
    marked = (rng.random(n) * valid_lens).astype(int)
    X[..., 1] = np.arange(KEYS)[None, :] >= valid_lens[:, None]  # the padding looks marked
    X[np.arange(n), marked, 1] = 1.0
    return X, valid_lens, X[np.arange(n), marked, 0] > 0


def expect_pooling(ctx: CheckContext, X: np.ndarray, valid_lens: np.ndarray) -> None:
    pooling = ctx.student.construct("AttentionPooling", features=X.shape[-1])
    w, b = ctx.rng.normal(size=(1, X.shape[-1])), ctx.rng.normal(size=1)
    pooling.set_parameters({"score.weight": w, "score.bias": b})
    ctx.name_sizes(batch=X.shape[0], keys=X.shape[1], features=X.shape[2])
    got = pooling(Arg.tensor(X), Arg.tensor(valid_lens, "int64"))
    pooled, weights = ref.attention_pooling(X, valid_lens, w, b)
    items = ctx.expect_sequence("AttentionPooling's forward", got, ("pooled vectors", "attention weights"))
    ctx.expect_tensor("the attention weights", items[1], weights, attention=True, axes=("batch", "queries", "keys"))
    ctx.expect_tensor("the pooled vectors", items[0], pooled, axes=("batch", "features"))


@check("q2", points=10, title="a batch of 3 sequences of 5 positions, 2 features, valid lengths 5, 2 and 1")
def q2_pooling(ctx: CheckContext) -> None:
    expect_pooling(ctx, ctx.rng.normal(size=(3, 5, 2)), np.array([5, 2, 1]))


@check("q2", points=20, title="training: a classifier that pools with your AttentionPooling, trained by the harness")
def q2_training(ctx: CheckContext) -> None:
    ctx.student.construct("AttentionPooling", features=FEATURES)  # a clear message first when the class is missing
    X, valid_lens, labels = evaluation_data(np.random.default_rng(EVALUATION_SEED), EVALUATION_SIZE)
    harness = ctx.student.function("grade_pooling").with_time_limit(TRAINING_SECONDS)

    def score_after(epochs: float) -> tuple[float, None]:
        try:
            got = harness(Arg.name("AttentionPooling"), Arg.tensor(X, "float32"), Arg.tensor(valid_lens, "int64"),
                          HARNESS_SEED, epochs)
        except StudentRaised as exc:
            raise WrongAnswer(f"training the classifier with your AttentionPooling failed: {exc.message}") from None
        logits = ctx.expect_sequence("the harness", got, ("logits", "attention weights"))[0]
        ctx.expect(logits.array is not None and logits.shape == (EVALUATION_SIZE,),
                   f"the trained classifier's logits came back as {logits.describe()}, not ({EVALUATION_SIZE},)")
        assert logits.array is not None
        return float(np.mean((logits.array > 0) == labels)), None

    trained = StagedVerdict.from_module(calibrated).run(score_after)
    passed = trained.score >= PASS_ACCURACY if trained.decision is None else trained.decision
    said = trained.said(score="of the grader's labels right")
    if passed:  # a failure says the same in its message
        ctx.note(f"The classifier trained with your AttentionPooling: {said}.")
    ctx.expect(passed, f"the classifier trained with your AttentionPooling learned too little ({said}): check your "
                       "AttentionPooling against the check above")
{% endif %}
'''

VARIANTS = '''"""Known mistakes in {{name}}, each with what the reference computes with the mistake,
the explanation the student reads, and the edit that puts it into the model solution
(tests/submissions/{{name}}/reference_style.py) for the mutation test (tests/test_variants.py).

A mistake no reference computation shows is registered with ASSIGNMENT.misconception(...) and named by the check
that recognises it: ctx.expect(..., misconception="q1.<key>").
"""

from __future__ import annotations

import numpy as np

from . import reference_numpy as ref
from .checks import ASSIGNMENT

variant = ASSIGNMENT.variant


@variant("q1", replaces=ref.padded_softmax, name="valid_lens ignored",
         explain="Your padded_softmax gives weight to every key: set the scores of the keys at or beyond valid_lens "
                 "to a large negative number (-1e6) before the softmax, so that their weights are 0.",
         mutation=[("    X = X.masked_fill(~keep, -1e6)\\n", "")])
def q1_no_mask(X: np.ndarray, valid_lens: np.ndarray) -> np.ndarray:
    return ref.softmax(X)
{% if training %}


@variant("q2", replaces=ref.attention_pooling, name="scores ignored",
         explain="Your AttentionPooling gives every valid position the same weight: compute a score for each "
                 "position with self.score(X), then the softmax of those scores over the valid positions, so that "
                 "the model can learn where to look.",
         mutation=[("weights = torch.softmax(scores.masked_fill(~keep, -1e6), dim=-1)",
                    "weights = torch.softmax(torch.zeros_like(scores).masked_fill(~keep, -1e6), dim=-1)")])
def q2_scores_ignored(X: np.ndarray, valid_lens: np.ndarray, w: np.ndarray,
                      b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return ref.attention_pooling.__wrapped__(X, valid_lens, np.zeros_like(w), np.zeros_like(b))
{% endif %}
'''

# The model solution's body, between the markers in the notebook and as is in the sample.
SOLUTION_BODY = '''    keep = torch.arange(X.shape[-1], device=X.device)[None, None, :] < valid_lens[:, None, None]
    X = X.masked_fill(~keep, -1e6)
    return torch.softmax(X, dim=-1)
'''

SIGNATURE = '''def padded_softmax(X, valid_lens):
    """Softmax of X (batch, queries, keys) over the keys, where only the first valid_lens[b] keys of batch item b
    count: the others get weight 0. valid_lens is a 1-D tensor of ints, one per batch item."""
'''

POOLING_SIGNATURE = '''class AttentionPooling(nn.Module):
    """Pools each sequence of X (batch, keys, features) into one vector: a score for each position (self.score),
    the softmax of the scores over the first valid_lens[b] positions (the others weighted 0, as in padded_softmax),
    and the weighted sum of the positions. forward returns (pooled (batch, features), weights (batch, 1, keys))."""

    def __init__(self, features):
        super().__init__()
        self.score = nn.Linear(features, 1)

    def forward(self, X, valid_lens):
'''

POOLING_BODY = '''        scores = self.score(X).transpose(1, 2)
        keep = torch.arange(X.shape[1], device=X.device)[None, None, :] < valid_lens[:, None, None]
        weights = torch.softmax(scores.masked_fill(~keep, -1e6), dim=-1)
        return (weights @ X).squeeze(1), weights
'''

DEMO = '''X = torch.rand(2, 2, 4)
print(padded_softmax(X, torch.tensor([2, 3])))'''

POOLING_DEMO = '''from {{harness_module}} import accuracy, train, validation_data

model = train(AttentionPooling)
print(f"validation accuracy: {accuracy(model, *validation_data()):.1%}")'''

INTRODUCTION = '''# {{name}}: a softmax that ignores padding{% if training %}, and attention pooling{% endif %}

Implement `padded_softmax` (d2l 11.3) in PyTorch{% if training %}, then `AttentionPooling`, which masks the same
way{% endif %}, keeping every name and signature. Fill in the places marked `raise NotImplementedError`, run the
examples{% if written %}, answer the written question{% endif %}, then check your work (the last cells).'''

QUESTION = '''## Question 1: a softmax that ignores padding

Sequences in a batch have different lengths, padded to the longest. Attention must not give weight to the padding:
`padded_softmax(X, valid_lens)` is the softmax of `X` over its last axis (the keys), with every key from
`valid_lens[b]` on weighted 0 in batch item `b`.'''

POOLING_QUESTION = '''## Question 2: attention pooling, trained

`AttentionPooling(features)` turns each sequence of `X` (batch, keys, features) into one vector: a learned score for
each position (`self.score`, given), the softmax of the scores over the valid positions (the padding weighted 0, as
in `padded_softmax`), and the weighted sum of the positions.
`forward(X, valid_lens)` returns the pooled vectors (batch, features) and the weights (batch, 1, keys).

The harness `{{harness}}` trains a classifier that pools with your `AttentionPooling`: in each sequence one real
position is marked, and the label depends on that position only, so the classifier does well only when your pooling
learns to look at it, and never at the padding. The grader trains it the same way and scores it on data of its own.'''

WRITTEN_QUESTION = '''## Question {{written_number}} (written): why exactly 0?

Why must the padded keys get a weight of exactly 0, not just a small one? Answer in the next cell, in a few
sentences; your instructor marks it.'''

# The answer cell: the header line is the template's (the grader leaves it out of the answer: docs/writing-checks.md,
# "Written questions"), the marked text is the model answer, which the template replaces with a placeholder.
WRITTEN_ANSWER = '''**Your answer:**

### BEGIN SOLUTION
The padded positions are filler, not part of the sequence: any weight they get is taken from the real keys, whose
weights must sum to 1, and it mixes meaningless values into the output.
### END SOLUTION'''

IMPORTS = "import torch"
TRAINING_IMPORTS = "from torch import nn"

SAMPLE = '''"""{{name}}: the model solution written as a student would hand it in (a .py).

The mutation test (tests/test_variants.py) grades it, then edits each known mistake in
solutions/{{name}}/variants.py into it.
"""

import torch
{% if training %}
from torch import nn
{% endif %}


''' + SIGNATURE + SOLUTION_BODY + '''{% if training %}


''' + POOLING_SIGNATURE + POOLING_BODY + '''{% endif %}


if __name__ == "__main__":
''' + "".join(f"    {line}\n" for line in DEMO.splitlines()) + '''{% if training %}
''' + "".join(f"    {line}\n" if line else "\n" for line in POOLING_DEMO.splitlines()) + '''{% endif %}
'''

# The training harness students get (assignments/NAME/NAME_training.py), which the grader provides to the student's
# process for q2's training check.
HARNESS = '''"""Training with your AttentionPooling: the harness for {{name}}'s question 2. Do not change it.

The task: a batch of sequences of feature vectors, padded to the longest. Among each sequence's real (valid) positions
exactly one is marked (its feature 1 is 1); the label is whether that position's feature 0 is positive. The padding
looks marked too. A classifier that pools each sequence with your AttentionPooling and reads the pooled vector learns
to put the weight on the marked position: with the padding masked it gets nearly every label right; with the padding
weighted, or the same weight everywhere, it cannot.

    model = train(AttentionPooling)                 # well under a second on one CPU core
    print(accuracy(model, *validation_data()))

The grader trains your AttentionPooling with its own copy of this file, the same configuration and seed, and scores
the trained model on data it draws itself (``grade_pooling``). Training runs on one thread with a fixed seed: the same
code gives the same model on your machine and in the grader (up to floating-point differences between CPUs).
"""

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Config:
    keys: int = 8  # positions per sequence, padding included
    features: int = 4
    train_size: int = 2048
    batch_size: int = 64
    epochs: int = 4
    learning_rate: float = 0.05
    seed: int = 0


CONFIG = Config()


def make_data(n: int, generator: torch.Generator, config: Config = CONFIG):
    """(X (n, keys, features), valid_lens (n,), labels (n,)): at most half of each sequence is real."""
    valid_lens = torch.randint(2, config.keys // 2 + 1, (n,), generator=generator)
    X = torch.randn(n, config.keys, config.features, generator=generator)
    marked = (torch.rand(n, generator=generator) * valid_lens).long()
    padding = torch.arange(config.keys)[None, :] >= valid_lens[:, None]
    X[..., 1] = padding.float()
    X[torch.arange(n), marked, 1] = 1.0
    return X, valid_lens, (X[torch.arange(n), marked, 0] > 0).float()


def validation_data(n: int = 500, config: Config = CONFIG):
    return make_data(n, torch.Generator().manual_seed(config.seed + 1), config)


class Classifier(nn.Module):
    def __init__(self, pooling_class, config: Config = CONFIG) -> None:
        super().__init__()
        self.pool = pooling_class(config.features)
        self.out = nn.Linear(config.features, 1)

    def forward(self, X: torch.Tensor, valid_lens: torch.Tensor):
        pooled, weights = self.pool(X, valid_lens)
        return self.out(pooled).squeeze(-1), weights


class Training:
    """One training, which can stop after any batch and go on later from there (the same batches in the same order
    as one run to the end)."""

    def __init__(self, pooling_class, config: Config = CONFIG) -> None:
        self.config = config
        torch.manual_seed(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.X, self.valid_lens, self.labels = make_data(config.train_size, self.generator, config)
        self.model = Classifier(pooling_class, config)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.learning_rate)
        self.batches_per_epoch = -(-config.train_size // config.batch_size)
        self.done = 0
        self._steps = self._batches()

    def until(self, epochs: float) -> Classifier:
        target = min(round(epochs * self.batches_per_epoch), self.config.epochs * self.batches_per_epoch)
        while self.done < target:
            next(self._steps)
        self.model.eval()
        return self.model

    def _batches(self):
        config = self.config
        for _ in range(config.epochs):
            order = torch.randperm(config.train_size, generator=self.generator)
            for start in range(0, config.train_size, config.batch_size):
                self.model.train()
                batch = order[start:start + config.batch_size]
                logits, _ = self.model(self.X[batch], self.valid_lens[batch])
                loss = nn.functional.binary_cross_entropy_with_logits(logits, self.labels[batch])
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.done += 1
                yield


def train(pooling_class, config: Config = CONFIG) -> Classifier:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return Training(pooling_class, config).until(config.epochs)
    finally:
        torch.set_num_threads(threads)


def accuracy(model: Classifier, X: torch.Tensor, valid_lens: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.no_grad():
        logits, _ = model(X, valid_lens)
    return float(((logits > 0).float() == labels).float().mean())


def grade_pooling(pooling_class, X, valid_lens, seed: int = CONFIG.seed, epochs: float = CONFIG.epochs):
    """Train with ``pooling_class`` (from ``seed``) for ``epochs`` epochs, then classify the grader's ``X`` and
    ``valid_lens``: the logits (n,) and the attention weights as your AttentionPooling returns them. A later call with
    the same class and seed and more epochs goes on with the same training, so the grader can score it after each
    stage and stop once the verdict is certain; it scores the logits itself."""
    key = (pooling_class, seed)
    training = _TRAININGS.get(key)
    if training is None or training.done > round(epochs * training.batches_per_epoch):
        training = _TRAININGS[key] = Training(pooling_class, dataclasses.replace(CONFIG, seed=seed))
    threads, generator = torch.get_num_threads(), torch.get_rng_state()
    torch.set_num_threads(1)
    try:
        model = training.until(epochs)
        with torch.no_grad():
            return model(torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(valid_lens))
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(generator)


_TRAININGS: dict = {}  # (pooling class, seed) -> the Training grade_pooling goes on with
'''

CALIBRATION = '''"""The training check's calibration: `grader calibrate {{name}}` trains each kind of
AttentionPooling below from every seed, scored after each stage as q2_training scores it, and writes the stages to
training_stages.py (grader/check/calibration.py). Add a kind for each known mistake the check should be measured on.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import torch
from torch import nn

from grader.check import Calibration

from .checks import EVALUATION_SEED, EVALUATION_SIZE, HARNESS, HARNESS_SEED, PASS_ACCURACY, evaluation_data

# What the check must pass, and what it must fail: the padding weighted, and the scores ignored (q2's known mistake).
SHOULD_PASS = ("reference",)
SHOULD_FAIL = ("valid_lens ignored", "scores ignored")


def load_harness() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(HARNESS.stem, HARNESS)
    assert spec is not None and spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    sys.modules[HARNESS.stem] = harness
    spec.loader.exec_module(harness)
    return harness


def pooling_of(kind: str) -> type[nn.Module]:
    """The reference AttentionPooling, or one with a known mistake."""

    class Pooling(nn.Module):
        def __init__(self, features: int) -> None:
            super().__init__()
            self.score = nn.Linear(features, 1)

        def forward(self, X: torch.Tensor, valid_lens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            scores = self.score(X).transpose(1, 2)
            if kind == "scores ignored":
                scores = torch.zeros_like(scores)
            if kind != "valid_lens ignored":
                keep = torch.arange(X.shape[1])[None, None, :] < valid_lens[:, None, None]
                scores = scores.masked_fill(~keep, -1e6)
            weights = torch.softmax(scores, dim=-1)
            return (weights @ X).squeeze(1), weights

    return Pooling


def trajectory(kind: str, seed: int, stages: tuple[float, ...]) -> list[float]:
    """The training check's figure after each stage of one training, through the harness's grade_pooling as the
    check calls it (one training, gone on with from stage to stage)."""
    harness = load_harness()
    X, valid_lens, labels = evaluation_data(np.random.default_rng(EVALUATION_SEED), EVALUATION_SIZE)
    pooling = pooling_of(kind)
    scores = []
    for epochs in stages:
        logits, _ = harness.grade_pooling(pooling, torch.as_tensor(X, dtype=torch.float32),
                                          torch.as_tensor(valid_lens), seed, epochs)
        scores.append(float(np.mean((logits.numpy() > 0) == labels)))
    return scores


CALIBRATION = Calibration(trajectory, should_pass=SHOULD_PASS, should_fail=SHOULD_FAIL, stages=(0.5, 1.0, 2.0, 4.0),
                          mark=PASS_ACCURACY, pass_margin=0.05, fail_margin=0.05, seeds=tuple(range(1, 11)),
                          held_out=tuple(range(11, 21)), check_seed=HARNESS_SEED, unit="epochs",
                          score="the share of the grader's labels the trained classifier gets right")
'''
