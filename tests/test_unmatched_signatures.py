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
from grader.check.signature import Parameter, mismatch_message, plan_call, roles
from grader.discover import Submission
from grader.results import SubmissionResult

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


# ----- sizes, required or optional, by one rule ------------------------------------------------------------------
# attention_scoring's AdditiveAttention is built with (num_hiddens, dropout) and offers key_size and query_size to a
# constructor that takes them (the book's older edition); its BilinearAttention is built with (query_size, key_size,
# dropout). A size goes to a parameter whose name says its role and a size, in both, however the student spells it.
ROLE_FORMS = {"query": ("q", "query", "queries", "qry"), "key": ("k", "key", "keys"),
              "value": ("v", "value", "values", "val")}
SIZE_BEFORE = ("d", "dim", "n", "num", "size")  # d_q, dim_q, n_query, num_query, size_q
SIZE_AFTER = ("size", "dim", "dims", "sz", "features", "in_features", "in_dim")  # q_size, query_in_features
COUNTING = ("n", "num")  # with a plural they count: num_keys
RUN_TOGETHER = {"before": ("d", "dim"), "after": ("dim", "dims", "size", "sz")}  # dq, kdim, qsize, querydim


def joined(first: str, second: str, style: str) -> str:
    if style == "camel":
        return first + "".join(w.capitalize() for w in second.split("_"))
    return f"{first}_{second}".upper() if style == "upper" else f"{first}_{second}"


@st.composite
def size_spelling(draw: st.DrawFn, role: str) -> str:
    """A name a student gives the size of the queries, keys or values, that says its role and a size."""
    word = draw(st.sampled_from(ROLE_FORMS[role]))
    plural = word in ("queries", "keys", "values")
    before = draw(st.booleans())
    if before:
        size = draw(st.sampled_from([w for w in SIZE_BEFORE if not (plural and w in COUNTING)]))
    else:
        size = draw(st.sampled_from(SIZE_AFTER))
    together = (len(word) == 1 if before else "_" not in size) and size in RUN_TOGETHER["before" if before else "after"]
    style = draw(st.sampled_from(["snake", "camel", "upper", *(["together"] if together else [])]))
    if style == "together":
        return size + word if before else word + size
    return joined(size, word, style) if before else joined(word, size, style)


# Names that say a query's or key's role but not that they are its size: the tensor's own name, a count of them, a
# length, another role beside it; or a size of two roles at once.
@st.composite
def no_size_spelling(draw: st.DrawFn, role: str) -> str:
    word = draw(st.sampled_from(ROLE_FORMS[role]))
    plural = {"query": "queries", "key": "keys", "value": "values"}[role]
    other = "key" if role == "query" else "query"
    return draw(st.sampled_from([word, word.capitalize(), f"num_{plural}", f"n_{plural}", f"{word}_len",
                                 f"max_{word}_len", f"{word}_scale", f"{word}_{other}_dim", f"d_{word[0]}{other[0]}",
                                 f"{word[0]}{other[0]}_size"]))


@st.composite
def explicit_sizes(draw: st.DrawFn) -> tuple[dict[str, str], list[Parameter]]:
    """An older edition's explicit-size constructor (its sizes, a hidden size and a dropout rate, with or without the
    values' size) under names of the student's own, in any order, the dropout rate with or without a default."""
    sizes = ("query_size", "key_size", *(("value_size",) if draw(st.booleans()) else ()))
    theirs = {ours: draw(size_spelling(ours.removesuffix("_size"))) for ours in sizes}
    theirs["num_hiddens"] = draw(st.sampled_from(SAYS_ITS_ROLE["num_hiddens"]))
    theirs["dropout"] = draw(st.sampled_from(SAYS_ITS_ROLE["dropout"]))
    order = draw(st.permutations(list(theirs)))
    default = draw(st.booleans())
    params = [Parameter(theirs[a], "either", a == "dropout" and default, "0.0" if a == "dropout" and default else None)
              for a in order]
    return theirs, params


VALUES = {"query_size": 5, "key_size": 3, "value_size": 7, "num_hiddens": 8, "dropout": 0.125}


@given(explicit_sizes())
def test_an_older_editions_explicit_sizes_are_bound_by_role_in_any_order(
        case: tuple[dict[str, str], list[Parameter]]) -> None:
    theirs, params = case
    optional = {ours: VALUES[ours] for ours in theirs if ours.endswith("_size")}
    plan = plan_call(params, {"num_hiddens": 8, "dropout": 0.125}, optional)
    assert not plan.problem and plan.args == (), plan
    assert plan.kwargs == {theirs[ours]: VALUES[ours] for ours in theirs}


@given(explicit_sizes(), st.booleans())
def test_a_size_is_bound_the_same_way_whether_the_assignment_passes_it_or_offers_it(
        case: tuple[dict[str, str], list[Parameter]], positional_only: bool) -> None:
    """BilinearAttention(query_size, key_size, dropout) gets its sizes where AdditiveAttention(num_hiddens, dropout)
    would be offered them, also through positional-only parameters."""
    theirs, params = case
    params = [p for p in params if p.name != theirs["num_hiddens"]]
    if positional_only:  # `def __init__(self, d_q, d_k, /, dropout)`: the sizes first, by position
        sizes = [p for p in params if p.name != theirs["dropout"]]
        params = [Parameter(p.name, "positional", False) for p in sizes] + [
            p for p in params if p.name == theirs["dropout"]]
    wanted = {ours: VALUES[ours] for ours in theirs if ours in ("query_size", "key_size", "dropout")}
    offered = {ours: VALUES[ours] for ours in theirs if ours.endswith("_size")}
    passed, optional = plan_call(params, wanted, {}), plan_call(params, {"dropout": 0.125}, offered)
    if "value_size" in theirs:  # the assignment passes no values' size: only an offered one fills it
        assert passed.problem and theirs["value_size"] not in passed.kwargs and passed.args == ()
        assert not optional.problem
    else:
        assert not passed.problem and (passed.args, passed.kwargs) == (optional.args, optional.kwargs)
    bound = dict(zip([p.name for p in params if p.kind == "positional"], optional.args, strict=False))
    assert {**bound, **optional.kwargs} == {theirs[ours]: VALUES[ours] for ours in theirs if ours != "num_hiddens"}


@given(st.sampled_from(["query", "key"]), st.data(), st.permutations(range(4)), st.booleans())
def test_a_name_that_does_not_say_a_size_of_one_role_gets_none_and_the_mismatch_is_the_graders_to_tell(
        role: str, data: st.DataObject, order: list[int], passed: bool) -> None:
    """Not by a guess: a parameter left with nothing is told with both signatures, never called into a TypeError
    that would read as the student's code raising; so is a size the assignment passes that finds no parameter."""
    other = "key" if role == "query" else "query"
    unclear = data.draw(no_size_spelling(role))
    names = [unclear, data.draw(size_spelling(other)), "num_hiddens", "dropout"]
    params = [Parameter(names[i], "either", False) for i in order]
    sizes = {f"{role}_size": 5, f"{other}_size": 3}
    wanted = {**sizes, "dropout": 0.125} if passed else {"num_hiddens": 8, "dropout": 0.125}
    plan = plan_call([p for p in params if not (passed and p.name == "num_hiddens")], wanted,
                     {} if passed else sizes)
    if passed and roles(unclear) == {role} and not unclear.lower().startswith(("num_", "n_")):
        # A size the assignment passes goes to a name that says its role alone (`q`, `Keys`): in a constructor it
        # can be nothing else, and the constructor needs it.
        assert not plan.problem and plan.kwargs[unclear] == sizes[f"{role}_size"]
        return
    assert unclear not in plan.kwargs and plan.args == ()
    assert plan.problem == (f"could not match {role}_size" if passed else f"nothing it passes is for `{unclear}`")
    shown = [p for p in params if not (passed and p.name == "num_hiddens")]
    message = mismatch_message("AdditiveAttention", shown, list(wanted), plan)
    assert message.startswith(f"AdditiveAttention takes ({', '.join(p.name for p in shown)}); the assignment passes "
                              f"{', '.join(wanted)}: {plan.problem}.")
    assert "raised" not in message


# Any name a student may give a constructor's parameter, with what it says: a size of one role, a hidden size, a
# dropout rate (of the queries, too), a size of nothing in particular, nothing at all, or nothing clear.
ANY_NAME = st.one_of(size_spelling("query").map(lambda n: (n, "query")), size_spelling("key").map(lambda n: (n, "key")),
                     no_size_spelling("query").map(lambda n: (n, "unclear")),
                     no_size_spelling("key").map(lambda n: (n, "unclear")),
                     st.sampled_from([(n, "dropout") for n in (*SAYS_ITS_ROLE["dropout"], "q_dropout", "key_drop")]),
                     st.sampled_from([(n, "hidden") for n in SAYS_ITS_ROLE["num_hiddens"]]),
                     st.sampled_from([(n, "generic") for n in SAYS_ITS_ROLE["dim"]]),
                     st.sampled_from([(n, "nothing") for n in SAY_NOTHING]))
# Where each value may go: its own kind of name, or (the last argument left) one that says nothing of another role,
# and a size also to a size of nothing in particular; never a dropout rate to a size, nor anything to a name unclear.
MAY_TAKE = {0.125: {"dropout", "nothing"}, 5: {"query", "nothing", "generic"}, 3: {"key", "nothing", "generic"},
            8: {"hidden", "nothing", "generic"}}


@given(st.lists(ANY_NAME, min_size=1, max_size=5, unique_by=lambda n: n[0].casefold().replace("_", "")),
       st.lists(st.booleans(), min_size=5, max_size=5), st.sampled_from(CALLS[:3]), st.booleans())
def test_a_dropout_rate_never_lands_in_a_size_nor_a_size_in_another_role(
        names: list[tuple[str, str]], defaults: list[bool], call: tuple[str, ...], offer: bool) -> None:
    wanted = {ours: VALUES[ours] for ours in call}
    optional = {"query_size": 5, "key_size": 3} if offer and "query_size" not in call else {}
    plan = plan_call(signature([n for n, _ in names], defaults), wanted, optional)
    says = dict(names)
    passed_role = {5: "query", 3: "key"}
    for name, value in plan.kwargs.items():
        # A size the assignment passes (not one it offers) may also go to a name that says its role alone (`q`).
        bare = value in passed_role and ("query_size" in wanted) and roles(name) == {passed_role[value]} and \
            not name.lower().startswith(("num_", "n_"))
        assert says[name] in MAY_TAKE[value] or bare, (name, plan)


# ----- through the runner: an explicit-size constructor under names of its own -----------------------------------
# A small attention_scoring submission written for these tests: a masked softmax and an additive attention whose
# constructor takes its sizes explicitly, as the older edition did, under the names below.
EXPLICIT_SIZES = """
    import torch
    from torch import nn


    def masked_softmax(X, valid_lens):
        if valid_lens is None:
            return torch.softmax(X, dim=-1)
        lens = valid_lens[:, None] if valid_lens.dim() == 1 else valid_lens
        keep = torch.arange(X.shape[-1], device=X.device) < lens[..., None]
        return torch.softmax(X.masked_fill(~keep, -1e6), dim=-1)


    class AdditiveAttention(nn.Module):
        def __init__(self, SIGNATURE):
            super().__init__()
            self.W_q = nn.Linear(QUERY, HIDDEN, bias=False)
            self.W_k = nn.Linear(KEY, HIDDEN, bias=False)
            self.w_v = nn.Linear(HIDDEN, 1, bias=False)
            self.dropout = nn.Dropout(DROPOUT)

        def forward(self, queries, keys, values, valid_lens):
            features = torch.tanh(self.W_q(queries)[:, :, None, :] + self.W_k(keys)[:, None, :, :])
            self.attention_weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
            return torch.bmm(self.dropout(self.attention_weights), values)
"""


def explicit_sizes_file(folder: Path, names: dict[str, str], signature: list[str]) -> SubmissionResult:
    source = EXPLICIT_SIZES.replace("SIGNATURE", ", ".join(signature))
    for word, name in names.items():
        source = source.replace(word.upper(), name)
    path = write(folder, "student.py", source)
    return grade_one(submission=Submission("student", path, "python", datetime.now(UTC)),
                     assignment=load_assignment("attention_scoring"), root=path.parent)


def told(result: SubmissionResult, question: str) -> str:
    q = next(q for q in result.questions if q.id == question)
    return " ".join([*q.notes, *(c.message for c in q.checks), *(q.said(c) for c in q.checks)])


# (query, key, hidden, dropout) as the student names them; each graded in the order given and with the two sizes
# swapped, the key's first as the older edition had it.
@pytest.mark.slow
@pytest.mark.parametrize(("query", "key", "hidden", "dropout"), [
    ("q_size", "k_size", "num_hiddens", "dropout"), ("d_q", "d_k", "num_hiddens", "dropout"),
    ("query_dim", "key_dim", "num_hiddens", "dropout"), ("dq", "dk", "d_hid", "dropout=0.0"),
    ("qsize", "kdim", "hidden_size", "p_drop")])
def test_an_explicit_size_constructor_under_names_of_its_own_keeps_its_points(
        tmp_path: Path, query: str, key: str, hidden: str, dropout: str) -> None:
    names = {"query": query, "key": key, "hidden": hidden, "dropout": dropout.split("=")[0]}
    for i, signature in enumerate(([query, key, hidden, dropout], [hidden, key, query, dropout])):
        result = explicit_sizes_file(tmp_path / str(i), names, signature)
        q2 = next(q for q in result.questions if q.id == "q2")
        assert q2.score == q2.max_score, [(c.check_id, q2.said(c)) for c in q2.checks if not c.passed]
        assert "raised" not in told(result, "q2")
        assert f"key_size as `{key}`, query_size as `{query}`" in " ".join(c.line for c in q2.choices)


@pytest.mark.slow
def test_sizes_it_cannot_tell_are_the_graders_to_say_once_with_both_signatures(tmp_path: Path) -> None:
    names = {"query": "queries", "key": "keys", "hidden": "num_hiddens", "dropout": "dropout"}
    result = explicit_sizes_file(tmp_path, names, list(names.values()))
    q2 = next(q for q in result.questions if q.id == "q2")
    said = ("AdditiveAttention takes (queries, keys, num_hiddens, dropout); the assignment passes num_hiddens, "
            "dropout: nothing it passes is for `queries` and `keys`. The grader does not guess by position")
    assert q2.score == 0 and " ".join(q2.notes).count(said) == 1
    assert all(q2.said(c).startswith(said) for c in q2.checks)
    assert "raised" not in told(result, "q2")
