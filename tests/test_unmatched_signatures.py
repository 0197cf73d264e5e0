"""Constructor arguments are matched by what their names say, never by position alone (issue 28, pattern 4).

The rule on its own first (grader/check/signature.py), drawn by Hypothesis over the constructor calls the four
assignments' checks make, the student's parameters renamed and put in any order: a renaming whose words say each
argument's role is matched, each value to its parameter; one that does not is told, with both signatures, and nothing
is passed on a guess. Then through the runner."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given

from grader.check import load_assignment
from grader.check.signature import Parameter, mismatch_message, plan_call
from grader.discover import Submission

from .conftest import write
from .sample_classes import student_reads
from .warm_workers import grade_one

# The arguments the assignments' checks construct with (solutions/*/checks.py), in their order.
CALLS = (("num_hiddens", "dropout"), ("dropout",), ("query_size", "key_size", "dropout"), ("input_dim", "hidden_dim"),
         ("input_dim", "hidden_dim", "num_heads"), ("dim", "use_scale", "causal", "dropout"), ("hidden_size",))
# Names students give each argument that say its role (the corpus's and the usual ones).
SAYS_ITS_ROLE = {
    "num_hiddens": ("num_hiddens", "d_hid", "hidden_dim", "n_hidden", "hiddenSize", "NUM_HIDDENS", "hiddens"),
    "dropout": ("dropout", "p_drop", "dropout_rate", "drop", "dropout_p", "Dropout", "drop_prob"),
    "query_size": ("query_size", "d_q", "q_dim", "query_dim", "queryDim"),
    "key_size": ("key_size", "d_k", "k_dim", "key_dim"),
    "input_dim": ("input_dim", "in_features", "input_size", "d_in", "inp_dim"),
    "hidden_dim": ("hidden_dim", "hidden_size", "d_hidden", "hid"),
    "num_heads": ("num_heads", "heads", "n_heads", "nheads"),
    "dim": ("dim", "units", "d_model", "size", "features"),
    "use_scale": ("use_scale", "scale", "scaled", "use_scaling"),
    "causal": ("causal", "is_causal", "use_causal_mask", "causal_mask"),
    "hidden_size": ("hidden_size", "hidden_dim", "d_hidden", "hid_size"),
}
# Names that say nothing: neither a role nor a size.
SAY_NOTHING = ("foo", "bar", "arg", "thing", "alpha", "beta", "extra", "option")


def signature(names: list[str], defaults: list[bool]) -> list[Parameter]:
    return [Parameter(n, "either", d, "0.1" if d else None) for n, d in zip(names, defaults)]


@st.composite
def renamed(draw: st.DrawFn, *, unmatchable: bool) -> tuple[dict[str, float], dict[str, str], list[Parameter]]:
    """An assignment's call (argument -> value) and the student's parameter for each, in any order; with
    ``unmatchable``, two or more of them named with words that say nothing."""
    call = draw(st.sampled_from([c for c in CALLS if len(c) >= 2] if unmatchable else CALLS))
    theirs = {arg: draw(st.sampled_from(SAYS_ITS_ROLE[arg])) for arg in call}
    if unmatchable:
        hidden = draw(st.lists(st.sampled_from(call), min_size=2, max_size=len(call), unique=True))
        nothing = draw(st.lists(st.sampled_from(SAY_NOTHING), min_size=len(hidden), max_size=len(hidden),
                                unique=True))
        theirs.update(zip(hidden, nothing))
    order = draw(st.permutations(list(call)))
    defaults = draw(st.lists(st.booleans(), min_size=len(call), max_size=len(call)))
    wanted = {arg: float(i + 2) for i, arg in enumerate(call)}
    return wanted, theirs, signature([theirs[a] for a in order], defaults)


@given(renamed(unmatchable=False))
def test_names_that_say_each_role_are_matched_each_to_its_parameter(
        case: tuple[dict[str, float], dict[str, str], list[Parameter]]) -> None:
    wanted, theirs, params = case
    plan = plan_call(params, wanted, {})
    assert not plan.problem and plan.args == ()
    assert plan.kwargs == {theirs[arg]: value for arg, value in wanted.items()}
    assert dict(plan.renamed) == {a: t for a, t in theirs.items() if a != t}


@given(renamed(unmatchable=True))
def test_names_that_say_nothing_are_told_with_both_signatures_and_never_guessed(
        case: tuple[dict[str, float], dict[str, str], list[Parameter]]) -> None:
    wanted, theirs, params = case
    plan = plan_call(params, wanted, {})
    unnamed = [arg for arg in wanted if theirs[arg] in SAY_NOTHING]
    assert plan.problem.startswith("could not match ") and set(unnamed) <= set(plan.unmatched)
    assert not set(plan.kwargs) & set(SAY_NOTHING) and plan.args == ()  # nothing passed to them on a guess
    message = mismatch_message("Attention", params, list(wanted), plan)
    shown = ", ".join(f"{p.name}=0.1" if p.has_default else p.name for p in params)
    assert message.startswith(f"Attention takes ({shown}); the assignment passes {', '.join(wanted)}: could not "
                              "match ")


def test_a_parameter_that_names_another_role_is_not_given_the_last_argument() -> None:
    # PositionalEncoding(d_model, max_len=5000, drop=0.1) built with (num_hiddens, dropout): by role, not order.
    plan = plan_call(signature(["d_model", "max_len", "drop"], [False, True, True]),
                     {"num_hiddens": 32, "dropout": 0.5}, {})
    assert plan.kwargs == {"d_model": 32, "drop": 0.5}
    # A Bahdanau module whose only other parameter is a dropout rate gets no input size in it.
    plan = plan_call(signature(["hidden_size", "dropout"], [False, True]), {"input_dim": 20, "hidden_dim": 8}, {})
    assert plan.unmatched == ("input_dim",) and plan.kwargs == {}


# ----- through the runner ---------------------------------------------------------------------------------------
SWAPPED_ORDER = """
    import torch
    from torch import nn

    class AdditiveAttention(nn.Module):
        def __init__(self, hidden_size, input_size):
            super().__init__()
            self.query_layer = nn.Linear(input_size, hidden_size)
            self.key_layer = nn.Linear(input_size, hidden_size)
            self.energy_layer = nn.Linear(hidden_size, 1)

        def forward(self, query, keys, values):
            energy = self.energy_layer(torch.tanh(self.query_layer(query) + self.key_layer(keys)))
            weights = torch.softmax(energy.squeeze(-1), dim=-1)
            return weights @ values, weights
"""

NO_ROLE = """
    import torch
    from torch import nn

    class AdditiveAttention(nn.Module):
        def __init__(self, a, b, scale=1.0):
            super().__init__()
            self.query_layer = nn.Linear(a, b)
            self.key_layer = nn.Linear(a, b)
            self.energy_layer = nn.Linear(b, 1)

        def forward(self, query, keys, values):
            energy = self.energy_layer(torch.tanh(self.query_layer(query) + self.key_layer(keys)))
            weights = torch.softmax(energy.squeeze(-1), dim=-1)
            return weights @ values, weights
"""


def graded(tmp_path: Path, source: str):
    path = write(tmp_path, "student.py", source)
    return grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                     assignment=load_assignment("bahdanau_attention"), root=path.parent)


@pytest.mark.slow
def test_arguments_in_another_order_go_by_their_names(tmp_path: Path) -> None:
    result = graded(tmp_path, SWAPPED_ORDER)
    q1 = next(q for q in result.questions if q.id == "q1")
    assert q1.score == q1.max_score, [(c.check_id, c.message) for c in result.checks if not c.passed]
    assert "input_dim as `input_size`, hidden_dim as `hidden_size`" in " ".join(c.line for c in q1.choices)


@pytest.mark.slow
def test_arguments_that_say_nothing_are_told_once_not_guessed(tmp_path: Path) -> None:
    result = graded(tmp_path, NO_ROLE)
    q1 = next(q for q in result.questions if q.id == "q1")
    said = ("AdditiveAttention takes (a, b, scale=1.0); the assignment passes input_dim, hidden_dim: could not match "
            "input_dim and hidden_dim")
    assert q1.score == 0 and " ".join(q1.notes).count(said) == 1
    assert all(student_reads(result, c.check_id).startswith(said) for c in result.checks if c.question == "q1")
