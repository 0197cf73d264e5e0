"""Read a submission file into code units (notebook cells or top-level statements) and written answers."""

from __future__ import annotations

import ast
import functools
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import nbformat

from grader.errors import InvalidSubmission

# What the templates put in an answer cell before the student writes anything.
PLACEHOLDER_ANSWER = "_Write your answer here._"


def _answer_text(text: str) -> str:
    return text.replace(PLACEHOLDER_ANSWER, "").strip()


@dataclass(frozen=True)
class CodeUnit:
    label: str  # "cell [3]" or "lines 10-24", as the report shows it
    filename: str  # what tracebacks show
    source: str
    first_line: int = 1


@dataclass(frozen=True)
class Program:
    kind: str
    units: tuple[CodeUnit, ...]
    answers: tuple[tuple[str, str], ...]  # (written question id, the student's text)
    module_name: str
    stop_on_exit: bool  # a .py stops at sys.exit(); a notebook kernel goes on to the next cell
    notes: tuple[str, ...] = ()

    def wire_units(self) -> list[dict]:
        return [{"filename": u.filename, "source": u.source, "first_line": u.first_line} for u in self.units]


def _decode(data: bytes, name: str) -> str:
    if not data.strip():
        raise InvalidSubmission(f"{name} is empty")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidSubmission(f"{name} is not UTF-8 text (byte {exc.start} cannot be decoded)") from None


def read_program(data: bytes, *, kind: str, name: str, written_ids: Sequence[str]) -> Program:
    text = _decode(data, name)
    if kind == "notebook":
        return _read_notebook(text, name, written_ids)
    return _read_python(text, name, written_ids)


# ----- notebooks --------------------------------------------------------------------------------------------------
@functools.cache
def _transformer() -> Any:
    from IPython.core.inputtransformer2 import TransformerManager  # imported on first use: IPython is slow to load

    return TransformerManager()


_transform_lock = threading.Lock()  # submissions are read from several grading threads at once


def _to_python(source: str) -> str:
    """IPython syntax (magics, !shell, ?help) as plain Python calls on get_ipython()."""
    try:
        with _transform_lock:
            return _transformer().transform_cell(source)
    except Exception:  # leave it to the child: a SyntaxError there is reported like any cell error
        return source


def _answer_id(cell: nbformat.NotebookNode, written_ids: Sequence[str]) -> str | None:
    tags = cell.get("metadata", {}).get("tags", [])
    for answer_id in written_ids:
        if f"answer:{answer_id}" in tags:
            return answer_id
    for answer_id in written_ids:
        number = re.sub(r"\D", "", answer_id)
        if re.search(rf"your answer to exercise\s*{number}\b", cell.source, re.IGNORECASE):
            return answer_id
    return None


def _read_notebook(text: str, name: str, written_ids: Sequence[str]) -> Program:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSubmission(f"{name} is not a valid notebook: broken JSON at line {exc.lineno}, "
                                f"column {exc.colno} ({exc.msg}); the file may be truncated") from None
    if not isinstance(data, dict) or ("cells" not in data and "worksheets" not in data):
        raise InvalidSubmission(f"{name} is not a valid notebook: it is JSON, but has no cells")
    try:
        notebook = nbformat.reads(text, as_version=4)  # converts nbformat 3 notebooks
    except Exception as exc:  # nbformat raises several kinds for malformed notebooks
        raise InvalidSubmission(f"{name} is not a valid notebook: {str(exc)[:300]}") from None
    notes = []
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        notes.append(f"the notebook does not fully follow the nbformat schema ({exc.message}); graded anyway")
    units, answers = [], {}
    count = 0
    for cell in notebook.cells:
        if cell.cell_type == "code":
            count += 1
            units.append(CodeUnit(f"cell [{count}]", f"<cell {count}>", _to_python(cell.source)))
        elif cell.cell_type == "markdown":
            answer_id = _answer_id(cell, written_ids)
            if answer_id and answer_id not in answers:
                answers[answer_id] = _answer_text(re.sub(r"^\s*\*\*your answer to exercise\s*\d+:?\*\*:?\s*", "",
                                                         cell.source, flags=re.IGNORECASE))
    return Program("notebook", tuple(units), tuple(answers.items()), "__main__", False, tuple(notes))


# ----- Python files -----------------------------------------------------------------------------------------------
def _read_python(text: str, name: str, written_ids: Sequence[str]) -> Program:
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        raise InvalidSubmission(f"{name} has a syntax error at {where}: {exc.msg}; nothing in it could run",
                                f"SyntaxError in {name} at {where}: {exc.msg}\n{(exc.text or '').rstrip()}") from None
    lines = text.splitlines(True)
    spans: list[list[int]] = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        end = node.end_lineno or node.lineno
        if spans and start <= spans[-1][1]:  # `a = 1; b = 2` on one line: one unit, run once
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    units = [CodeUnit(f"line {start}" if start == end else f"lines {start}-{end}", name,
                      "".join(lines[start - 1:end]), start) for start, end in spans]
    answers = {}
    wanted = {f"ANSWER_{answer_id.upper()}": answer_id for answer_id in written_ids}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in wanted:
                    answers[wanted[target.id]] = _answer_text(node.value.value)
    # A .py is imported as a module, so an `if __name__ == "__main__":` demo does not run.
    return Program("python", tuple(units), tuple(answers.items()), "submission", True)
