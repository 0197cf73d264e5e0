"""A likely cause only when it is the cause: a known-wrong variant is named for a failed check only when its replay
reproduces the failure (meets the very expectation that failed, on the same inputs, or passes), its explanation says
what the outputs show rather than what the code does, and a check-named mistake is not named for another failure
(an output holding NaN is no sign of dropout)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.check import load_assignment
from grader.discover import Submission
from grader.results import CheckResult, SubmissionResult

from .conftest import SUBMISSIONS, write
from .warm_workers import grade_one

CHECKS = '''
    import numpy as np

    from grader.check import Arg, Assignment, CheckContext, Question

    from . import reference as ref

    ASSIGNMENT = Assignment(name="causes", title="Causes", questions=[Question("q1", "double", defines=("double",))])


    @ASSIGNMENT.check("q1", points=1, title="double, on the reference's cases in turn")
    def q1_cases(ctx: CheckContext) -> None:
        double = ctx.student.function("double")
        for x in ref.cases():
            ctx.expect_tensor("double(x)", double(Arg.tensor(x, "float64")), ref.doubled(x))
'''
REFERENCE = '''
    import numpy as np

    from grader.check import substitutable


    @substitutable
    def cases():
        return [np.array([1.0, 2.0]), np.array([3.0, 4.0])]


    @substitutable
    def doubled(x):
        return 2 * x
'''
# The first variant gets further than the graded run on every submission that fails the second case with [7, 9]:
# its second case is [3.5, 4.5], whose double is [7, 9], and the replay served the answer to [3, 4] in its place.
VARIANTS = '''
    import numpy as np

    from . import reference as ref
    from .checks import ASSIGNMENT


    @ASSIGNMENT.variant("q1", replaces=ref.cases, name="other cases", explain="Your double is fine on other cases.")
    def q1_other_cases():
        return [np.array([1.0, 2.0]), np.array([3.5, 4.5]), np.array([5.0, 6.0])]


    @ASSIGNMENT.variant("q1", replaces=ref.doubled, name="plus two past 3", explain="Your double adds 2 past 3.")
    def q1_plus_two(x):
        return 2 * x + 2 * (x.max() >= 3)
'''


def graded(folder: Path, assignment: object, source: str, name: str = "student") -> SubmissionResult:
    path = write(folder, f"{name}.py", source)
    submission = Submission(name, path, "python", datetime.now(UTC))
    return grade_one(submission=submission, assignment=assignment, root=folder)  # type: ignore[arg-type]


def the_check(result: SubmissionResult, check_id: str) -> CheckResult:
    return next(c for c in result.checks if c.check_id == check_id)


@pytest.fixture(scope="module")
def causes(tmp_path_factory: pytest.TempPathFactory) -> object:
    folder = tmp_path_factory.mktemp("solutions")
    for name, text in (("__init__.py", ""), ("checks.py", CHECKS), ("reference.py", REFERENCE),
                       ("variants.py", VARIANTS)):
        write(folder / "causes", name, text)
    return load_assignment("causes", solutions_dir=folder)


def test_a_variant_that_gets_further_without_reproducing_the_failing_values_is_no_cause(
        causes: object, tmp_path: Path) -> None:
    result = graded(tmp_path, causes, """
        def double(x):
            return 2 * x if x.max() < 3 else 2 * x + 1
        """)
    check = the_check(result, "q1.cases")
    assert check.status == "failed" and check.message.startswith("double(x) differs from the reference")
    assert check.diagnosis is None


def test_a_variant_that_reproduces_the_failure_is_named(causes: object, tmp_path: Path) -> None:
    result = graded(tmp_path, causes, """
        def double(x):
            return 2 * x if x.max() < 3 else 2 * x + 2
        """)
    check = the_check(result, "q1.cases")
    assert check.status == "failed" and check.diagnosis is not None
    assert check.diagnosis.variant == "q1.plus_two"


# ----- attention_scoring: real student code ------------------------------------------------------------------------
MODEL = (SUBMISSIONS / "attention_scoring" / "einsum_style.py").read_text()
DOT_WEIGHTS = "        self.attention_weights = masked_softmax(scores, valid_lens)\n"
ADDITIVE_TAIL = """        scores = torch.einsum('bqkh,h->bqk', features, self.w_v.weight[0])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.einsum('bqk,bkv->bqv',
                            self.dropout(self.attention_weights), values)
"""


def edited(source: str, old: str, new: str, *, occurrence: int = 0) -> str:
    at = -1
    for _ in range(occurrence + 1):
        at = source.index(old, at + 1)
    return source[:at] + new + source[at + len(old):]


@pytest.fixture(scope="module")
def scoring() -> object:
    return load_assignment("attention_scoring")


def test_valid_lens_used_as_a_boolean_mask_is_named_as_such(scoring: object, tmp_path: Path) -> None:
    """Its outputs are those of a DotProductAttention that ignores valid_lens, but it does use it, as a mask: the
    cause is not that valid_lens is never used, nor only what the outputs show, but what a run with a mask in
    place of the lengths proves (it passes)."""
    source = edited(MODEL, DOT_WEIGHTS, """        if valid_lens is not None:  # masks an example of length 0
            keep = valid_lens.bool()
            while keep.dim() < scores.dim():
                keep = keep.unsqueeze(-1)
            scores = scores.masked_fill(~keep, -1e6)
        self.attention_weights = torch.softmax(scores, dim=-1)
""", occurrence=1)
    result = graded(tmp_path, scoring, source)
    assert result.status == "graded", result.reason
    failed = [c for c in result.checks if c.question == "q3" and not c.passed]
    assert failed
    said = [c.message for c in failed] + [c.diagnosis.explanation for c in failed if c.diagnosis is not None]
    assert not any("never uses" in text or "never used" in text for text in said), said
    causes = {c.diagnosis.variant for c in failed if c.diagnosis is not None}
    assert causes == {"q3.lengths_as_mask"}
    assert all(c.diagnosis.explanation.startswith("Your DotProductAttention.forward uses valid_lens as a boolean "
                                                  "mask") for c in failed if c.diagnosis)


def test_nan_output_is_not_called_dropout(scoring: object, tmp_path: Path) -> None:
    """A masked_softmax that gives NaN (0 * -inf where a key is kept) and an AdditiveAttention that masks the same
    way itself, with no dropout: NaN != NaN must not read as dropout in eval mode, nor as dropout in training."""
    nan_mask = 'X * mask + (~mask) * float("-inf")'
    source = edited(MODEL, "X.masked_fill(~mask, -1e6)", nan_mask)
    source = edited(source, ADDITIVE_TAIL, """        scores = torch.einsum('bqkh,h->bqk', features, self.w_v.weight[0])
        if valid_lens is not None:
            mask = _valid_mask(valid_lens, scores.shape[-1])
            scores = scores * mask + (~mask) * float("-inf")
        self.attention_weights = F.softmax(scores, dim=-1)
        return torch.einsum('bqk,bkv->bqv', self.attention_weights, values)
""")
    result = graded(tmp_path, scoring, source)
    assert result.status == "graded", result.reason
    evaluated = the_check(result, "q2.eval_deterministic")
    training = the_check(result, "q2.dropout_in_training")
    for check in (evaluated, training):
        assert check.status == "failed", check.message
        assert check.diagnosis is None, check.diagnosis
        assert "holds NaN" in check.message and "AdditiveAttention" in check.message
    assert "dropout" not in evaluated.message
