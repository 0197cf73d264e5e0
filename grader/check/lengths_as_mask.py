"""Lengths used as a boolean mask: a failed check run again with a mask built from the lengths in their place.

``valid_lens`` holds each sequence's number of valid keys (``[2, 3]``). Code written for a mask
(``scores.masked_fill(~valid_lens, -1e6)``, ``scores[valid_lens == 0] = ...``, ``torch.where(valid_lens, ...)``)
raises on lengths, or masks nothing and returns wrong values. Which of those it is shows only in the code, which the
grader does not read; so the evidence is a run: the failed check is run again in the same fork, seeded as before,
with the lengths of every call that passed them (where the assignment declares a lengths parameter: ``Question.calls``)
replaced by the mask they stand for, ``arange(keys) < lengths[..., None]``. When that run passes, the cause is
named; otherwise nothing is said.

The mask's shape is what mask code is written for, which the grader cannot know either: (batch, keys) or
(batch, 1, keys) for 1-D lengths, or (batch, queries, keys), True for the valid keys or for the padded ones, of bools
or, where code does arithmetic on it (``X * mask + (1 - mask) * -1e6``, which torch refuses on bools), of 0/1 floats.
The number of keys (and of queries) is read from an axis of another argument of the call, each size that could be it
tried in turn: the axis as long as the check's keys (``ctx.name_sizes``, ``ctx.sizes``) first, then the forms most
mask code is written for. Each is a run of the check, so the search is bounded, and made only where the failure comes
from the lengths: a first run passes None in their place (a value the assignment's callables take), and the search
goes on only if the code then runs where it raised, or answers as it did with the lengths (code that tests lengths as
a mask, ``valid_lens == 0``, masks nothing either way). Code written for a mask often has no None branch, and then
raises on None whatever its mistake: raising as it did with the lengths (the same exception at the same line) shows
the failure comes from elsewhere, but raising otherwise (``mask.shape`` of None, where the lengths failed its ``assert
mask.shape == X.shape``), or after answering wrongly with the lengths, says nothing either way. Such a check is
searched, and a search of it that finds nothing counts as a run that shows the failure comes from elsewhere. After
``NEGATIVE_PROBES`` of those, a question's later checks are not searched. At most ``RUNS_PER_QUESTION`` runs in a
question; a later check tries the form that passed an earlier one first.

Named, the cause says where: the student's line that raised on the lengths, read from the grader's copy of their code
(a hidden check may show it); otherwise the runner places it at their function.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from grader.check.context import CheckContext
from grader.check.provided import REFERENCE_FILENAME, provided_name
from grader.check.shrink import run_again
from grader.check.spec import CheckSpec
from grader.check.student import LengthsCall, Rewrite, StudentCode, place_of
from grader.errors import CallTimedOut, ConfigurationError, ProcessDied, WrongAnswer
from grader.execute.arguments import Arg
from grader.results import Diagnosis

RUNS_PER_QUESTION = 24
NEGATIVE_PROBES = 2

Source = tuple[int | str, int]  # (an argument's position or keyword, an axis of it)


@dataclass(frozen=True)
class MaskForm:
    keys: Source  # where the number of keys is read
    queries: Source | None = None  # 1-D lengths as (batch, queries, keys): where the number of queries is read
    middle: bool = False  # 1-D lengths as (batch, 1, keys)
    valid: bool = True  # True marks the valid keys (else the padded ones)
    dtype: str = "bool"  # or "float32": 1.0 and 0.0, for code that does arithmetic on the mask


@dataclass
class MaskSearch:
    """One question's search, over its checks."""

    found: MaskForm | None = None
    runs_left: int = RUNS_PER_QUESTION
    # Runs with None that show the failure does not come from the lengths, and searches that found nothing after
    # a run with None that could not tell.
    probes_left: int = NEGATIVE_PROBES


def _argument(call: LengthsCall, place: int | str) -> Any:
    if isinstance(place, int):
        return call.args[place] if place < len(call.args) else None
    return call.kwargs.get(place)


def _array(value: Any) -> np.ndarray | None:
    return value.value if isinstance(value, Arg) and value.kind in ("tensor", "ndarray") else None


def _size(call: LengthsCall, source: Source) -> int | None:
    array = _array(_argument(call, source[0]))
    return int(array.shape[source[1]]) if array is not None and source[1] < array.ndim else None


def _sources(call: LengthsCall) -> list[tuple[Source, int]]:
    """Every axis of the call's other arrays, with its size, the first of each size only; an array's first axis as
    long as the lengths' is the batch they share, taken last (so that a size it shares with another axis is read from
    that one, where a later check's draw tells them apart)."""
    lengths = _array(_argument(call, call.at))
    batch = int(lengths.shape[0]) if lengths is not None and lengths.ndim else None
    places: list[int | str] = [*range(len(call.args)), *call.kwargs]
    axes: list[tuple[Source, int]] = []
    for place in places:
        array = _array(_argument(call, place)) if place != call.at else None
        axes += [((place, axis), int(array.shape[axis])) for axis in range(array.ndim if array is not None else 0)]
    axes.sort(key=lambda item: item[0][1] == 0 and item[1] == batch)
    found: dict[int, Source] = {}
    for source, size in axes:
        found.setdefault(size, source)
    return [(source, size) for size, source in found.items()]


def candidate_forms(call: LengthsCall, sizes: Mapping[str, int] | None = None) -> Iterator[MaskForm]:
    """The forms a mask of ``call``'s lengths could take, the likelier first (polarity and dtype left to the
    caller). ``sizes``: the check's sizes by name; an axis as long as its ``keys`` (``queries``) is tried first for
    the keys (the queries)."""
    lengths = _array(_argument(call, call.at))
    if lengths is None or lengths.ndim not in (1, 2) or lengths.size == 0:
        return
    named = sizes or {}
    # Stable sorts: the order _sources gives stays among the sizes the check does not name.
    sources = sorted(_sources(call), key=lambda item: item[1] != named.get("queries"))
    keys = [source for source, size in sorted(sources, key=lambda item: item[1] != named.get("keys"))
            if size >= max(int(lengths.max()), 1)]  # not fewer than a length
    for source in keys:
        yield MaskForm(source)
        if lengths.ndim == 1:
            yield MaskForm(source, middle=True)
    if lengths.ndim == 1:  # repeated over the queries: for code that indexes the scores with it
        yield from (MaskForm(source, queries=queries) for source in keys for queries, _ in sources)


def mask_for(call: LengthsCall, form: MaskForm) -> np.ndarray | None:
    """The mask ``form`` makes of ``call``'s lengths, or None where the call has no such axis."""
    lengths = _array(_argument(call, call.at))
    keys = _size(call, form.keys)
    if lengths is None or keys is None:
        return None
    mask = np.arange(keys) < np.asarray(lengths)[..., None]
    if lengths.ndim == 1 and form.queries is not None:
        queries = _size(call, form.queries)
        if queries is None:
            return None
        mask = np.repeat(mask[:, None, :], queries, axis=1)
    elif lengths.ndim == 1 and form.middle:
        mask = mask[:, None, :]
    return mask if form.valid else ~mask


def _rewrite(form: MaskForm | None) -> Rewrite:
    """The calls' lengths as ``form``'s mask, or as None."""
    def rewrite(call: LengthsCall) -> tuple[tuple[Any, ...], dict[str, Any]]:
        mask = mask_for(call, form) if form is not None else None
        if mask is None and form is not None:
            return call.args, dict(call.kwargs)
        sent = Arg(None) if mask is None else Arg.tensor(mask.astype(form.dtype), form.dtype)
        if isinstance(call.at, int):
            return (*call.args[:call.at], sent, *call.args[call.at + 1:]), dict(call.kwargs)
        return call.args, {**call.kwargs, call.at: sent}

    return rewrite


Answers = list[tuple[str, str, tuple[bytes, ...]]]


def answers(code: StudentCode) -> Answers:
    """What the student's code answered in the run so far: each call's, method's and attribute's value."""
    return [(op, json.dumps(reply.get("value"), sort_keys=True, default=str), tuple(blobs))
            for op, reply, blobs, _ in code.replies if op in ("call", "method", "get")]


Frame = tuple[str, int, str]  # (file, line, function), as the student's process told it


def _frame(value: Any) -> Frame | None:
    try:
        return str(value[0]), int(value[1]), str(value[2])
    except (TypeError, IndexError, ValueError):
        return None


def raised_at(code: StudentCode) -> tuple[str, Frame | None] | None:
    """What the run so far first raised, and the student's frame it was raised in (their line that called a
    provided answer that raised); None when nothing raised."""
    for _, reply, _, _ in code.replies:
        if not reply.get("ok"):
            error = reply.get("error") or {}
            call = error.get("call")
            where = call.get("where") if isinstance(call, dict) else error.get("where")
            return str(error.get("type", "")), _frame(where)
    return None


def said_where(code: StudentCode, label: str, frame: Frame | None) -> str:
    """'your masked_softmax, line 30: `X = X * mask + (1 - mask) * -1e6`': the student's line, its text from the
    grader's copy of their code (never from their process, which can say anything: a hidden check shows it too);
    '' for a frame in no file of theirs the grader holds."""
    if frame is None or code.sources is None:
        return ""
    filename, line, function = frame
    if filename == REFERENCE_FILENAME or provided_name(filename):
        return ""
    lines = io.StringIO(code.sources.text(filename) or "", newline="").readlines()  # as compile() counts lines
    if not 1 <= line <= len(lines) or not lines[line - 1].strip():
        return ""
    # A forward's frame is named as the question names the callable; a helper it calls by its own name.
    name = label if label.rsplit(".", 1)[-1] == function else function
    return f"your {name}, {place_of(filename, line)}: `{lines[line - 1].strip()[:120]}`"


PASSED, FAILED, RAISED, LOST = "passed", "failed", "raised", "lost"


def run_with(check: CheckSpec, seed: int, code: StudentCode, form: MaskForm | None) -> str:
    """The check run again with the lengths as ``form``'s mask (None: as None): passed, failed (on an answer),
    raised, or lost (the process hung or died); what the code answered stays in ``code.replies``."""
    code.rewrite = _rewrite(form)
    try:
        run_again(CheckContext(student=code, seed=seed), check, seed, code)
    except WrongAnswer:
        return FAILED
    except (CallTimedOut, ProcessDied):
        return LOST
    except ConfigurationError:
        raise
    except Exception:  # the code raised on the mask, or the check cannot run with it
        return RAISED
    finally:
        code.rewrite = None
    return PASSED


def lengths_as_mask(check: CheckSpec, seed: int, code: StudentCode, search: MaskSearch, *, raised: bool,
                    deadline: float = math.inf) -> tuple[Diagnosis | None, bool]:
    """Whether the failed check (its calls still in ``code``) passes with the lengths as a mask: the diagnosis when
    it does, and whether the student's process was lost on the way (it hung or died). ``raised``: the check failed
    because the code raised; no run starts after ``deadline`` (the submission's: its time is the student's)."""
    calls = list(code.lengths_passed)
    if not calls or (search.found is None and (search.runs_left <= 0 or search.probes_left <= 0)) \
            or time.monotonic() >= deadline:
        return None, False
    sizes = dict(code.sizes)  # the failed run's, before a run again starts its own
    first_raise = raised_at(code) if raised else None
    undecided = False  # the run with None could not tell whether the failure comes from the lengths
    if search.found is None:
        failed = answers(code)
        search.runs_left -= 1
        outcome = run_with(check, seed, code, None)
        if outcome == LOST:
            return None, True
        # Raising on None says little: code with no None branch raises there whatever its mistake. Raising as it
        # did with the lengths (the same exception at the same line) says the failure is elsewhere; raising
        # otherwise, or after answering wrongly with the lengths, leaves it undecided.
        if raised:
            undecided = outcome == RAISED and raised_at(code) != first_raise
            from_lengths = outcome != RAISED or undecided
        else:
            undecided = outcome == RAISED
            from_lengths = undecided or outcome == PASSED or answers(code) == failed
        if not from_lengths:
            search.probes_left -= 1
            return None, False
    # The form that passed an earlier check first (a run not counted); then, if it does not pass this one (its sizes
    # may tell apart axes that an earlier draw did not), the others: bools first, each polarity; 0/1 floats of a
    # shape only where its bools raised.
    found = search.found
    forms = ([found] if found is not None else []) + \
        [replace(form, valid=valid) for form in candidate_forms(calls[0], sizes) for valid in (True, False)]
    skip: set[MaskForm] = set()  # the other polarity of a form the code raised on: it raises on that too
    tried: set[MaskForm] = set()
    while forms:
        form = forms.pop(0)
        if form in skip or form in tried:
            continue
        if time.monotonic() >= deadline:
            break
        if form != found or found is None or tried:
            if search.runs_left <= 0:
                break
            search.runs_left -= 1
        tried.add(form)
        outcome = run_with(check, seed, code, form)
        if outcome == LOST:
            return None, True
        if outcome == PASSED:
            search.found = form
            where = said_where(code, calls[0].label, first_raise[1]) if first_raise is not None else ""
            return _diagnosis(check, calls[0], form, where), False
        if outcome == RAISED:
            skip.add(replace(form, valid=not form.valid))
            if form.dtype == "bool":  # arithmetic on the mask (1 - mask) raises on bools: as 0/1 floats, next
                forms[:0] = [replace(form, dtype="float32"), replace(form, dtype="float32", valid=not form.valid)]
    if undecided:
        search.probes_left -= 1
    return None, False


def _diagnosis(check: CheckSpec, call: LengthsCall, form: MaskForm, where: str = "") -> Diagnosis:
    """Named as what the code takes: a mask, True for the valid keys or (PyTorch's key_padding_mask) for the
    padded ones, of bools or of 0/1 floats; ``where``: the student's line that raised on the lengths, if any."""
    name = call.parameter
    if form.dtype == "bool":
        kind = "a boolean mask" if form.valid else "a boolean mask True where a key is padding"
    else:
        kind = "a 0/1 float mask" if form.valid else "a 0/1 float mask, 1 where a key is padding"
    return Diagnosis(f"{check.question}.lengths_as_mask", f"{name} used as a mask",
                     f"Your {call.label} uses {name} as {kind} (given one, it passes this check), but {name} holds "
                     f"each sequence's number of valid keys (lengths such as [2, 3]): build the mask from it, "
                     f"torch.arange(num_keys) < {name}[..., None]", where=where)
