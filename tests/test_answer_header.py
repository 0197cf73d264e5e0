"""The one rule for a written answer's header (grader/discover/program.py, ANSWER_HEADER): a first line "Your answer"
or "Your answer to ..." that ends there or at a colon is the template's, so a blank template's answer reads empty
whatever its header says ("exercise 1", "question 3", "part (b)"), in a notebook and in a .py; the student's own
words, a first line of theirs that merely starts so included, are kept."""

from __future__ import annotations

import nbformat
from hypothesis import given
from hypothesis import strategies as st

from grader.discover import read_program
from grader.discover.program import PLACEHOLDER_ANSWER

MARKUP = st.sampled_from([("**", "**"), ("__", "__"), ("*", "*"), ("_", "_"), ("", ""), ("### ", ""), ("# ", "")])
WHAT = st.sampled_from(["", " to exercise 3", " to question 3", " to part (b)", " to Q3", " To Exercise 3"])
BODY = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60).filter(
    lambda text: text.strip() and not text.strip().lower().startswith(("your answer", "*", "_", "#", ":")))


@st.composite
def header(draw: st.DrawFn) -> str:
    (opening, closing), what = draw(MARKUP), draw(WHAT)
    colon = draw(st.sampled_from([":", ""]))
    inside = draw(st.booleans())  # "**Your answer:**" or "**Your answer**:"
    words = f"{draw(st.sampled_from(['Your answer', 'your answer', 'YOUR ANSWER']))}{what}"
    return f"{opening}{words}{colon}{closing}" if inside else f"{opening}{words}{closing}{colon}"


@given(header(), BODY, st.sampled_from(["\n\n", "\n", " "]))
def test_a_header_is_left_out_and_the_answer_kept(head: str, body: str, between: str) -> None:
    if between == " " and not head.endswith(":") and not head.endswith(":**") and ":" not in head:
        between = "\n"  # on one line, only a colon ends a header
    answers = answers_of(f"{head}{between}{body}")
    assert answers == {"ex3": body.strip()}


@given(header(), st.sampled_from(["", f"\n\n{PLACEHOLDER_ANSWER}", "\n\n   "]))
def test_a_blank_templates_answer_is_empty_whatever_its_header_says(head: str, rest: str) -> None:
    assert answers_of(f"{head}{rest}") == {"ex3": ""}
    assert py_answers_of(f"{head}{rest}") == {"ex3": ""}


@given(BODY)
def test_an_answer_without_a_header_is_the_answer(body: str) -> None:
    assert answers_of(body) == {"ex3": body.strip()}
    assert answers_of(f"Your answer is {body}") == {"ex3": f"Your answer is {body}".strip()}


def answers_of(markdown: str) -> dict[str, str]:
    cell = nbformat.v4.new_markdown_cell(markdown)
    cell.metadata["tags"] = ["answer:ex3"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), cell])
    program = read_program(nbformat.writes(notebook).encode(), kind="notebook", name="s.ipynb", written_ids=["ex3"])
    return dict(program.answers)


def py_answers_of(text: str) -> dict[str, str]:
    program = read_program(f"x = 1\nANSWER_EX3 = {text!r}\n".encode(), kind="python", name="s.py",
                           written_ids=["ex3"])
    return dict(program.answers)
