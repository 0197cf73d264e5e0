"""Code excerpts and tracebacks of a .py submission name the student's own line and its text.

A .py runs as one code unit per top-level statement, all under the file's name: a traceback's "line N" must be read
from the whole file, not from whichever unit ran last. Both submissions below are graded through the real pipeline
(grade_class), and the student's and the instructor's pages are read back.
"""

from __future__ import annotations

import html
import re

import pytest

from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class
from grader.results import SubmissionResult

# Many top-level statements; the errors are raised far below the start of their statements: in a helper that
# AdditiveAttention.forward calls, and in DotProductAttention.forward itself. Form feeds (PEP 8's page breaks), one
# between statements and one inside a class, are no line breaks to Python, though str.splitlines splits at them.
RAISES_IN_CHECKS = '''
"""Attention scoring, with helpers of my own."""
import math

import torch
import torch.nn.functional as F
from torch import nn

SCALE = 1.0
EPSILON = 1e-9


def masked_softmax(X, valid_lens):
    if valid_lens is None:
        return F.softmax(X, dim=-1)
    positions = torch.arange(X.shape[-1], device=X.device)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None]
    mask = positions[None, None, :] < valid_lens[:, :, None]
    return F.softmax(X.masked_fill(~mask, -1e6), dim=-1)


def broadcast_features(q, k):
    """The projected queries and keys, added pairwise."""
    total = q[:, :, None, :] + k[:, None, :, :]
    total = total * SCALE
    if total.dim() == 4:
        raise ValueError("features helper gave up on " + str(tuple(total.shape)))
    return torch.tanh(total)


class AdditiveAttention(nn.Module):
    """a(q, k) = w_v^T tanh(W_q q + W_k k)."""

    def __init__(self, num_hiddens, dropout, **kwargs):
        super(AdditiveAttention, self).__init__(**kwargs)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)
\f
    def forward(self, queries, keys, values, valid_lens):
        queries = self.W_q(queries)
        keys = self.W_k(keys)
        features = broadcast_features(queries, keys)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)

\f

class DotProductAttention(nn.Module):
    """a(q, k) = q^T k / sqrt(d)."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        if scores.numel() >= 0:
            raise RuntimeError("dot product gave up at size " + str(d))
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


print("loaded the classes")
COUNT = 3


class BilinearAttention(nn.Module):
    def __init__(self, query_size, key_size, dropout):
        super().__init__()
        self.W = nn.Parameter(torch.randn(query_size, key_size) * 0.01)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = queries @ self.W @ keys.transpose(1, 2)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


ANSWER_EX1 = """
The weights differ once the keys differ.
"""

ANSWER_EX3 = """
No: a sum cannot make a scalar score that depends on the query.
"""
'''

# A top-level statement after many others raises while loading, in a function an earlier statement defined.
RAISES_WHILE_LOADING = '''
import torch
from torch import nn

SIZES = [2, 3, 4]


def checked_sizes():
    """The sizes, checked."""
    sizes = list(SIZES)
    sizes.append(5)
    return sizes[10]


def masked_softmax(X, valid_lens):
    return nn.functional.softmax(X, dim=-1)


class Unused:
    pass


LIMIT = 10
NAMES = ["a", "b"]
CHECKED = checked_sizes()
AFTER = 1
'''


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> ClassRun:
    folder = tmp_path_factory.mktemp("excerpts")
    (folder / "submissions").mkdir()
    for name, source in ("deep.py", RAISES_IN_CHECKS), ("loading.py", RAISES_WHILE_LOADING):
        (folder / "submissions" / name).write_text(source.lstrip(), encoding="utf-8")  # dedent would drop the \f
    return grade_class(RunRequest(assignment="attention_scoring", submissions_dir=folder / "submissions",
                                  out_dir=folder / "out"), RunOptions(jobs=2))


def result_of(run: ClassRun, student: str) -> SubmissionResult:
    return next(r for r in run.results if r.student == student)


def line_of(source: str, text: str) -> int:
    """The number of the one line of the submission (as written to disk) that holds ``text``."""
    lines = source.lstrip().split("\n")
    found = [number for number, line in enumerate(lines, 1) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def frame(filename: str, lineno: int, function: str, text: str) -> str:
    """A traceback's frame, as Python formats it."""
    return f'File "{filename}", line {lineno}, in {function}\n    {text}'


def holds(traceback: str, *frames: str) -> bool:
    """Whether the traceback holds these frames, each with its whole line (a traceback is stripped at its end)."""
    return all(f"{f}\n" in f"{traceback}\n" for f in frames)


def page_text(run: ClassRun, student: str, name: str) -> str:
    """A page as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", (run.out_dir / "students" / student / name).read_text("utf-8")))


HELPER_RAISE = 'raise ValueError("features helper gave up on " + str(tuple(total.shape)))'
HELPER_CALL = "features = broadcast_features(queries, keys)"
DOT_RAISE = 'raise RuntimeError("dot product gave up at size " + str(d))'


def test_an_error_in_a_helper_called_from_a_method_names_the_students_line(graded: ClassRun) -> None:
    result = result_of(graded, "deep")
    helper, call = line_of(RAISES_IN_CHECKS, HELPER_RAISE), line_of(RAISES_IN_CHECKS, HELPER_CALL)
    toy = next(c for c in result.checks if c.check_id == "q2.toy_example")
    assert toy.status == "error"
    assert toy.message.endswith(f"(line {helper}, in broadcast_features: `{HELPER_RAISE}`)"), toy.message
    # The instructor's traceback: each of the student's frames with its own line's text.
    assert holds(toy.detail, frame("deep.py", call, "forward", HELPER_CALL)), toy.detail
    assert holds(toy.detail, frame("deep.py", helper, "broadcast_features", HELPER_RAISE)), toy.detail
    # A hidden check tells the student the type, their line and the sizes it drew, never the message (the code
    # writes it from the hidden inputs); the instructor gets the same traceback.
    hidden = next(c for c in result.checks if c.check_id == "q2.random_1d")
    assert re.fullmatch(rf"your code raised ValueError \(line {helper}: `{re.escape(HELPER_RAISE)}`\)"
                        r"( with the sizes [a-z ]+ \d+(, [a-z ]+ \d+)*)?", hidden.message), hidden.message
    assert holds(hidden.detail, frame("deep.py", helper, "broadcast_features", HELPER_RAISE))
    student, instructor = page_text(graded, "deep", "report.html"), page_text(graded, "deep", "instructor.html")
    assert f"(line {helper}, in broadcast_features: `{HELPER_RAISE}`)" in student
    assert frame("deep.py", call, "forward", HELPER_CALL) in instructor


def test_an_error_raised_in_a_method_names_the_students_line(graded: ClassRun) -> None:
    result = result_of(graded, "deep")
    raised = line_of(RAISES_IN_CHECKS, DOT_RAISE)
    toy = next(c for c in result.checks if c.check_id == "q3.toy_example")
    assert toy.status == "error"
    assert toy.message.endswith(f"(line {raised}, in forward: `{DOT_RAISE}`)"), toy.message
    assert holds(toy.detail, frame("deep.py", raised, "forward", DOT_RAISE)), toy.detail
    assert frame("deep.py", raised, "forward", DOT_RAISE) in page_text(graded, "deep", "instructor.html")
    # The statements after the form feeds ran as written: q4's class works.
    assert all(c.passed for c in result.checks if c.question == "q4")


def test_a_statement_that_raises_while_loading_names_the_students_lines(graded: ClassRun) -> None:
    result = result_of(graded, "loading")
    call, raised = line_of(RAISES_WHILE_LOADING, "CHECKED = "), line_of(RAISES_WHILE_LOADING, "return sizes[10]")
    failed = [u for u in result.units if u.status == "error"]
    assert [u.label for u in failed] == [f"line {call}"]
    error = failed[0].error
    assert holds(error, frame("loading.py", call, "<module>", "CHECKED = checked_sizes()")), error
    assert holds(error, frame("loading.py", raised, "checked_sizes", "return sizes[10]")), error
    assert error.endswith("IndexError: list index out of range")
    assert frame("loading.py", raised, "checked_sizes", "return sizes[10]") in page_text(graded, "loading",
                                                                                        "instructor.html")
    # The units after it still ran.
    assert result.units[-1].status == "ok"
