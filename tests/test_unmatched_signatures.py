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

from .conftest import ROOT, write
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


# ----- sizes an older edition's constructor takes explicitly --------------------------------------------------------
# attention_scoring's AdditiveAttention is built with (num_hiddens, dropout) and offers key_size and query_size to a
# constructor that takes them (the book's older edition): under these names too, in any order.
SIZE_FORMS = {
    "query_size": ("query_size", "q_size", "d_q", "query_dim", "dim_q", "queries_dim", "n_query", "qdim", "q_dim",
                   "query_features", "queryDim", "num_queries_features"),
    "key_size": ("key_size", "k_size", "d_k", "key_dim", "dim_k", "keys_dim", "n_key", "kdim", "k_dim",
                 "key_features", "keyDim", "num_key_features"),
}
# Names of a query or key that say no size: never given one.
NOT_SIZES = ("queries", "keys", "query", "key", "q", "k")


@given(st.sampled_from(SIZE_FORMS["query_size"]), st.sampled_from(SIZE_FORMS["key_size"]),
       st.sampled_from(SAYS_ITS_ROLE["num_hiddens"]), st.sampled_from(SAYS_ITS_ROLE["dropout"]),
       st.permutations(range(4)), st.booleans())
def test_an_older_editions_explicit_sizes_are_bound_by_role_in_any_order(
        query: str, key: str, hiddens: str, dropout: str, order: list[int], dropout_default: bool) -> None:
    names = [query, key, hiddens, dropout]
    params = [Parameter(names[i], "either", i == 3 and dropout_default) for i in order]
    plan = plan_call(params, {"num_hiddens": 8, "dropout": 0.1}, {"key_size": 3, "query_size": 5})
    assert not plan.problem, plan
    assert plan.kwargs == {query: 5, key: 3, hiddens: 8, dropout: 0.1}


@given(st.sampled_from(NOT_SIZES), st.sampled_from(SIZE_FORMS["key_size"]), st.permutations(range(4)))
def test_a_name_that_says_no_size_gets_none_and_the_mismatch_is_the_graders_to_tell(
        other: str, key: str, order: list[int]) -> None:
    """A parameter left with nothing to take is told with both signatures, never called into a TypeError that
    would read as the student's code raising."""
    names = [other, key, "num_hiddens", "dropout"]
    params = [Parameter(names[i], "either", False) for i in order]
    plan = plan_call(params, {"num_hiddens": 8, "dropout": 0.1}, {"key_size": 3, "query_size": 5})
    assert other not in plan.kwargs
    assert plan.problem == f"nothing it passes is for `{other}`"
    assert mismatch_message("AdditiveAttention", params, ["num_hiddens", "dropout"], plan).startswith(
        f"AdditiveAttention takes ({', '.join(p.name for p in params)}); the assignment passes num_hiddens, dropout: "
        f"nothing it passes is for `{other}`.")


OLDER_EDITION = (ROOT / "tests" / "submissions" / "attention_scoring" / "older_edition.py").read_text()
OLDER_SIGNATURE = "    def __init__(self, key_size, query_size, num_hiddens, dropout, **kwargs):\n"
OLDER_BODY = ("        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)\n"
              "        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)\n")


@pytest.mark.slow
@pytest.mark.parametrize(("query", "key", "first"), [("q_size", "k_size", "query"), ("d_q", "d_k", "query"),
                                                     ("query_dim", "key_dim", "key"), ("dim_q", "kdim", "key")])
def test_an_explicit_size_constructor_under_names_of_its_own_keeps_its_points(
        tmp_path: Path, query: str, key: str, first: str) -> None:
    assert OLDER_SIGNATURE in OLDER_EDITION and OLDER_BODY in OLDER_EDITION
    sizes = f"{query}, {key}" if first == "query" else f"{key}, {query}"
    signature = f"    def __init__(self, {sizes}, num_hiddens, dropout, **kwargs):\n"
    source = OLDER_EDITION.replace(OLDER_SIGNATURE, signature).replace(
        OLDER_BODY, OLDER_BODY.replace("(key_size,", f"({key},").replace("(query_size,", f"({query},"))
    path = write(tmp_path, "student.py", source)
    result = grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                       assignment=load_assignment("attention_scoring"), root=path.parent)
    q2 = next(q for q in result.questions if q.id == "q2")
    assert q2.score == q2.max_score, [(c.check_id, c.message) for c in q2.checks if not c.passed]
    assert f"key_size as `{key}`" in " ".join(c.line for c in q2.choices)
