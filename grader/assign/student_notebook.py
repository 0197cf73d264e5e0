"""The student's notebook, built from the instructor's solution notebook.

Each cell keeps its id (so regenerating gives the same file, and a diff shows what changed), its source with the
marked solutions replaced by stubs (``markers``), and of its metadata only the tags students need (``answer:<id>``,
which is how the grader finds a written answer). Outputs and execution counts are dropped. Two cells are added at
the end: how to check your work, and the student kit's ``check()`` that does it (in a notebook the grader grades,
``grader`` is a stand-in whose ``check`` does nothing).
"""

from __future__ import annotations

import re
import textwrap

import nbformat
from nbformat import NotebookNode

from grader.assign.markers import has_markers, strip_solutions
from grader.errors import ConfigurationError

# Tags that only steer generation and are not copied: a "demo" code cell runs under `if __name__ == "__main__":` in
# the .py version, so importing the module (as the grader does) defines the answers without running the examples.
DEMO_TAG = "demo"
ANSWER_TAG_PREFIX = "answer:"
CHECK_CELL_IDS = ("check-your-work-instructions", "check-your-work")


def wrap_paragraphs(text: str) -> str:
    """Markdown paragraphs wrapped at 100 characters, never inside a `code span` (which must stay on one line to
    read as code in a comment)."""
    keep = "\0"  # stands for a space inside a code span while wrapping
    spans = re.compile(r"`[^`]*`")
    return "\n\n".join(
        textwrap.fill(spans.sub(lambda m: m.group().replace(" ", keep), paragraph), width=100,
                      break_on_hyphens=False, break_long_words=False).replace(keep, " ")
        for paragraph in text.split("\n\n"))


CHECK_CODE = "from grader.kit import check\n\ncheck()"


def check_your_work(name: str, *, kind: str) -> str:
    """The "Check your work" section that ends each template (markdown), for the notebook or the .py version."""
    common = ("The check runs the assignment's public checks on what your code defines, with the same inputs as "
              "when your instructor grades it, and shows each question's result, what failed and the likely cause. "
              'To check one question, call `check("q1")` (with its id) instead. Hidden checks, on other inputs, also '
              "count towards your grade: they run only when your work is graded. The check needs the grader "
              "installed (the wheel in your kit folder) and the kit's `grader-kit` folder beside this file or in a "
              "folder above it. The grader does not run this check when it grades your work.")
    if kind == "notebook":
        return "## Check your work\n\n" + wrap_paragraphs(
            "Run the cells above, then the next cell: the check uses what this notebook's kernel has defined, so "
            f"after changing an answer, run its cell again (or Run All) before checking. {common}")
    return "## Check your work\n\n" + wrap_paragraphs(
        f"In a terminal, in this file's folder, run `python {name}.py`: the lines below check your work after the "
        f"examples. {common}")


def _tags(cell: NotebookNode) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def cell_id(cell: NotebookNode, number: int) -> str:
    return cell.get("id") or f"cell-{number}"  # a notebook older than nbformat 4.5 has no ids


def demo_ids(solution: NotebookNode) -> frozenset[str]:
    """The ids of the solution's demo cells (the tag is not copied into the student's notebook)."""
    return frozenset(cell_id(cell, number) for number, cell in enumerate(solution.cells)
                     if cell.cell_type == "code" and DEMO_TAG in _tags(cell))


def answer_id(cell: NotebookNode) -> str | None:
    if cell.cell_type != "markdown":
        return None
    return next((t.removeprefix(ANSWER_TAG_PREFIX) for t in _tags(cell) if t.startswith(ANSWER_TAG_PREFIX)), None)


def _student_cell(cell: NotebookNode, identifier: str) -> NotebookNode:
    where = f"cell {identifier!r}"
    source = strip_solutions(cell.source, code=cell.cell_type == "code", where=where)
    metadata = {}
    tags = [t for t in _tags(cell) if t != DEMO_TAG]
    if tags:
        metadata["tags"] = tags
    if cell.cell_type == "code":
        return nbformat.v4.new_code_cell(source, id=identifier, metadata=metadata)
    if cell.cell_type == "markdown":
        return nbformat.v4.new_markdown_cell(source, id=identifier, metadata=metadata)
    return nbformat.v4.new_raw_cell(source, id=identifier, metadata=metadata)


def student_notebook(solution: NotebookNode, *, name: str) -> NotebookNode:
    """The template handed to students, from the solution notebook of assignment ``name``."""
    if not solution.cells or solution.cells[0].cell_type != "markdown":
        raise ConfigurationError(f"{name}: the solution notebook must start with a markdown cell, the assignment's "
                                 "introduction (it becomes the .py version's docstring)")
    if not any(has_markers(cell.source) for cell in solution.cells):
        raise ConfigurationError(f"{name}: the solution notebook marks no solution ({'### BEGIN SOLUTION'} ... "
                                 f"{'### END SOLUTION'}): its template would hand out the answers")
    cells = []
    for number, cell in enumerate(solution.cells):
        identifier = cell_id(cell, number)
        if identifier in CHECK_CELL_IDS:
            raise ConfigurationError(f"{name}: the cell id {identifier!r} is kept for the generated self-check cell")
        cells.append(_student_cell(cell, identifier))
    cells.append(nbformat.v4.new_markdown_cell(check_your_work(name, kind="notebook"), id=CHECK_CELL_IDS[0]))
    cells.append(nbformat.v4.new_code_cell(CHECK_CODE, id=CHECK_CELL_IDS[1]))
    metadata = {key: solution.metadata[key] for key in ("kernelspec", "language_info") if key in solution.metadata}
    metadata.setdefault("kernelspec", {"display_name": "Python 3", "language": "python", "name": "python3"})
    # `grader check` reads which assignment a notebook is from here, whatever the student renamed it to.
    metadata["grader"] = {"assignment": name}
    notebook = nbformat.v4.new_notebook(cells=cells, metadata=metadata)
    nbformat.validate(notebook)
    return notebook
