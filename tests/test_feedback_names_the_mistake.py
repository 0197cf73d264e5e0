"""Issue 28: feedback that names the real mistake. A hidden check that raises tells the student's line and the sizes
(never the exception's message); a provided harness's frame is named by its file and its own line; a name missing
after a failed import is blamed on the line that would have defined it."""

from __future__ import annotations

import re
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.check.spec import Assignment
from grader.check.student import _where
from grader.discover import Submission
from grader.results import SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, ROOT, write
from .warm_workers import grade_one

# An assignment whose hidden check draws its sizes: the public check's batch equals its number of queries (2 and 2,
# the textbook's example), where the mistake below does not show.
HIDDEN_SIZES_CHECKS = '''
import numpy as np

from grader.check import HIDDEN, Arg, Assignment, CheckContext, Limits, Question

ASSIGNMENT = Assignment(
    name="hidden_sizes",
    title="Hidden sizes",
    questions=[Question("q1", "attend", defines=("attend",))],
    limits=Limits(call_seconds=5.0, unit_seconds=5.0, submission_seconds=60.0),
)
check = ASSIGNMENT.check


def expect_attend(ctx: CheckContext, Q: np.ndarray, K: np.ndarray) -> None:
    scores = Q @ K.transpose(0, 2, 1)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    got = ctx.student.function("attend")(Arg.tensor(Q), Arg.tensor(K))
    ctx.expect_tensor("attend(Q, K)", got, e / e.sum(axis=-1, keepdims=True))


@check("q1", points=1, title="the textbook's example: batch 2, 2 queries, 3 keys")
def q1_example(ctx: CheckContext) -> None:
    expect_attend(ctx, ctx.rng.normal(size=(2, 2, 4)), ctx.rng.normal(size=(2, 3, 4)))


@check("q1", points=1, visibility=HIDDEN, title="random sizes")
def q1_random(ctx: CheckContext) -> None:
    batch, queries, keys = ctx.sizes(batch=(4, 7), queries=(2, 4), keys=(2, 5))
    expect_attend(ctx, ctx.rng.normal(size=(batch, queries, 4)), ctx.rng.normal(size=(batch, keys, 4)))
'''

# Indexes the queries with the batch size: fine while they are equal, an IndexError when there are more items.
ATTEND = """\
import torch


def attend(Q, K):
    weights = torch.softmax(Q @ K.transpose(1, 2), dim=-1)
    last = weights[:, Q.shape[0] - 1]
    return weights
"""

# The same mistake, and a message that carries the inputs out: what a hidden check's hint must not pass on.
HOSTILE = """\
import torch


def attend(Q, K):
    weights = torch.softmax(Q @ K.transpose(1, 2), dim=-1)
    if Q.shape[0] != Q.shape[1]:
        raise IndexError(" ".join(f"{v:.6f}" for v in Q.flatten().tolist()) + " ".join(map(str, Q.shape)))
    return weights
"""


def grade_file(tmp_path: Path, assignment: Assignment, source: str, name: str = "student.py") -> SubmissionResult:
    path = write(tmp_path / "submissions", name, source)
    submission = Submission(path.stem, path, "python", datetime.now(UTC))
    return grade_one(submission=submission, assignment=assignment, root=tmp_path / "submissions")


@pytest.fixture(scope="module")
def hidden_sizes(tmp_path_factory: pytest.TempPathFactory) -> Assignment:
    solutions = tmp_path_factory.mktemp("solutions")
    write(solutions / "hidden_sizes", "__init__.py", "")
    write(solutions / "hidden_sizes", "checks.py", textwrap.dedent(HIDDEN_SIZES_CHECKS))
    return load_assignment("hidden_sizes", solutions_dir=solutions)


def test_a_hidden_check_that_raises_names_the_students_line_and_the_sizes_but_no_input(
        tmp_path: Path, hidden_sizes: Assignment) -> None:
    result = grade_file(tmp_path / "honest", hidden_sizes, ATTEND)
    public, hidden = result.checks
    assert public.passed
    assert hidden.status == "error"
    # Type, line and its text, the drawn sizes; nothing else (the message, "index 4 is out of bounds ...", stays out).
    assert re.fullmatch(r"your code raised IndexError \(line 6: `last = weights\[:, Q\.shape\[0\] - 1\]`\) with "
                        r"the sizes batch [4-7], queries [2-4], keys [2-5]", hidden.message), hidden.message
    assert "out of bounds" in hidden.detail  # the instructor has the whole story

    result = grade_file(tmp_path / "hostile", hidden_sizes, HOSTILE)
    hidden = result.checks[1]
    assert re.fullmatch(r"your code raised IndexError \(line 7: `raise IndexError\(.*\)`\) with the sizes "
                        r"batch [4-7], queries [2-4], keys [2-5]", hidden.message), hidden.message
    leaked = re.search(r"raised IndexError: (\S+)", hidden.detail)  # the values the code put in its message...
    assert leaked and leaked.group(1) not in hidden.message  # ...are the instructor's only
    assert not re.search(r"\d\.\d", hidden.message)


PRACTICAL10_SAMPLE = ROOT / "tests" / "submissions" / "practical10" / "reference_style.py"


def test_a_frame_in_the_provided_harness_names_the_students_file_and_its_own_line(tmp_path: Path) -> None:
    assignment = load_assignment("practical10")
    source = PRACTICAL10_SAMPLE.read_text(encoding="utf-8")
    # forward without the mask: the harness's call, self.attention(outputs, context, mask), raises TypeError.
    assert "    def forward(self, query, context, mask=None):\n" in source
    source = source.replace("    def forward(self, query, context, mask=None):\n",
                            "    def forward(self, query, context):\n        mask = None\n")
    harness = (ROOT / "assignments" / "practical10" / "reversal.py").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(harness, 1) if "= self.attention(outputs, context, mask)" in text)
    training = next(c for c in grade_file(tmp_path, assignment, source).checks if c.check_id == "q4.training")
    assert training.status == "failed"
    assert f"(reversal.py, line {line}, in forward: `{harness[line - 1].strip()}`)" in training.message, \
        training.message
    assert "outputs, weights = self.attention(outputs, context, mask)" in harness[line - 1]
    assert "reference code" not in training.message


def test_a_frame_in_a_provided_file_that_holds_an_answer_is_the_graders_reference_code() -> None:
    assert _where(["<reference>", 12, "self_attention", "scores = Q @ K.T"]) == " (in the grader's reference code)"
    assert _where(["<provided reversal.py>", 108, "forward", "x = 1"]) == \
        " (reversal.py, line 108, in forward: `x = 1`)"
    practical10 = load_assignment("practical10")
    assert [(f.name, f.reference, f.filename) for f in practical10.provided_files] == [
        ("provided.py", True, "<reference>"), ("reversal.py", False, "<provided reversal.py>")]


def test_a_missing_name_is_blamed_on_the_import_that_would_have_defined_it(tmp_path: Path) -> None:
    toy = load_assignment("toy", solutions_dir=FIXTURE_SOLUTIONS)
    source = """\
        import torch
        from nowhere_module import helper
        from torch import sequence_mask_missing


        def scale(x):
            return sequence_mask_missing(x) * 2


        def twice_scaled(x):
            return undefined_helper(scale(x))


        bump = helper.make_bump()
        """
    result = grade_file(tmp_path, toy, source)
    first = next(c for c in result.checks if c.check_id == "q1.first")
    assert first.status == "error"
    assert first.message.endswith("(line 3 raised ImportError while loading, which may be why)"), first.message
    assert "line 2" not in first.message
    twice = next(c for c in result.checks if c.check_id == "q2.twice")
    assert twice.message.endswith("(nothing in your code defines `undefined_helper`; separately, line 2 raised "
                                  "ModuleNotFoundError while loading)"), twice.message
    # bump's line failed for want of `helper`, which line 2 would have imported: followed there.
    fresh = next(c for c in result.checks if c.check_id == "q3.fresh")
    assert fresh.message == ("`bump` is not defined in your submission (line 14 raised NameError while loading, which "
                             "may be why; `helper` was not defined there because line 2 raised ModuleNotFoundError "
                             "while loading)"), fresh.message
