"""Each choice the grader makes for a student is a line under "How your code was read" (issue 28): constructor
arguments matched by what their names say, weights set in a layer named otherwise, a near name not graded in place of
the asked one, a later question graded with the reference's earlier answer or with the student's own. The report,
`grader check` and the student kit say the same lines; results stored before choices were recorded read back with
none."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.discover import Submission
from grader.kit.build import build_kit
from grader.kit.bundle import KIT_FOLDER
from grader.kit.runner import Kit, load_kit, run_kit
from grader.pipeline.self_check import public_only
from grader.record.gradescope import gradescope_results
from grader.record.result_json import result_from_json, result_to_json
from grader.report.render import render_student_report
from grader.report.summary import summary_lines
from grader.results import ChoiceKind, SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, ROOT
from .test_dependent_questions import OWN_CONVENTION
from .warm_workers import grade_one

# The lecture's `d_hid` and `p_drop` for the constructors' arguments, the score vector spelt `W_v`, and
# masked_softmax misspelt: every choice but the student's own earlier answer, in one file.
D_HID = (ROOT / "tests" / "submissions" / "real_style" / "attention_scoring" / "d_hid_signature.py").read_text()
SCORING = D_HID.replace("self.w_v", "self.W_v").replace("def masked_softmax(", "def masked_sofmax(")

SCORING_LINES = [
    "q1: `masked_sofmax` not graded as `masked_softmax`, because the assignment asks for `masked_softmax` itself, and "
    "a guess could grade the wrong code: rename it.",
    "q2: graded with the reference masked_softmax in place of yours, because a mistake there then costs points only "
    "in q1.",
    "q2: AdditiveAttention given num_hiddens as `d_hid`, because its constructor names its arguments differently from "
    "the assignment, and the grader matched them by what their names say.",
    "q2: AdditiveAttention's `W_v` used as `w_v`, because its names are the assignment's up to case, or names the "
    "question accepts.",
    "q3: graded with the reference masked_softmax in place of yours, because a mistake there then costs points only "
    "in q1.",
    "q3: DotProductAttention given dropout as `p_drop`, because its constructor names its arguments differently from "
    "the assignment, and the grader matched them by what their names say.",
    "q4: graded with the reference masked_softmax in place of yours, because a mistake there then costs points only "
    "in q1.",
    "q4: BilinearAttention given query_size as `d_q`, key_size as `d_k`, because its constructor names its arguments "
    "differently from the assignment, and the grader matched them by what their names say.",
]
OWN_LINE = ("q2: \"adds the table to a random batch of 5 steps\" graded with your own positional_table, because with "
            "the reference in its place your code raised, and with yours it passes.")


def graded(folder: Path, assignment: Assignment, source: str, student: str = "s1") -> SubmissionResult:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{student}.py"
    path.write_text(source, encoding="utf-8")
    return grade_one(submission=Submission(student, path, "python", datetime.now(UTC)), assignment=assignment,
                     root=folder)


def in_kernel(kit: Kit, source: str) -> SubmissionResult:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "<cell 1>", "exec"), namespace)
    return run_kit(kit, namespace)


def page_text(page: str) -> str:
    """A page's words as a reader sees them: no tags, entities read, whitespace normalised."""
    page = re.sub(r"<style.*?</style>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def lines(result: SubmissionResult) -> list[str]:
    return [c.line for c in result.choices]


@pytest.fixture(scope="module")
def kits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Kit]:
    out = tmp_path_factory.mktemp("kits")
    build_kit("attention_scoring", out_dir=out)
    build_kit("positional", solutions_dir=FIXTURE_SOLUTIONS, assignments_dir=out / "none", out_dir=out)
    return {name: load_kit(out / name / KIT_FOLDER) for name in ("attention_scoring", "positional")}


def test_each_choice_is_a_line_in_the_report_grader_check_and_the_kit(tmp_path: Path, kits: dict[str, Kit]) -> None:
    scoring = load_assignment("attention_scoring")
    result = graded(tmp_path / "graded", scoring, SCORING)
    page = page_text(render_student_report(result, title=scoring.title))
    assert "How your code was read" in page
    for line in SCORING_LINES:
        assert line in page, line
    assert lines(result) == SCORING_LINES  # in the questions' order, each question's reference first
    exported = gradescope_results(result)["extra_data"]["questions"]
    assert [line for q in exported for line in q["choices"]] == SCORING_LINES  # results.json carries them too
    assert [c.kind for c in result.choices if c.question == "q2"] == [ChoiceKind.REFERENCE, ChoiceKind.ARGUMENTS,
                                                                      ChoiceKind.PARAMETERS]
    # A choice is no mistake: the renamed arguments cost nothing, the renamed layer only q2's check of the names.
    assert {q.id: q.score for q in result.questions} == {"q1": 0, "q2": 26, "q3": 25, "q4": 20}

    # `grader check` (public checks only) and the kit say the same lines, under the same heading.
    checked = graded(tmp_path / "checked", public_only(scoring), SCORING, student="s2")
    kit = in_kernel(kits["attention_scoring"], SCORING)
    assert lines(checked) == lines(kit) == lines(result)
    printed = summary_lines(_Summary(checked, scoring.title))
    assert "How your code was read:" in printed
    assert [line.strip() for line in printed[printed.index("How your code was read:") + 1:][:len(lines(result))]] == \
        lines(result)


def test_a_check_graded_with_the_students_own_earlier_answer_says_so(tmp_path: Path, kits: dict[str, Kit]) -> None:
    positional = load_assignment("positional", solutions_dir=FIXTURE_SOLUTIONS)
    result = graded(tmp_path, positional, OWN_CONVENTION)
    page = page_text(render_student_report(result, title=positional.title))
    assert OWN_LINE in page
    assert "q2: graded with the reference positional_table in place of yours, because a mistake there then costs " \
           "points only in q1." in page
    checked = graded(tmp_path / "checked", public_only(positional), OWN_CONVENTION, student="s2")
    assert OWN_LINE in lines(checked) and lines(checked) == lines(in_kernel(kits["positional"], OWN_CONVENTION))


def test_results_stored_before_choices_read_back_with_none(tmp_path: Path) -> None:
    positional = load_assignment("positional", solutions_dir=FIXTURE_SOLUTIONS)
    result = graded(tmp_path, positional, OWN_CONVENTION)
    assert result_from_json(result_to_json(result)) == result and result.choices
    old = json.loads(result_to_json(result))
    for question in old["questions"]:
        del question["choices"]
    assert result_from_json(json.dumps(old)).choices == ()


class _Summary:
    """What `grader check` summarises (a SelfCheck's fields)."""

    def __init__(self, result: SubmissionResult, title: str) -> None:
        self.result, self.title, self.unchecked, self.has_hidden, self.out_of = result, title, (), True, 0.0
