"""What ``grader new NAME`` writes: a small, complete assignment (d2l 11.3's masked softmax in PyTorch), each file's
text with ``{{name}}`` where the assignment's name goes.

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
'''

CHECKS = '''"""Graded checks for {{name}}: one question, padded_softmax (d2l 11.3), 10 points.

Each check calls the student's function in their sandboxed process and compares what it returns with the float64
reference (reference_numpy.py). The public check is the one students run themselves (`grader check`, the kit);
the hidden one draws other sizes from the check's seed, so an answer fitted to the public example does not pass it.
"""

from __future__ import annotations

import numpy as np

from grader.check import HIDDEN, Arg, Assignment, CheckContext, Question

from . import reference_numpy as ref

ASSIGNMENT = Assignment(
    name="{{name}}",
    title="{{name}}: a softmax that ignores padding",
    questions=[
        Question("q1", "padded_softmax", defines=("padded_softmax",)),
    ],
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

DEMO = '''X = torch.rand(2, 2, 4)
print(padded_softmax(X, torch.tensor([2, 3])))'''

INTRODUCTION = '''# {{name}}: a softmax that ignores padding

Implement `padded_softmax` (d2l 11.3) in PyTorch, keeping its name and signature. Fill in the place marked
`raise NotImplementedError`, run the example, then check your work (the last cells).'''

QUESTION = '''## Question 1: a softmax that ignores padding

Sequences in a batch have different lengths, padded to the longest. Attention must not give weight to the padding:
`padded_softmax(X, valid_lens)` is the softmax of `X` over its last axis (the keys), with every key from
`valid_lens[b]` on weighted 0 in batch item `b`.'''

IMPORTS = "import torch"

SAMPLE = '''"""{{name}}: the model solution written as a student would hand it in (a .py).

The mutation test (tests/test_variants.py) grades it, then edits each known mistake in
solutions/{{name}}/variants.py into it.
"""

import torch


''' + SIGNATURE + SOLUTION_BODY + '''

if __name__ == "__main__":
''' + "".join(f"    {line}\n" for line in DEMO.splitlines())
