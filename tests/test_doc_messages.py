"""The messages README.md, docs/ and the real-style README quote as what the grader tells a student are what it tells
them (issue 28). Each quote below must be in its page, as the page writes it, so a quote edited there fails here
until this list follows it; and in the real output of the submission it is about, graded here: the student's page,
`grader check`'s summary or the kit's result. Compared with whitespace normalised, without markdown's backticks,
bold marks and quote marks, an ellipsis standing for text left out.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from grader.check.load import load_assignment
from grader.cli.check import print_summary
from grader.discover import Submission, discover
from grader.discover.canvas import LATE_NOTE
from grader.discover.gradescope import find_submission
from grader.kit import run as kit_run
from grader.kit.bundle import FORMAT, KIT_FILE, KIT_FOLDER
from grader.kit.runner import find_kit, load_kit
from grader.paths import SOLUTIONS_DIR
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.pipeline.self_check import check_submission, public_only
from grader.pipeline.submission_run import grader_failed_result
from grader.record.autograder_results import autograder_results
from grader.report.render import render_student_report
from grader.results import GRADED, HIDDEN, MARKED, PASSED, UNMARKED, CheckResult, ManualMark, QuestionResult
from grader.results import SubmissionResult as Result

from .conftest import FIXTURE_SOLUTIONS, ROOT, SAMPLES, write
from .test_binding import OPEN_CHOICE
from .test_choices import D_HID, SCORING
from .test_consistent_conventions import source
from .test_dependent_questions import OWN_CONVENTION
from .test_feedback_names_the_mistake import ATTEND, HIDDEN_SIZES_CHECKS, PRACTICAL10_SAMPLE
from .test_heatmap_window import CHECKS as TABLE_CHECKS
from .test_heatmap_window import WRONG_AT_55
from .test_provided_answer_raises import FLATTENED_SCORES
from .warm_workers import grade_one

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("warm_class_runs")]

REAL_STYLE = ROOT / "tests" / "submissions" / "real_style"
SUBMISSIONS = ROOT / "tests" / "submissions"


@dataclass(frozen=True)
class Quote:
    page: str  # where it is quoted, from the project's root
    text: str  # as the page writes it
    said_by: str  # what says it: a key of the ``said`` fixture, "<assignment>/<student>" for a student's page
    fill: tuple[tuple[str, str], ...] = ()  # a placeholder the page writes (format N) and what it stands for here
    drawn: bool = False  # its numbers are a hidden check's draw, which the course's secret decides: any number


A, G, C, K, W = "docs/assignments.md", "docs/grading.md", "docs/checking.md", "docs/student-kit.md", \
    "docs/writing-checks.md"
R = "tests/submissions/real_style/README.md"

QUOTES = (
    # How names and signatures are matched
    Quote(A, "AdditiveAttention's parameters are not named as the assignment specifies: found `W_v` (1 x 4) used as "
             "`w_v`: rename it `w_v`", "attention_scoring/capital_w_v"),
    Quote(R, "found `W_v` (1 x 4) used as `w_v`: rename it `w_v`", "attention_scoring/capital_w_v"),
    Quote(A, "Not graded: the grader could not tell which of AdditiveAttention's parameters to set: `layer1`, `layer2` "
             "and `layer3` all fit `W_q` (8 x 20) and `W_k` (8 x 2): name them as the assignment does",
          "attention_scoring/open_choice"),
    Quote(A, "`masked_softmax` is not defined in your submission: you defined `masked_sofmax`; the assignment asks for "
             "`masked_softmax` (rename it)", "attention_scoring/misspelt"),
    Quote(A, "`masked_softmax` is not defined: you defined `masked_sofmax`; rename it `masked_softmax`",
          "hidden checks/misspelt"),
    Quote(C, "you defined `masked_sofmax`; the assignment asks for `masked_softmax` (rename it)", "check/misspelt"),
    Quote(A, "`d2l.DotProductAttention` is the answer to q3: write your own",
          "attention_scoring/book_answers_from_d2l"),
    Quote(R, "`d2l.AdditiveAttention` is the answer to q2: write your own", "attention_scoring/book_answers_from_d2l"),
    Quote(A, "q2: AdditiveAttention given num_hiddens as `d_hid`, because its constructor names its arguments "
             "differently from the assignment, and the grader matched them by what their names say.",
          "attention_scoring/d_hid_signature"),
    *(Quote(A, line, "attention_scoring/misspelt") for line in (
        "q1: `masked_sofmax` not graded as `masked_softmax`, because the assignment asks for `masked_softmax` itself, "
        "and a guess could grade the wrong code: rename it.",
        "q2: graded with the reference masked_softmax in place of yours, because a mistake there then costs points "
        "only in q1.",
        "q2: AdditiveAttention given num_hiddens as `d_hid`, because its constructor names its arguments differently "
        "from the assignment, and the grader matched them by what their names say.",
        "q2: AdditiveAttention's `W_v` used as `w_v`, because its names are the assignment's up to case, or names the "
        "question accepts.")),
    Quote(A, "KerasAdditiveAttention takes (d_model, d_k=None, d_v=None, dropout=0.0); the assignment passes dim, "
             "use_scale, causal, dropout: could not match use_scale and causal. The grader does not guess by "
             "position: ...", "keras_additive_attention/transformer_signature"),
    Quote(R, "KerasAdditiveAttention takes (d_model, d_k=None, d_v=None, dropout=0.0); the assignment passes dim, "
             "use_scale, causal, dropout: could not match use_scale and causal",
          "keras_additive_attention/transformer_signature"),
    Quote(A, "AdditiveAttention.forward raised IndexError: Dimension out of range ... It was called with tensors of "
             "shapes (1, 20), (10, 20), (10, 20); the assignment passes one query, unbatched: ... code written for "
             "batches (batch, n, input_dim) fails this way", "bahdanau_attention/batched_convention"),
    Quote(R, "It was called with tensors of shapes (1, 20), (10, 20), (10, 20); the assignment passes one query, "
             "unbatched", "bahdanau_attention/batched_convention"),
    Quote(A, "line 2 could not import TensorFlow: this assignment is graded in PyTorch, and code written for "
             "TensorFlow cannot run in the grader", "attention_scoring/tensorflow_port"),
    Quote(R, "could not import TensorFlow: this assignment is graded in PyTorch", "attention_scoring/tensorflow_port"),
    Quote(R, "could not import MXNet", "attention_scoring/mxnet_port"),
    Quote("docs/security.md", "`d2l.X` is the answer to qN", "attention_scoring/book_answers_from_d2l",
          fill=(("d2l.X", "d2l.DotProductAttention"), ("qN", "q3"))),
    # Named mistakes
    Quote(A, "**Likely cause: softmax over the target steps.** Your weights are a softmax over the target steps "
             "(dim=1): each step's weights must be a distribution over the source positions, softmax(..., dim=-1).",
          "practical10/mistake_softmax_axis"),
    Quote(R, "softmax over the queries axis", "attention_scoring/dot_softmax_dim1"),
    Quote(R, "padded keys not masked", "attention_scoring/dot_ignores_valid_lens"),
    Quote(R, "queries and keys not projected by W_q and W_k", "attention_scoring/additive_no_projections"),
    Quote(R, "no tanh in the additive score", "attention_scoring/no_tanh_squeezed"),
    Quote(A, "Where: your DotProductAttention.forward, line 41: `scores = scores.masked_fill(valid_lens == 0, -1e6)`.",
          "attention_scoring/mask_compared_with_zero"),
    Quote(A, "The size of tensor a (2) must match the size of tensor b (10) at non-singleton dimension 2",
          "attention_scoring/mask_compared_with_zero"),
    Quote(R, "valid_lens used as a mask", "attention_scoring/mask_compared_with_zero"),
    Quote(R, "softmax over the size-1 score axis", "bahdanau_attention/softmax_dim1"),
    Quote(R, "scaled by the input size d instead of d_k", "practical10/q1_only_scaled_by_d"),
    Quote(W, "Your DotProductAttention gives the padded keys weight, as if valid_lens were not used: ...",
          "attention_scoring/dot_ignores_valid_lens"),
    Quote(A, "**Smallest failing case:** batch 2, queries 3, keys 4 (graded at batch 4, queries 5, keys 8)",
          "attention_scoring/mistake_softmax_axis/instructor", drawn=True),
    Quote(W, "the values it returned are right for A, Z: return all 5", "practical10/returns_two_values"),
    Quote(R, "the values it returned are right for A, Z: return all 5", "practical10/returns_two_values"),
    # Questions that build on each other
    Quote(W, "Graded with your own causal_mask: with the reference causal_mask in its place, your code's answer had "
             "other values (...); with yours it passes; the better result counts.", "causal/own_convention"),
    Quote(W, "Graded with your own causal_mask where that did better than the reference's: ...",
          "causal/own_convention"),
    Quote(W, "not written yet", "bahdanau_attention/not_written"),
    Quote(W, "With your own masked_softmax, this check fails: ...", "attention_scoring/mistake_softmax_axis"),
    # The student's page
    Quote(G, "rows 28-59 of 60, columns 0-31 of 32, around the largest error at [55, 3]", "tables/student"),
    Quote(G, "broken_notebook.ipynb is not a valid notebook (broken JSON: it ends early, at line 317): re-save it in "
             "Jupyter and submit it again", "attention_scoring/broken_notebook"),
    Quote(G, "attend(...) raised IndexError: index 4 is out of bounds for dimension 1 with size 3 (line 6, in attend: "
             "`last = weights[:, Q.shape[0] - 1]`)", "hidden_sizes/student/instructor", drawn=True),
    Quote(G, "your code raised IndexError (line 6: `last = weights[:, Q.shape[0] - 1]`) with the sizes batch 5, "
             "queries 3, keys 3", "hidden_sizes/student", drawn=True),
    Quote(G, "(reversal.py, line 108, in forward: `outputs, weights = self.attention(outputs, context, mask)  # the "
             "attentional states, (batch, T, S)`)", "practical10/harness_raise"),
    Quote(G, "(line 24, in forward: `weights = masked_softmax(scores.reshape(-1, scores.shape[-1]), valid_lens)`; the "
             "error came from your call into `masked_softmax`, which the grader provides in place of yours for this "
             "question)", "attention_scoring/flattened_scores"),
    Quote(G, "name 'sequence_mask_missing' is not defined (...) (line 3 raised ImportError while loading, which may "
             "be why)", "toy/missing_names"),
    Quote(G, "(nothing in your code defines `undefined_helper`; separately, line 2 raised ModuleNotFoundError while "
             "loading)", "toy/missing_names"),
    Quote(G, "`bump` is not defined in your submission (line 14 raised NameError while loading, which may be why; "
             "`helper` was not defined there because line 2 raised ModuleNotFoundError while loading)",
          "toy/missing_names"),
    Quote(G, "Canvas marked this submission late.", "canvas"),
    Quote(G, "Checks 73 + written answers 4 (1 not marked yet)", "breakdown"),
    Quote(G, "Submitted 2026-03-02 23:00 UTC, 1 day 12 hours after the deadline (2026-03-01 11:00 UTC = 12:00 "
             "UTC+01:00). Late rule: 10% of the score per started day late; 0 when more than 3 days late. 2 started "
             "days late: 20% of 2 points, -0.4 points.", "toy_written/ben"),
    # Gradescope's autograder, what the student sees at once
    Quote("docs/gradescope.md", "found: report.pdf", "gradescope/report.pdf"),
    Quote("docs/gradescope.md", "not your fault", "gradescope/grader failed"),
    # grader check, on the sample mistake of checking.md
    *(Quote(C, line, "check/mistake_softmax_axis") for line in (
        "q1  masked_softmax                      0 / 13    0 of 3 public checks passed",
        "FAILED  textbook example: valid_lens [2, 3] (1-D)",
        "masked_softmax(X, valid_lens) differs from the reference in 16 of 16 entries (100%): largest error 0.5 at "
        "[0, 0, 2] (got 0.5, expected 0); ...",
        "Likely cause: softmax over the queries axis. Your masked_softmax normalises over dim=1, the queries, ...",
        "FAILED  textbook example: valid_lens [[1, 3], [2, 4]] (2-D, one per query)",
        "Likely cause: softmax over the queries axis. (as above)",
        "q2  AdditiveAttention                  20 / 20    passed (5 public checks)",
        "How your code was read: q2: graded with the reference masked_softmax in place of yours, because a mistake "
        "there then costs points only in q1.",
        "3 of 15 public checks did not pass (46 / 59 points; the grade is out of 100: your instructor grades the "
        "rest).",
        "Hidden checks, on other inputs, also count towards your grade: your instructor runs them when grading.")),
    # The student kit
    Quote(C, "Checked when graded, not here", "kit/bahdanau_attention"),
    Quote(K, "Checked when graded, not here: ...", "kit/bahdanau_attention"),
    Quote(K, "Likely cause: softmax over the queries axis", "kit/mistake_softmax_axis"),
    Quote(K, "no grader-kit/kit.json in … or a folder above it", "kit/elsewhere"),
    Quote(K, "... has no question q9 (its questions: q1, q2, ...)", "kit/q9"),
    Quote(K, "Not graded: masked_softmax is not defined", "kit/masked_softmax not run"),
    Quote(K, "... is not defined in your submission: you defined masked_sofmax; the assignment asks for "
             "masked_softmax (rename it)", "kit/misspelt"),
    Quote(K, "… is a kit of format N, this grader reads format M", "kit/format",
          fill=(("format N", "format 1"), ("format M", f"format {FORMAT}"))),
    Quote(K, "How your code was read", "kit/misspelt"),
)

ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s*")


def normalised(text: str) -> str:
    """Text as a reader compares it: markdown's marks (quote prefixes, backticks, bold) and runs of space left out."""
    text = re.sub(r"(?m)^\s*> ?", "", text)
    return " ".join(text.replace("`", "").replace("**", "").split())


def page_text(page: str) -> str:
    page = re.sub(r"<style.*?</style>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def found_in(quote: Quote, said: str) -> str:
    """'' when every part of ``quote`` (the text between its ellipses) is in ``said``, in order; else what is not."""
    text = quote.text
    for placeholder, value in quote.fill:
        text = text.replace(placeholder, value)
    at = 0
    for part in filter(None, ELLIPSIS.split(normalised(text))):
        pattern = re.escape(part)
        if quote.drawn:
            pattern = re.sub(r"\d+", r"\\d+", pattern)
        match = re.compile(pattern).search(said, at)
        if match is None:
            return part
        at = match.end()
    return ""


def test_every_quote_is_on_its_page() -> None:
    pages = {page: normalised((ROOT / page).read_text(encoding="utf-8")) for page in {q.page for q in QUOTES}}
    missing = [f"{q.page}: {q.text}" for q in QUOTES if normalised(q.text) not in pages[q.page]]
    assert not missing, "quoted no more (follow the page here):\n" + "\n".join(missing)


def test_every_quote_is_what_the_grader_says(said: dict[str, str]) -> None:
    wrong = [f"{q.page} ({q.said_by}): {part!r} is not said" for q in QUOTES
             if (part := found_in(q, said[q.said_by]))]
    assert not wrong, "\n".join(wrong)


# ----- what the grader says ---------------------------------------------------------------------------------------
# Each class is graded once; a student's page says what a quote "<assignment>/<student>" is about.
CLASSES: dict[str, dict[str, Path | str]] = {
    "attention_scoring": {
        **{name: REAL_STYLE / "attention_scoring" / f"{name}.py" for name in (
            "capital_w_v", "d_hid_signature", "book_answers_from_d2l", "tensorflow_port", "mxnet_port",
            "dot_softmax_dim1", "dot_ignores_valid_lens", "additive_no_projections", "no_tanh_squeezed",
            "mask_compared_with_zero")},
        "mistake_softmax_axis": SAMPLES / "mistake_softmax_axis.py",
        "broken_notebook": SAMPLES / "broken_notebook.ipynb",
        "misspelt": SCORING,
        "open_choice": textwrap.dedent(OPEN_CHOICE),
        "flattened_scores": textwrap.dedent(FLATTENED_SCORES),
    },
    "bahdanau_attention": {**{name: REAL_STYLE / "bahdanau_attention" / f"{name}.py"
                              for name in ("batched_convention", "softmax_dim1")},
                           "not_written": ROOT / "assignments" / "bahdanau_attention" / "bahdanau_attention.py"},
    "keras_additive_attention": {"transformer_signature":
                                 REAL_STYLE / "keras_additive_attention" / "transformer_signature.py"},
    "practical10": {
        "returns_two_values": REAL_STYLE / "practical10" / "returns_two_values.py",
        "q1_only_scaled_by_d": REAL_STYLE / "practical10" / "q1_only_scaled_by_d.py",
        "mistake_softmax_axis": SUBMISSIONS / "practical10" / "mistake_softmax_axis.py",
        # forward without the mask: the harness's call, self.attention(outputs, context, mask), raises TypeError
        "harness_raise": PRACTICAL10_SAMPLE.read_text(encoding="utf-8").replace(
            "    def forward(self, query, context, mask=None):\n",
            "    def forward(self, query, context):\n        mask = None\n"),
    },
}
# grading.md's missing names: a module that failed to import, a name imported from it, a name nothing defines.
MISSING_NAMES = """\
import torch
from nowhere_module import helper
from torch import sequence_mask_missing


def scale(x):
    return sequence_mask_missing(x) * 2


def twice_scaled(x):
    return undefined_helper(scale(x))


bump = helper.make_bump()
"""


def graded_class(folder: Path, assignment: str, files: dict[str, Path | str],
                 solutions_dir: Path = SOLUTIONS_DIR) -> dict[str, str]:
    """Each student's page (and ``<student>/instructor``, the instructor's) as text."""
    submissions = folder / "class"
    for student, file in files.items():
        if isinstance(file, Path):
            submissions.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, submissions / f"{student}{file.suffix}")  # with its time: lateness reads it
        else:
            write(submissions, f"{student}.py", file)
    run = grade_class(RunRequest(assignment=assignment, submissions_dir=submissions, out_dir=folder / "out",
                                 solutions_dir=solutions_dir), RunOptions(jobs=2))
    pages = {}
    for result in run.results:
        where = run.out_dir / "students" / result.student
        pages[f"{assignment}/{result.student}"] = page_text((where / "report.html").read_text(encoding="utf-8"))
        pages[f"{assignment}/{result.student}/instructor"] = page_text(
            (where / "instructor.html").read_text(encoding="utf-8"))
    return pages


def checked(folder: Path, name: str, source: Path | str) -> str:
    """What `grader check` prints."""
    path = source if isinstance(source, Path) else write(folder, f"{name}.py", source)
    printed = io.StringIO()
    print_summary(check_submission(path=path, out_dir=folder / "out"), source=path.name, stream=printed)
    return printed.getvalue()


def kit_says(kit: Path, source: str, *questions: str, forget: str = "") -> str:
    """The kit's result as a terminal prints it, on a kernel that ran ``source`` (less the name ``forget``)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "<cell 1>", "exec"), namespace)
    namespace.pop(forget, None)
    return str(kit_run(*questions, namespace=namespace, kit=kit))


def error_of(call: Callable[[], object]) -> str:
    try:
        call()
    except Exception as exc:  # the message a student reads
        return str(exc)
    raise AssertionError("no error")


def breakdown() -> str:
    """The header of a page with 73 points from the checks and written answers marked in part."""
    checks = tuple(CheckResult(f"q1.c{i}", "q1", "c", HIDDEN, PASSED, points, points, "passed", "", 0)
                   for i, points in enumerate((70, 3)))
    result = Result("s", "a", "s.py", "python", "", GRADED, "", (QuestionResult("q1", "Q", checks),), (), (), (),
                    "2026-03-01T10:00:00+00:00", "2026-03-01T10:00:00+00:00", 1.0,
                    manual=(ManualMark("w1", 5, 4, "", MARKED), ManualMark("w2", 5, None, "", UNMARKED)))
    return page_text(render_student_report(result, title="T"))


@pytest.fixture(scope="module")
def said(tmp_path_factory: pytest.TempPathFactory, kits: Path) -> dict[str, str]:
    root = tmp_path_factory.mktemp("said")
    texts: dict[str, str] = {}
    for assignment, files in CLASSES.items():
        texts |= graded_class(root / assignment, assignment, files)
    # A question whose checks are all hidden: its note is the hidden checks' hint.
    scoring = load_assignment("attention_scoring")
    hidden = public_only(scoring)
    hidden.checks = [c for c in scoring.checks if c.question == "q1" and c.visibility == HIDDEN]
    hidden.questions = tuple(q for q in scoring.questions if q.id == "q1")
    texts["hidden checks/misspelt"] = page_text(render_student_report(_graded(root / "hidden", hidden, SCORING),
                                                                      title="hidden"))
    solutions = root / "solutions"
    write(solutions / "hidden_sizes", "__init__.py", "")
    write(solutions / "hidden_sizes", "checks.py", textwrap.dedent(HIDDEN_SIZES_CHECKS))
    write(solutions / "tables", "__init__.py", "")
    write(solutions / "tables", "checks.py", TABLE_CHECKS)
    texts |= graded_class(root / "hidden_sizes", "hidden_sizes", {"student": ATTEND}, solutions_dir=solutions)
    texts |= graded_class(root / "tables", "tables", {"student": textwrap.dedent(WRONG_AT_55)}, solutions_dir=solutions)
    texts |= graded_class(root / "causal", "causal", {"own_convention": source("true_is_hidden", "hides_true")},
                          solutions_dir=FIXTURE_SOLUTIONS)
    texts |= graded_class(root / "positional", "positional", {"own_convention": OWN_CONVENTION},
                          solutions_dir=FIXTURE_SOLUTIONS)
    texts |= graded_class(root / "toy", "toy", {"missing_names": MISSING_NAMES}, solutions_dir=FIXTURE_SOLUTIONS)
    late = write(root / "late" / "file", "ben.py", "def scale(x):\n    return x * 2\n")
    stamp = datetime.fromisoformat("2026-03-02T23:00:00+00:00").timestamp()
    os.utime(late, (stamp, stamp))
    texts |= graded_class(root / "late", "toy_written", {"ben": late}, solutions_dir=FIXTURE_SOLUTIONS)
    canvas = shutil.copytree(ROOT / "tests" / "fixtures" / "canvas" / "download", root / "canvas")
    texts["canvas"] = " ".join(note for s in discover(canvas)[0] for note in s.notes if note == LATE_NOTE)
    texts["breakdown"] = breakdown()
    uploaded = write(root / "gradescope", "report.pdf", "%PDF-1.4")
    texts["gradescope/report.pdf"] = find_submission(uploaded.parent, {}).problem
    mine = write(root / "gs", "mine.py", "")
    failed = grader_failed_result(find_submission(mine.parent, {}), scoring, mine.parent,
                                  detail="Traceback (most recent call last): ...")
    texts["gradescope/grader failed"] = autograder_results(failed)["output"]
    texts["check/mistake_softmax_axis"] = checked(root / "check", "mistake_softmax_axis",
                                                  SAMPLES / "mistake_softmax_axis.py")
    texts["check/misspelt"] = checked(root / "check", "misspelt", SCORING)
    # The student kit, as built for students (the session's), in a kernel that ran the student's cells.
    scoring_kit = kits / "attention_scoring" / KIT_FOLDER
    bahdanau = (SUBMISSIONS / "bahdanau_attention" / "reference_style.py").read_text(encoding="utf-8")
    texts["kit/bahdanau_attention"] = kit_says(kits / "bahdanau_attention" / KIT_FOLDER, bahdanau)
    texts["kit/mistake_softmax_axis"] = kit_says(scoring_kit, (SAMPLES / "mistake_softmax_axis.py").read_text())
    texts["kit/misspelt"] = kit_says(scoring_kit, SCORING)
    texts["kit/masked_softmax not run"] = kit_says(scoring_kit, D_HID, forget="masked_softmax")
    texts["kit/q9"] = error_of(lambda: kit_says(scoring_kit, D_HID, "q9"))
    texts["kit/elsewhere"] = error_of(lambda: find_kit(root / "nowhere"))
    old = shutil.copytree(scoring_kit, root / "old kit")
    data = json.loads((old / KIT_FILE).read_text(encoding="utf-8"))
    (old / KIT_FILE).write_text(json.dumps({**data, "format": 1}), encoding="utf-8")
    texts["kit/format"] = error_of(lambda: load_kit(old))
    return {key: normalised(text) for key, text in texts.items()}


def _graded(folder: Path, assignment: Any, source: str) -> Result:
    path = write(folder, "student.py", source)
    return grade_one(submission=Submission("student", path, "python", datetime.now()), assignment=assignment,
                     root=folder)

