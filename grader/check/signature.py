"""How the arguments a check constructs a student's class with meet the signature the student wrote.

The assignment names the constructor's arguments (``AdditiveAttention(num_hiddens, dropout)``); students rename them
(``d_hid``, ``hidden_dim``, ``dropout_rate``). The rule, the same for everyone, matches each argument to one parameter
by what the names say, never by position alone:

1. the parameter of the same name (an optional argument, ``key_size``, so or by the size rule below);
2. the same name up to case and underscores (``numHiddens``), or an alias the question lists for it;
3. the same role, told by the words of the names (``ROLE_WORDS``: ``d_hid`` and ``hidden_size`` are hidden sizes,
   ``p_drop`` and ``dropout_rate`` dropout, ``in_features`` an input size, ``d_q`` a query size), one parameter
   for one argument; a size by the size rule below, and anything else never to a name that says a size;
4. a generic size (``dim``, ``units``, ``d_model``) for a generic size, one for one;
5. the last argument left to the one parameter left that needs a value (or the only one left), unless that
   parameter's name says another role, or says a size and the argument is none (a dropout rate never goes to ``dim``).

Sizes, required or optional, follow one rule (``size_role``): a size of the queries, keys or values (``query_size``)
goes to the one parameter whose name says that role and a size, and no other role: ``q_size``, ``d_q``, ``dq``,
``query_dim``, ``dim_q``, ``queries_dim``, ``n_query``, ``qdim``, ``qsize``, ``query_features``, ``q_in_features``,
and the key's and value's forms alike. A bare ``q`` or ``queries`` takes a size only where the assignment passes it
(a constructor needs it, and can mean nothing else by it), never an offered one; ``num_keys`` counts the keys and
``query_len`` is a length, so neither gets a size. A hidden, input or head size also goes to a name that says its
role alone (``hid``, ``heads``). An optional argument (``key_size``, a size a correct answer may take or not, as an
older edition's explicit-size constructor does) goes to the parameter of its name or by that rule, in any order, and
else nowhere.

Arguments still unmatched go into ``**kwargs`` by their own names when the signature takes them and needs nothing
else; otherwise the signature cannot be matched, which the check reports once for the question as such ("X takes
(d_model, max_len=5000, drop=0.1); the assignment passes num_hiddens, dropout: could not match ..."), never as the
student's code raising and never by a guess that puts a dropout rate where a length goes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Words that say what a constructor argument is, each set one role (grader/check/binding.py has the same idea for
# parameters): `hidden_dim`, `d_hid` and `num_hiddens` are all a hidden size. A call's parameters are told by the same
# words (grader/check/call_order.py): `k`, `key` and `keys` are the keys, `valid_lens` and `lengths` the lengths.
ROLE_WORDS: dict[str, frozenset[str]] = {
    "hidden": frozenset({"hidden", "hiddens", "hid"}),
    "input": frozenset({"in", "input", "inputs", "inp"}),
    "query": frozenset({"q", "query", "queries", "qry"}),
    "key": frozenset({"k", "key", "keys"}),
    "value": frozenset({"v", "value", "values", "val"}),
    "dropout": frozenset({"dropout", "drop", "p", "rate", "prob"}),
    "heads": frozenset({"heads", "head", "nhead", "nheads"}),
    "length": frozenset({"len", "lens", "length", "lengths", "maxlen", "max", "positions"}),
    "scale": frozenset({"scale", "scaled", "scaling"}),
    "causal": frozenset({"causal", "future", "autoregressive"}),
    "bias": frozenset({"bias"}),
}
# Words of a size that says no more than that (Keras's `units`, a transformer's `d_model`).
GENERIC_SIZE = frozenset({"dim", "dims", "size", "d", "model", "units", "features", "width", "embed", "emb"})
# Words that make a name a size, with a role's word beside them (`n_query`, `q_sz`).
SIZE_WORDS = GENERIC_SIZE | {"n", "num", "number", "sz"}
# With a plural, these count rather than measure: `num_keys` is how many keys there are, not how wide one is.
COUNT_WORDS = frozenset({"n", "num", "number"})
COUNTED = frozenset({"queries", "keys", "values"})
# Roles whose bare word names a tensor (`q`, `keys`): a size of theirs needs a size word beside the role's.
TENSOR_ROLES = frozenset({"query", "key", "value"})
# Roles that are no size: a name that says one of them (`query_len`, `p`, `use_scale`) never takes a size.
NOT_SIZES = frozenset({"dropout", "length", "scale", "causal", "bias"})
# A role's letter or word run together with a size word, one token that is two words: nn.MultiheadAttention's `kdim`,
# `dq`, `qsize`, `querydim`, `indim`; and roles' letters run together (`qk`, `qkv`), which name each of the roles, so
# that `d_qk` reads as a size of two roles, no one's to take by itself.
_RUN_TOGETHER = re.compile(r"(d|dim)(q|k|v)|(q|k|v)(q|k|v)(q|k|v)?"
                           r"|(q|k|v|qry|query|queries|key|keys|values?|val|in|inp|input|hid|hidden)(dims?|size|sz)")

POSITIONAL_KINDS = ("positional", "either")


@dataclass(frozen=True)
class Parameter:
    name: str
    kind: str  # "positional", "either", "*args", "keyword", "**kwargs" (inspect's kinds)
    has_default: bool
    default: str | None = None  # the default as the signature shows it (repr), where there is one


@dataclass(frozen=True)
class CallPlan:
    args: tuple[Any, ...]  # for positional-only parameters
    kwargs: dict[str, Any]
    renamed: tuple[tuple[str, str], ...] = ()  # (the assignment's name, the student's) for arguments matched otherwise
    problem: str = ""  # why the arguments could not be matched; then nothing else is set
    unmatched: tuple[str, ...] = ()  # the assignment's arguments that found no parameter


def plan_call(signature: Sequence[Parameter] | None, wanted: Mapping[str, Any],
              optional: Mapping[str, Any], aliases: Mapping[str, Sequence[str]] | None = None) -> CallPlan:
    """``wanted``: the arguments in the assignment's order; ``optional``: passed only where the signature names them
    or a parameter's name says their role and a size (``**kwargs`` does not count: in a module it usually goes on to
    ``nn.Module.__init__``, which takes none); ``aliases``: other names the question accepts for an argument."""
    if signature is None:  # a signature Python cannot read (a C extension): call as the assignment says
        return CallPlan((), dict(wanted))
    named = {p.name for p in signature if p.kind in ("either", "keyword")}
    kwargs = {k: v for k, v in optional.items() if k in named}
    unmatched = [k for k in wanted if k not in named]
    kwargs.update({k: v for k, v in wanted.items() if k in named})
    free = [p for p in signature if p.kind in (*POSITIONAL_KINDS, "keyword") and p.name not in kwargs]
    asked = {role for k in unmatched for role in roles(k)}  # a role an argument of the call has is left to it
    sizes = _sizes_by_role([k for k in optional if k not in named and not roles(k) & asked], free)
    free = [p for p in free if p.name not in sizes.values()]
    matched = _match(unmatched, free, aliases or {})
    left = [k for k in unmatched if k not in matched]
    still_required = [p for p in free if not p.has_default and p.name not in matched.values()]
    if left and any(p.kind == "**kwargs" for p in signature) and not still_required:
        kwargs.update({k: wanted[k] for k in left})  # into **kwargs by the assignment's own names
        left = []
    if left:
        return CallPlan((), kwargs, unmatched=tuple(left), problem=f"could not match {_join(left)}")
    values = {**optional, **wanted}
    placed = {**matched, **sizes}  # the assignment's argument -> the student's parameter, by what the names say
    # Positional-only parameters take their values in the signature's order, from its first one on.
    positional = [p.name for p in signature if p.kind == "positional"]
    args: list[Any] = []
    by_parameter = {student: ours for ours, student in placed.items()}
    for name in positional:
        if name in by_parameter:
            if len(args) < positional.index(name):
                return CallPlan((), kwargs, unmatched=(by_parameter[name],),
                                problem=f"could not pass {by_parameter[name]} to `{name}`, a positional-only "
                                        "parameter after one the assignment does not give")
            args.append(values[by_parameter[name]])
    kwargs.update({student: values[ours] for ours, student in placed.items() if student not in positional})
    renamed = tuple((ours, matched[ours]) for ours in unmatched if ours in matched)
    return _unfilled(signature, CallPlan(tuple(args), kwargs, renamed + tuple(sizes.items())))


def _unfilled(signature: Sequence[Parameter], plan: CallPlan) -> CallPlan:
    """The plan, or its problem when a parameter that needs a value would get none: the call would raise a
    TypeError that is the grader's failure to match, not the student's code failing."""
    given = len(plan.args)
    positional = [p.name for p in signature if p.kind == "positional"]
    missing = [p.name for p in signature if p.kind in (*POSITIONAL_KINDS, "keyword") and not p.has_default
               and p.name not in plan.kwargs and not (p.name in positional and positional.index(p.name) < given)]
    if not missing:
        return plan
    return CallPlan((), plan.kwargs, problem=f"nothing it passes is for {_join([f'`{m}`' for m in missing])}")


def words(name: str) -> set[str]:
    """'queryProj2' -> {'query', 'proj'}, 'kdim' -> {'k', 'dim'}: the words of a name."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    said: set[str] = set()
    for token in (t.lower() for t in re.split(r"[^A-Za-z]+", spaced) if t):
        run = _RUN_TOGETHER.fullmatch(token)
        said.update(w for w in run.groups() if w) if run else said.add(token)
    return said


def roles(name: str) -> frozenset[str]:
    """The roles the words of ``name`` say (``ROLE_WORDS``): {'query'} for ``q``, ``queries`` and ``query_size``."""
    said = words(name)
    return frozenset(role for role, role_words in ROLE_WORDS.items() if said & role_words)



def says_size(name: str) -> bool:
    """``d_q``, ``query_dim``, ``n_query``, ``kdim``: a size, of what its other words say."""
    return bool(words(name) & SIZE_WORDS)


def size_role(name: str) -> str | None:
    """The one role whose size ``name`` says: 'query' for ``q_size``, ``d_q``, ``dq``, ``query_dim`` and
    ``q_in_features``, 'hidden' for ``num_hiddens``; None for a name that says no size (``queries``), a count
    (``num_keys``), no role (``dim``), more than one (``qk_dim``), or one that is no size (``query_len``)."""
    said = words(name)
    if not said & SIZE_WORDS or (said & COUNTED and not said & SIZE_WORDS - COUNT_WORDS):
        return None
    told = roles(name)
    if len(told) > 1:
        told -= {"input"}  # `q_in_features`: the queries' input size
    if len(told) != 1 or told & NOT_SIZES:
        return None
    return next(iter(told))


def _takes_size(ours: str, theirs: str) -> bool:
    """Whether the parameter ``theirs`` is the size argument ``ours`` by role (see the module's docstring)."""
    role = size_role(ours)
    if role is None:
        return False
    return size_role(theirs) == role or (role not in TENSOR_ROLES and roles(theirs) == {role})


def _same_role(ours: str, theirs: str) -> bool:
    """Step 3: a size by the size rule; any other argument (a dropout rate, a flag) to a name of its role that says no
    size, so that a rate never lands in a size."""
    role = size_role(ours)
    if role is not None:
        # A size the assignment passes, which the constructor needs: a name that says its role alone (`q`, `key`)
        # can be nothing else in a constructor, so it takes it too; a count (`num_keys`) or a length never does.
        return _takes_size(ours, theirs) or (roles(theirs) == {role} and not words(theirs) & COUNT_WORDS)
    return bool(roles(ours) & roles(theirs)) and not says_size(theirs)


def _sizes_by_role(optional: Sequence[str], params: Sequence[Parameter]) -> dict[str, str]:
    """Optional size arguments -> the one parameter each that takes it by the size rule, one for one."""
    options = {ours: [p.name for p in params if _takes_size(ours, p.name)] for ours in optional}
    claimed = [name for names in options.values() for name in names]
    return {ours: names[0] for ours, names in options.items() if len(names) == 1 and claimed.count(names[0]) == 1}


def _generic(name: str) -> bool:
    return not roles(name) and bool(words(name) & GENERIC_SIZE)


def _key(name: str) -> str:
    return name.casefold().replace("_", "")


def _match(unmatched: Sequence[str], free: Sequence[Parameter],
           aliases: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """The assignment's arguments -> the student's parameters, step by step (see the module's docstring); a step
    matches an argument only where it finds one parameter for it that no other argument also finds."""
    matched: dict[str, str] = {}

    def open_params() -> list[Parameter]:
        return [p for p in free if p.name not in matched.values()]

    def step(fits: Any) -> None:
        options = {ours: [p.name for p in open_params() if fits(ours, p)] for ours in unmatched if ours not in matched}
        claimed = [name for names in options.values() for name in names]
        for ours, names in options.items():
            if len(names) == 1 and claimed.count(names[0]) == 1:
                matched[ours] = names[0]

    step(lambda ours, p: _key(p.name) == _key(ours) or _key(p.name) in {_key(a) for a in aliases.get(ours, ())})
    step(lambda ours, p: _same_role(ours, p.name))
    step(lambda ours, p: _generic(ours) and _generic(p.name))
    left = [ours for ours in unmatched if ours not in matched]
    if len(left) == 1:
        remaining = open_params()
        required = [p for p in remaining if not p.has_default]
        candidates = required if required else remaining
        if len(candidates) == 1 and len(required) <= 1:
            last = candidates[0].name
            if roles(last):  # a name that says a role takes only what step 3 would give it
                fits = _same_role(left[0], last)
            else:  # one that says none takes anything but a non-size where it says a size (a dropout rate in `dim`)
                fits = says_size(left[0]) or not says_size(last)
            if fits:
                matched[left[0]] = last
    return matched


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def signature_text(signature: Sequence[Parameter] | None) -> str:
    """``d_model, max_len=5000, drop=0.1``: the signature as the student wrote it, less ``self``."""
    if signature is None:
        return "..."
    shown = []
    for p in signature:
        prefix = {"*args": "*", "**kwargs": "**"}.get(p.kind, "")
        default = f"={p.default}" if p.has_default and p.default is not None else ("=..." if p.has_default else "")
        shown.append(f"{prefix}{p.name}{default}")
    return ", ".join(shown)


def mismatch_message(class_name: str, signature: Sequence[Parameter] | None, wanted: Sequence[str],
                     plan: CallPlan) -> str:
    """Said once for the question when the arguments cannot be matched: both signatures, and what did not match."""
    return (f"{class_name} takes ({signature_text(signature)}); the assignment passes {', '.join(wanted)}: "
            f"{plan.problem}. The grader does not guess by position: name the parameters as the assignment does, "
            f"{class_name}({', '.join(wanted)})")

