"""A written answer as the marker sees it: the student's text whole (markdown rendered and cleaned, as on the
instructor's page), and, from a notebook, the code cells that lead up to it with the figures they were saved with
(practical10's attention maps, say).

The cells that lead up to an answer are the code cells between it and the markdown cell before them (the question's
prompt or a heading), at most ``LEADING_CELLS``. A .py file's answer is its ANSWER_<ID> string, with no figures. The
file is read again from the submissions folder the run graded (accounting.json): a stored result keeps no source. A
file that has gone or no longer reads shows the stored answer's text alone, with a line that says so.

Rendering markdown and cleaning its HTML is pure Python, which holds the interpreter: a 10 MB answer took half a
minute, and every other marker's page waited for it. So an answer (and a code cell before it) is rendered only up to
``ANSWER_SHOWN`` characters, which bounds both the page and the time; the page then says it is cut and links to the
whole answer as plain text (app.py's ``answer_text``), which costs no rendering.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from grader.discover.program import NotebookCell, notebook_file
from grader.report.notebook import highlight_code, markdown_html
from grader.results import SubmissionResult

LEADING_CELLS = 4
FIGURE_CHARACTERS = 8 << 20  # base64 characters of figures shown for one answer
ANSWER_SHOWN = 50_000  # characters of an answer, or of a code cell before it, rendered on the marking page


@dataclass(frozen=True)
class AnswerView:
    html: str  # the answer, cleaned: nothing in it can run, load or link anywhere
    cells: tuple[str, ...] = ()  # the code cells before it, highlighted
    figures: tuple[str, ...] = ()  # <img> tags with data: URIs
    notes: tuple[str, ...] = field(default_factory=tuple)
    cut: tuple[int, int] | None = None  # (characters rendered, characters in all) of an answer longer than shown


def cut(source: str, limit: int = ANSWER_SHOWN) -> tuple[str, tuple[int, int] | None]:
    """The first ``limit`` characters of ``source`` (to the end of a line where one ends near the limit, so a
    paragraph or a code block is not cut in its middle), and how much that is of the whole; None when it is whole."""
    if len(source) <= limit:
        return source, None
    head = source[:limit]
    line_end = head.rfind("\n")
    if line_end > limit * 0.9:
        head = head[:line_end]
    return head, (len(head), len(source))


def _answer_cell(cells: tuple[NotebookCell, ...], text: str) -> int | None:
    """The markdown cell that holds the answer the grader read (its first words, whitespace aside, within the
    cell's first ``ANSWER_SHOWN`` characters: a huge cell is not read whole to find them)."""
    wanted = " ".join(text[:ANSWER_SHOWN].split())[:200]
    if not wanted:
        return None
    for index, cell in enumerate(cells):
        if cell.kind == "markdown" and cell.source and wanted in " ".join(cell.source[:ANSWER_SHOWN].split()):
            return index
    return None


def _figures(cell: NotebookCell, left: int) -> tuple[list[str], int]:
    shown = []
    for output in cell.saved:
        image = output.image
        if output.kind != "image" or image is None or image.data is None or not image.readable:
            continue
        if image.size > left:
            shown.append(f'<p class="note">[a figure of {image.size >> 10} KB, not shown]</p>')
            continue
        left -= image.size
        shown.append(f'<img class="figure" alt="figure" src="data:{html.escape(image.mime)};base64,{image.data}">')
    return shown, left


def _code(source: str) -> str:
    shown, cut_at = cut(source)
    if cut_at is None:
        return highlight_code(source)
    return highlight_code(shown) + (f'<p class="note">[cell cut: the first {cut_at[0]} of {cut_at[1]} characters '
                                    "shown]</p>")


def answer_view(result: SubmissionResult, question: str, submissions: Path | None) -> AnswerView:
    text = next((a.text for a in result.answers if a.id == question), "")
    shown, cut_at = cut(text)
    plain = AnswerView(markdown_html(shown) if text.strip() else '<p class="empty">No answer.</p>', cut=cut_at)
    if submissions is None or result.kind != "notebook":
        return plain
    path = submissions / result.source
    try:
        notebook = notebook_file(path, image_limit=FIGURE_CHARACTERS)
    except (OSError, ValueError):
        return AnswerView(plain.html, notes=(f"{result.source} could not be read again: the answer as graded, no "
                                             "figures",), cut=cut_at)
    index = _answer_cell(notebook.cells, text)
    if index is None:
        return plain
    answer_cell = notebook.cells[index]
    shown, cut_at = cut(answer_cell.source or "")
    rendered = markdown_html(shown, answer_cell.attachments)
    leading: list[NotebookCell] = []
    for cell in reversed(notebook.cells[:index]):
        if cell.kind != "code" or len(leading) == LEADING_CELLS:
            break
        leading.insert(0, cell)
    cells, figures, left = [], [], FIGURE_CHARACTERS
    for cell in leading:
        cells.append(_code(cell.source or ""))
        shown, left = _figures(cell, left)
        figures += shown
    return AnswerView(rendered, tuple(cells), tuple(figures), cut=cut_at)
