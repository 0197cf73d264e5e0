"""A written answer as the marker sees it: the student's text whole (markdown rendered and cleaned, as on the
instructor's page), and, from a notebook, the code cells that lead up to it with the figures they were saved with
(practical10's attention maps, say).

The cells that lead up to an answer are the code cells between it and the markdown cell before them (the question's
prompt or a heading), at most ``LEADING_CELLS``. A .py file's answer is its ANSWER_<ID> string, with no figures. The
file is read again from the submissions folder the run graded (accounting.json): a stored result keeps no source. A
file that has gone or no longer reads shows the stored answer's text alone, with a line that says so.
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


@dataclass(frozen=True)
class AnswerView:
    html: str  # the answer, cleaned: nothing in it can run, load or link anywhere
    cells: tuple[str, ...] = ()  # the code cells before it, highlighted
    figures: tuple[str, ...] = ()  # <img> tags with data: URIs
    notes: tuple[str, ...] = field(default_factory=tuple)


def _answer_cell(cells: tuple[NotebookCell, ...], text: str) -> int | None:
    """The markdown cell that holds the answer the grader read (its text, whitespace aside)."""
    wanted = " ".join(text.split())
    if not wanted:
        return None
    for index, cell in enumerate(cells):
        if cell.kind == "markdown" and cell.source and wanted[:200] in " ".join(cell.source.split()):
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


def answer_view(result: SubmissionResult, question: str, submissions: Path | None) -> AnswerView:
    text = next((a.text for a in result.answers if a.id == question), "")
    plain = AnswerView(markdown_html(text) if text.strip() else '<p class="empty">No answer.</p>')
    if submissions is None or result.kind != "notebook":
        return plain
    path = submissions / result.source
    try:
        notebook = notebook_file(path, image_limit=FIGURE_CHARACTERS)
    except (OSError, ValueError):
        return AnswerView(plain.html, notes=(f"{result.source} could not be read again: the answer as graded, no "
                                             "figures",))
    index = _answer_cell(notebook.cells, text)
    if index is None:
        return plain
    answer_cell = notebook.cells[index]
    rendered = markdown_html(answer_cell.source or "", answer_cell.attachments)
    leading: list[NotebookCell] = []
    for cell in reversed(notebook.cells[:index]):
        if cell.kind != "code" or len(leading) == LEADING_CELLS:
            break
        leading.insert(0, cell)
    cells, figures, left = [], [], FIGURE_CHARACTERS
    for cell in leading:
        cells.append(highlight_code(cell.source or ""))
        shown, left = _figures(cell, left)
        figures += shown
    return AnswerView(rendered, tuple(cells), tuple(figures))
