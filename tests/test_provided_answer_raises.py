"""A question graded with the reference of an earlier answer (attention_scoring's q3 with the reference
`masked_softmax`, bahdanau's q2 with the reference `AdditiveAttention`): when the student's code passes that reference
arguments it cannot take, the raise is told at the student's line that made the call, as the call's doing, not as "the
grader's reference code" failing; in a public check's message and a hidden check's hint, in the grader, `grader check`
and the student kit alike. Only a raise in the reference that no line of the student's called stays "in the grader's
reference code"."""

from __future__ import annotations

import linecache
import re
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from grader.check import load_assignment
from grader.discover import Submission
from grader.kit.build import build_kit
from grader.kit.bundle import KIT_FOLDER
from grader.kit.runner import Kit, load_kit, run_kit
from grader.pipeline.self_check import public_only
from grader.results import ERROR, HIDDEN, PUBLIC, CheckResult, SubmissionResult

from .conftest import SUBMISSIONS, write
from .warm_workers import grade_one

# A right masked_softmax, and a DotProductAttention that flattens the scores to one row per (example, query) before
# calling it: 1-D valid_lens are then repeated once per key, not per query, and the reference fails on the sizes.
FLATTENED_SCORES = """
    import math

    import torch
    from torch import nn


    def masked_softmax(X, valid_lens):
        if valid_lens is None:
            return torch.softmax(X, dim=-1)
        shape = X.shape
        lens = torch.repeat_interleave(valid_lens, shape[1]) if valid_lens.dim() == 1 else valid_lens.reshape(-1)
        rows = X.reshape(-1, shape[-1])
        keep = torch.arange(shape[-1])[None, :] < lens[:, None]
        return torch.softmax(rows.masked_fill(~keep, -1e6).reshape(shape), dim=-1)


    class DotProductAttention(nn.Module):
        def __init__(self, dropout):
            super().__init__()
            self.dropout = nn.Dropout(dropout)

        def forward(self, queries, keys, values, valid_lens=None):
            scores = queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])
            weights = masked_softmax(scores.reshape(-1, scores.shape[-1]), valid_lens)
            self.attention_weights = weights.reshape(scores.shape)
            return self.dropout(self.attention_weights) @ values
    """
FLATTENED_CALL = "weights = masked_softmax(scores.reshape(-1, scores.shape[-1]), valid_lens)"
# bahdanau's model solution, with heads given the keys transposed.
BAHDANAU = (SUBMISSIONS / "bahdanau_attention" / "reference_style.py").read_text(encoding="utf-8")
HEADS_CALL = "sums, weights = zip(*[head(query, key, value) for head in self.heads])"
TRANSPOSED_KEYS_CALL = HEADS_CALL.replace("key,", "key.T,")


def through(name: str) -> str:
    return f"the error came from your call into `{name}`, which the grader provides in place of yours for this question"


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def graded(folder: Path, assignment: Any, source: str, student: str = "student") -> SubmissionResult:
    path = write(folder, f"{student}.py", source)
    return grade_one(submission=Submission(student, path, "python", datetime.now(UTC)), assignment=assignment,
                     root=folder)


def in_kernel(kit: Kit, source: str) -> SubmissionResult:
    """The kit in the student's kernel, their file's lines cached under its name as a kernel caches a cell's."""
    source = textwrap.dedent(source).lstrip()
    linecache.cache["student.py"] = (len(source), None, source.splitlines(keepends=True), "student.py")
    namespace: dict[str, Any] = {"__name__": "student"}
    exec(compile(source, "student.py", "exec"), namespace)
    return run_kit(kit, namespace)


def checks(result: SubmissionResult, question: str, visibility: str = PUBLIC) -> dict[str, CheckResult]:
    return {c.check_id: c for c in result.checks if c.question == question and c.visibility == visibility}


@pytest.fixture(scope="module")
def kits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Kit]:
    out = tmp_path_factory.mktemp("kits")
    names = ("attention_scoring", "bahdanau_attention")
    for name in names:
        build_kit(name, out_dir=out)
    return {name: load_kit(out / name / KIT_FOLDER) for name in names}


def test_a_raise_inside_the_reference_masked_softmax_is_told_at_the_students_call(
        tmp_path: Path, kits: dict[str, Kit]) -> None:
    scoring = load_assignment("attention_scoring")
    source = textwrap.dedent(FLATTENED_SCORES).lstrip()
    at = line_of(source, FLATTENED_CALL)
    result = graded(tmp_path / "graded", scoring, FLATTENED_SCORES)
    public = checks(result, "q3")
    raised = [c for c in public.values() if c.status == ERROR]
    assert {c.check_id for c in raised} >= {"q3.toy_example", "q3.toy_weights"}, public
    told = f"(line {at}, in forward: `{FLATTENED_CALL}`; {through('masked_softmax')})"
    for check in raised:
        assert check.message.startswith("DotProductAttention.forward raised RuntimeError: The size of tensor a "), \
            check.message
        assert told in check.message, check.message
        assert "reference code" not in check.message

    # A hidden check: the type, the student's line (the grader's copy) and the sizes; the call's name, as above.
    hidden = checks(result, "q3", HIDDEN)["q3.random_1d"]
    assert hidden.status == ERROR
    assert re.fullmatch(rf"your code raised RuntimeError \(line {at}: `{re.escape(FLATTENED_CALL)}`; "
                        rf"{re.escape(through('masked_softmax'))}\) with the sizes batch \d+, queries \d+, keys \d+, "
                        r"features \d+, value size \d+", hidden.message), hidden.message

    # `grader check` and the kit say the very same.
    checked = graded(tmp_path / "checked", public_only(scoring), FLATTENED_SCORES, student="other")
    kit = in_kernel(kits["attention_scoring"], FLATTENED_SCORES)
    for check_id, check in public.items():
        assert checks(checked, "q3")[check_id].message == checks(kit, "q3")[check_id].message == check.message, \
            check_id


def test_a_raise_inside_the_reference_module_is_told_at_the_students_call_into_it(
        tmp_path: Path, kits: dict[str, Kit]) -> None:
    """The reference AdditiveAttention's forward, entered through nn.Module's __call__ from the student's head(...)."""
    assert HEADS_CALL in BAHDANAU
    source = BAHDANAU.replace(HEADS_CALL, TRANSPOSED_KEYS_CALL)
    result = graded(tmp_path, load_assignment("bahdanau_attention"), source)
    public = checks(result, "q2")
    at = line_of(source, TRANSPOSED_KEYS_CALL)
    told = f"(line {at}, in <listcomp>: `{TRANSPOSED_KEYS_CALL}`; {through('AdditiveAttention')})"
    raised = [c for c in public.values() if c.status == ERROR]
    assert raised and all(told in c.message and "reference code" not in c.message for c in raised), public
    hidden = checks(result, "q2", HIDDEN)["q2.random"]
    assert hidden.message.startswith(f"your code raised RuntimeError (line {at}: `{TRANSPOSED_KEYS_CALL}`; "
                                     f"{through('AdditiveAttention')}) with the sizes "), hidden.message

    kit = checks(in_kernel(kits["bahdanau_attention"], source), "q2")
    assert {i: c.message for i, c in kit.items()} == {i: c.message for i, c in public.items()}


def test_a_raise_in_the_reference_that_no_line_of_the_students_called_is_the_graders_reference_code(
        tmp_path: Path) -> None:
    """bahdanau's q3 builds the reference AdditiveAttention itself and passes it to the student's function: when the
    student's code has broken what the reference needs, the reference raises with no line of theirs on the way."""
    result = graded(tmp_path, load_assignment("bahdanau_attention"), """
        import torch
        from torch import nn


        def chunked_additive_attention(attention, query, key, value, chunk_size):
            return attention(query, key, value)


        nn.Linear = None
        """)
    q3 = next(q for q in result.questions if q.id == "q3")
    assert any(re.fullmatch(r"Not graded: AdditiveAttention\(input_dim=\d+, hidden_dim=\d+\) raised TypeError: "
                            r"'NoneType' object is not callable \(in the grader's reference code\)\.", note)
               for note in q3.notes), q3.notes
