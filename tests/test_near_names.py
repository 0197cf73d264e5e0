"""A name the assignment asks for, missing while a near one is defined (`masked_sofmax` for `masked_softmax`): the
grader, `grader check` and the student kit each name both, and the question still gets 0 (docs/assignments.md).

The rule itself (grader/near_names.py) is tested on misspellings of every assignment's names and on names far
from them; then real submissions are graded in the real sandbox, checked by `grader check`, and checked by the kit's
runner on a namespace the submission's code filled.
"""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from grader.check import load_assignment
from grader.check.load import available_assignments
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.kit.bundle import KIT_FOLDER
from grader.kit.runner import Kit, load_kit, run_kit
from grader.kit.session import KernelCalls
from grader.near_names import name_key, near_names
from grader.pipeline.self_check import check_submission, public_only
from grader.results import SHARED_PROBLEM, SHARED_PROBLEM_NOTE, SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, TOY_CORRECT, write
from .warm_workers import grade_one

# Every name an assignment asks for, with the other names of its assignment (never offered as a near name); the toy's
# are short (`bump`, `scale`: one letter edit allowed, where a swap is one edit and not two).
SPECS = [*map(load_assignment, available_assignments()), load_assignment("toy", solutions_dir=FIXTURE_SOLUTIONS)]
ASKED = [(name, spec.withheld_names) for spec in SPECS for name in spec.withheld_names]


# ----- the rule ---------------------------------------------------------------------------------------------------
def _letter_edit(draw: st.DrawFn, name: str) -> str:
    """``name`` with one letter dropped, duplicated or swapped with the next, or an ``s`` or ``es`` added."""
    letters = [i for i, c in enumerate(name) if c != "_"]
    how = draw(st.sampled_from(["drop", "duplicate", "swap", "s", "es"]))
    if how == "s":
        return name + "s"
    if how == "es":
        return name + "es"
    i = draw(st.sampled_from(letters))
    if how == "drop":
        return name[:i] + name[i + 1:]
    if how == "duplicate":
        return name[:i] + name[i] + name[i:]
    j = next((k for k in letters if k > i), None)
    if j is None:  # the last letter: swap with the one before
        i, j = letters[-2], letters[-1]
    return name[:i] + name[j] + name[i + 1:j] + name[i] + name[j + 1:]


@st.composite
def misspellings(draw: st.DrawFn) -> tuple[str, tuple[str, ...], str]:
    asked, taken = draw(st.sampled_from(ASKED))
    name = _letter_edit(draw, asked) if draw(st.booleans()) else asked
    # Case changed letter by letter, and underscores added or removed anywhere.
    name = "".join(c.swapcase() if draw(st.booleans()) else c for c in name)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(1, len(name)))
        name = name[:at] + "_" + name[at:]
    underscores = [i for i, c in enumerate(name) if c == "_"]
    if underscores and draw(st.booleans()):
        at = draw(st.sampled_from(underscores))
        name = name[:at] + name[at + 1:]
    return asked, taken, name


TOY_NAMES = ("scale", "twice_scaled", "bump")


@given(misspellings())
@settings(max_examples=300)
@example(("scale", TOY_NAMES, "sclae"))  # a swap, one edit where one is allowed
@example(("bump", TOY_NAMES, "Bumpes"))  # a plural, two letters where one edit is allowed
@example(("masked_softmax", TOY_NAMES, "Masked__SofMax"))
def test_a_misspelt_name_is_near_the_name_asked_for(case: tuple[str, tuple[str, ...], str]) -> None:
    asked, taken, name = case
    assume(name != asked and name not in taken and name.isidentifier())
    others = [o for o in taken if o != asked]
    assert near_names(asked, [name, "unrelated_helper", *others], taken=taken) == (name,)


def _levenshtein(a: str, b: str) -> int:
    """Plain edit distance (drops, additions, replacements), independent of the rule's own."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row, last = [i], row
        for j, y in enumerate(b, 1):
            row.append(min(last[j] + 1, row[j - 1] + 1, last[j - 1] + (x != y)))
    return row[-1]


@given(st.sampled_from(ASKED), st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,24}", fullmatch=True))
def test_a_name_far_from_the_name_asked_for_is_not_near(case: tuple[str, tuple[str, ...]], name: str) -> None:
    asked, taken = case
    # Five plain edits apart are at least three with swaps (a swap is two plain edits): beyond any name's allowance,
    # and no plural (one or two letters added).
    assume(_levenshtein(name_key(asked), name_key(name)) >= 5)
    assert near_names(asked, [name], taken=taken) == ()


def test_names_students_write_beside_the_answers_are_not_near_them() -> None:
    helpers = ["softmax", "sequence_mask", "attention_weights", "valid_lens", "forward", "X", "d2l", "scores",
               "DotProdAttention", "PositionalEncoding", "Attention", "twice_scaled", "main", "test_masked_softmax"]
    for asked, taken in ASKED:
        assert near_names(asked, helpers, taken=taken) == (), asked
    assert near_names("scale", ["scale", "twice_scaled"]) == ()  # the name itself is not "near"
    # Another question's answer is never suggested: it is that question's.
    assert near_names("AdditiveAttention", ["MultiHeadAdditiveAttention", "AdditiveAttentions"],
                      taken=("AdditiveAttentions",)) == ()
    # Nearest first: case and underscores before a letter edit; ties alphabetical.
    assert near_names("masked_softmax", ["masked_sofmax", "maskedSoftmax", "masked_softmx"]) == (
        "maskedSoftmax", "masked_sofmax", "masked_softmx")


def test_only_what_the_students_code_defined_is_offered() -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(textwrap.dedent("""
        import torch
        from torch.nn.functional import softmax
        from math import pi
        def masked_sofmax(X, valid_lens):
            return softmax(X, dim=-1)
        class Attention(torch.nn.Module):
            pass
        layer = Attention()
        linear = torch.nn.Linear(2, 2)
        scores = [1, 2]
        _i3 = "masked_sofmax(X, None)"
        Out = {}
        class Raising:
            def __getattribute__(self, name):
                raise RuntimeError(name)
            def __call__(self):
                pass
        hostile = Raising()
        globals()["not a name"] = globals()["n" * 101] = 1
    """), namespace)
    reply = KernelCalls(namespace).describe("masked_softmax")
    assert reply == {"exists": False, "defined": ["Attention", "Raising", "layer", "masked_sofmax", "pi", "scores"]}


# ----- the three paths, on the toy assignment --------------------------------------------------------------------
@pytest.fixture(scope="module")
def toy() -> Assignment:
    return load_assignment("toy", solutions_dir=FIXTURE_SOLUTIONS)


# `scale` (q1: a public and a hidden check) written `Scale`, `twice_scaled` (q2) written `twice_scaledd`.
TOY_MISSPELT = TOY_CORRECT.replace("scale(", "Scale(").replace("def twice_scaled", "def twice_scaledd")


def grade(tmp_path: Path, assignment: Assignment, source: str) -> SubmissionResult:
    path = write(tmp_path, "student.py", source)
    submission = Submission(path.stem, path, "python", datetime.now(UTC))
    return grade_one(submission=submission, assignment=assignment, root=tmp_path)


def kit_result(kit: Kit, source: str) -> SubmissionResult:
    """The kit's runner on a kernel's namespace after running ``source`` (as `check()` in the notebook)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "<cell 1>", "exec"), namespace)
    return run_kit(kit, namespace)


def messages(result: SubmissionResult, question: str) -> list[str]:
    """What the student reads of ``question``: its notes and each check's message."""
    found = next(q for q in result.questions if q.id == question)
    return [*found.notes, *(c.message for c in found.checks)]


SCALE = "`scale` is not defined in your submission: you defined `Scale`; the assignment asks for `scale` (rename it)"
TWICE = ("`twice_scaled` is not defined in your submission: you defined `twice_scaledd`; the assignment asks for "
         "`twice_scaled` (rename it)")


def test_the_grader_names_both_names_and_grades_the_question_as_missing(tmp_path: Path, toy: Assignment) -> None:
    assert "def Scale(" in TOY_MISSPELT and "def twice_scaledd(" in TOY_MISSPELT
    result = grade(tmp_path, toy, TOY_MISSPELT)
    assert {q.id: q.score for q in result.questions} == {"q1": 0, "q2": 0, "q3": 1}  # not graded in its place
    q1 = next(q for q in result.questions if q.id == "q1")
    # Said once for the question, the public check's message (a hidden check's hint names both names too).
    assert q1.notes == (f"{SHARED_PROBLEM_NOTE}{SCALE}.",)
    assert [c.message for c in q1.checks] == [SHARED_PROBLEM, SHARED_PROBLEM]
    assert TWICE in messages(result, "q2")
    hidden = next(c for c in result.checks if c.check_id == "q1.second")
    assert hidden.for_student().message == SHARED_PROBLEM
    assert toy.checks[1].visibility != "public"
    assert grade_hint(tmp_path, toy) == "`scale` is not defined: you defined `Scale`; rename it `scale`"


def grade_hint(tmp_path: Path, toy: Assignment) -> str:
    """The hint of the hidden check alone (not grouped with the public one), as a hidden check shows it."""
    hidden_only = public_only(toy)
    hidden_only.checks = [c for c in toy.checks if c.id == "q1.second"]
    hidden_only.questions = tuple(q for q in toy.questions if q.id == "q1")
    return grade(tmp_path / "hidden", hidden_only, TOY_MISSPELT).checks[0].message


def test_grader_check_names_both_names(tmp_path: Path) -> None:
    path = write(tmp_path, "student.py", TOY_MISSPELT)
    checked = check_submission(path=path, out_dir=tmp_path / "out", assignment="toy", solutions_dir=FIXTURE_SOLUTIONS)
    assert not checked.passed
    assert SCALE in messages(checked.result, "q1")
    assert TWICE in messages(checked.result, "q2")
    assert SCALE in checked.report.read_text(encoding="utf-8")  # the student's page


def test_the_kit_names_both_names(tmp_path: Path, toy: Assignment) -> None:
    kit = Kit(folder=tmp_path, name="toy", title=toy.title, student="kit", assignment=public_only(toy), unchecked=(),
              has_hidden=True, grader_only={}, provided=(), standins={})
    result = kit_result(kit, TOY_MISSPELT)
    assert SCALE in messages(result, "q1")
    assert TWICE in messages(result, "q2")
    assert [q.score for q in result.questions[:2]] == [0, 0]


# ----- one real assignment: masked_softmax written masked_sofmax ---------------------------------------------------
MISSPELT_SOFTMAX = '''\
import torch
from torch import nn


def masked_sofmax(X, valid_lens):
    """The book's masked softmax, under a misspelt name."""
    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)
'''
SOFTMAX = ("`masked_softmax` is not defined in your submission: you defined `masked_sofmax`; the assignment asks for "
           "`masked_softmax` (rename it)")


@pytest.fixture(scope="module")
def scoring_kit(tmp_path_factory: pytest.TempPathFactory) -> Kit:
    from grader.kit.build import build_kit

    return load_kit(build_kit("attention_scoring", out_dir=tmp_path_factory.mktemp("kit")) / KIT_FOLDER)


def test_masked_sofmax_is_named_by_the_grader_grader_check_and_the_kit(tmp_path: Path, scoring_kit: Kit) -> None:
    graded = grade(tmp_path / "graded", load_assignment("attention_scoring"), MISSPELT_SOFTMAX)
    q1 = next(q for q in graded.questions if q.id == "q1")
    assert q1.score == 0
    assert q1.notes == (f"{SHARED_PROBLEM_NOTE}{SOFTMAX}.",)
    # Every check of q1, hidden ones too, points to that note.
    assert {c.message for c in q1.checks} == {SHARED_PROBLEM}
    # A name with no near one is told as before.
    assert any("`AdditiveAttention` is not defined in your submission." in m for m in messages(graded, "q2"))

    # `grader check` tells the assignment from the near name when the file defines none of the names themselves.
    path = write(tmp_path / "checked", "mywork.py", MISSPELT_SOFTMAX)
    checked = check_submission(path=path, out_dir=tmp_path / "out")
    assert checked.result.assignment == "attention_scoring"
    assert any(SOFTMAX in m for m in messages(checked.result, "q1"))

    kit = kit_result(scoring_kit, MISSPELT_SOFTMAX)
    assert any(SOFTMAX in m for m in messages(kit, "q1"))
    assert next(q for q in kit.questions if q.id == "q1").score == 0

