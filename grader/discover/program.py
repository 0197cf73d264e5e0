"""Read a submission file into code units (notebook cells or top-level statements) and written answers; and a
notebook's cells as its author wrote them, for the instructor's page (``notebook_cells``)."""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import json
import os
import re
import threading
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import nbformat

from grader.discover.finder import Submission
from grader.errors import InvalidSubmission
from grader.names import readable

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


# Far above any honest submission (the code is a few hundred lines; a notebook with its plots, a few MB), and what
# reading one costs the grader in memory, per submission graded at once, about twice over. A bigger file is a notebook
# saved with huge outputs or data pasted in: it is refused with a message rather than read.
MAX_SUBMISSION_BYTES = 100 * 1024 * 1024

# File signatures of what students upload by mistake instead of their code.
_SIGNATURES = {
    b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image", b"%PDF": "a PDF document",
    b"PK\x03\x04": "a ZIP archive or a Word/Office document", b"\xd0\xcf\x11\xe0": "an old Word/Office document",
    b"\x1f\x8b": "a gzip archive", b"7z\xbc\xaf": "a 7-Zip archive", b"Rar!": "a RAR archive",
    b"\x7fELF": "a compiled program",
}


def _mb(size: int) -> str:
    return f"{size / 2**20:.0f} MB"


def _decode(data: bytes, name: str, kind: str) -> str:
    what = "notebook (.ipynb)" if kind == "notebook" else "Python file (.py)"
    if not data.strip():
        size = f"only {len(data)} blank characters" if data else "0 bytes"
        return _refuse(f"{name} is empty ({size}): save your work and submit the file again")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _refuse(f"{name} is saved as UTF-16 text: save it as UTF-8 (the usual encoding) and submit it again")
    looks_like = next((kind_of for signature, kind_of in _SIGNATURES.items() if data.startswith(signature)), None)
    if looks_like or b"\x00" in data:  # text never holds a NUL byte; Python refuses source with one
        return _refuse(f"{name} is not a text file (it looks like {looks_like or 'binary data'}): "
                       f"submit your {what} itself")
    encoding = "utf-8-sig"
    if kind == "python":  # a `# -*- coding: latin-1 -*-` line makes a .py in that encoding valid Python
        with contextlib.suppress(SyntaxError):  # no readable declaration: UTF-8, as Python reads it
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding not in ("utf-8", "utf-8-sig"):
        with contextlib.suppress(UnicodeDecodeError, LookupError):
            return data.decode(encoding)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start  # not raised from here: the error holds all the bytes
    line, byte = data.count(b"\n", 0, start) + 1, data[start]
    return _refuse(f"{name} is not UTF-8 text (line {line} has the byte 0x{byte:02x}, probably from an editor "
                   f"saving in Latin-1 or Windows-1252): save it as UTF-8 and submit it again")


def _refuse(message: str) -> NoReturn:
    raise InvalidSubmission(message)


def read_submission(submission: Submission, *, written_ids: Sequence[str], digest: Any = None) -> Program:
    """Read a discovered submission's file into a program; InvalidSubmission says why it cannot be.

    ``digest`` (a hashlib object) is fed the file's bytes. The bytes and the text are dropped as soon as they are
    parsed, and a notebook's outputs as they are parsed, so a notebook with 50 MB of outputs costs little memory.
    """
    name, kind = readable(submission.path.name), submission.kind
    if submission.problem:
        _refuse(submission.problem)
    try:
        with open(submission.path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(MAX_SUBMISSION_BYTES + 1) if size <= MAX_SUBMISSION_BYTES else b""
    except PermissionError:
        _refuse(f"{name} could not be opened (permission denied): submit it again, or ask your instructor to check "
                f"the file's permissions")
    except IsADirectoryError:
        _refuse(f"{name} is a folder, not a file: submit the file itself")
    except OSError as exc:
        _refuse(f"{name} could not be read ({exc.strerror or exc}): submit it again")
    size = max(size, len(data))
    if size > MAX_SUBMISSION_BYTES:
        tip = ("clear all outputs in Jupyter (Edit > Clear Outputs of All Cells), save" if kind == "notebook"
               else "remove any data pasted into it")
        _refuse(f"{name} is {_mb(size)}, over the {_mb(MAX_SUBMISSION_BYTES)} limit for a submission: "
                f"{tip} and submit it again")
    if digest is not None:
        digest.update(data)
    text = _decode(data, name, kind)
    del data
    return _parse(text, kind=kind, name=name, written_ids=written_ids)


def read_program(data: bytes, *, kind: str, name: str, written_ids: Sequence[str]) -> Program:
    return _parse(_decode(data, name, kind), kind=kind, name=name, written_ids=written_ids)


def _parse(text: str, *, kind: str, name: str, written_ids: Sequence[str]) -> Program:
    if kind == "notebook":
        return _read_notebook(text, name, written_ids)
    return _read_python(text, name, written_ids)


# ----- notebooks --------------------------------------------------------------------------------------------------
@functools.cache
def _transformer() -> Any:
    from IPython.core.inputtransformer2 import TransformerManager  # imported on first use: IPython is slow to load

    return TransformerManager()


_transform_lock = threading.Lock()  # submissions are read from several grading threads at once


# What IPython's transforms act on: magics, !shell and ?help (and x = %magic, x = !cmd), autocall escapes at a line's
# start (/f x, ,f x, ;f x), pasted prompts (>>>, In [1]:, ...:). A cell with none of them (and no leading blank or
# indented first line) comes out of transform_cell as it went in, a newline added: most cells, at a millisecond each.
_MAYBE_IPYTHON = re.compile(r"[%!?]|^[ \t]*[/,;]|>>>|In \[|\.\.\.:", re.MULTILINE)


def _to_python(source: str) -> str:
    """IPython syntax (magics, !shell, ?help) as plain Python calls on get_ipython()."""
    if source and not source[0].isspace() and not _MAYBE_IPYTHON.search(source):
        return source if source.endswith("\n") else source + "\n"
    try:
        with _transform_lock:
            return _transformer().transform_cell(source)
    except Exception:  # leave it to the child: a SyntaxError there is reported like any cell error
        return source


def _answer_id(cell: dict, source: str, written_ids: Sequence[str]) -> str | None:
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    tags = tags if isinstance(tags, list) else []
    for answer_id in written_ids:
        if f"answer:{answer_id}" in tags:
            return answer_id
    for answer_id in written_ids:
        number = re.sub(r"\D", "", answer_id)
        if number and re.search(rf"your answer to exercise\s*{number}\b", source, re.IGNORECASE):
            return answer_id
    return None


def _drop_output(obj: dict) -> Any:
    """json object_hook: each output is dropped as soon as it is parsed (grading never needs them)."""
    return None if "output_type" in obj else obj


def _cells(data: dict) -> list:
    """The cells of a parsed notebook (nbformat 4; 3 and before keep them in worksheets)."""
    if "worksheets" in data:
        sheets = data["worksheets"] if isinstance(data["worksheets"], list) else []
        return [c for ws in sheets if isinstance(ws, dict) and isinstance(ws.get("cells"), list) for c in ws["cells"]]
    cells = data.get("cells")
    return cells if isinstance(cells, list) else []


def _text(source: Any) -> str:
    """A cell's source: a string, or (as Jupyter saves it) a list of lines."""
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def notebook_cells(path: Path) -> list[tuple[str, str]]:
    """(cell type, source) of a notebook's code and markdown cells, its saved outputs dropped while parsing.

    The sources are as the student wrote them (``read_submission``'s units have IPython syntax made Python, and
    leave markdown out), read from the JSON without nbformat's conversion and validation: nbformat 3's code
    ``input`` and heading cells (as markdown) are read here directly. Raises ValueError (too big, not JSON, not
    UTF-8), OSError, or KeyError, TypeError or AttributeError for JSON not laid out as a notebook.
    """
    if path.stat().st_size > MAX_SUBMISSION_BYTES:
        raise ValueError("too big")
    data = json.loads(path.read_text(encoding="utf-8-sig"), object_hook=_drop_output)
    found = []
    for cell in _cells(data):
        kind = cell.get("cell_type")
        if kind == "code":
            found.append(("code", _text(cell.get("source", cell.get("input")))))
        elif kind == "markdown":
            found.append(("markdown", _text(cell.get("source"))))
        elif kind == "heading":
            found.append(("markdown", "#" * int(cell.get("level", 1)) + " " + _text(cell.get("source"))))
    return found


_RESAVE = "re-save it in Jupyter and submit it again"


def _json_error(text: str, name: str, exc: json.JSONDecodeError) -> str:
    again = _RESAVE
    start = len(text) - len(text.lstrip())
    if exc.pos == start and not text.lstrip().startswith(("{", "[")):
        return (f"{name} is not a notebook: it holds plain text, not notebook JSON: submit the .ipynb file that "
                f"Jupyter saves (or Python code as a .py file)")
    end = len(text.rstrip())
    if exc.pos >= end or exc.msg.startswith("Unterminated string"):  # a string is unterminated only at the end
        line = text.count("\n", 0, end) + 1
        return f"{name} is not a valid notebook (broken JSON: it ends early, at line {line}): {again}"
    return f"{name} is not a valid notebook (broken JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}): {again}"


def _read_notebook(text: str, name: str, written_ids: Sequence[str]) -> Program:
    again = _RESAVE
    try:
        data = json.loads(text, object_hook=_drop_output)
    except json.JSONDecodeError as exc:
        raise InvalidSubmission(_json_error(text, name, exc)) from None
    except RecursionError:
        raise InvalidSubmission(f"{name} is not a valid notebook (its JSON is nested too deeply): {again}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise InvalidSubmission(f"{name} is not a valid notebook: it is JSON, but has no cells: {again}")
    notes = []
    for cell in _cells(data):
        if isinstance(cell, dict):
            if "outputs" in cell:
                cell["outputs"] = []
            cell.pop("attachments", None)  # pasted images: not needed either
    major = data.setdefault("nbformat", 4)  # a hand-made notebook without a version: read as the current one
    if type(major) is not int or major not in nbformat.versions:
        raise InvalidSubmission(f"{name} says it is in notebook format {major!r}, which the grader cannot read: "
                                f"open it in a current Jupyter, save it and submit it again")
    try:
        notebook = nbformat.versions[major].to_notebook_json(data, minor=data.get("nbformat_minor", 0))
        if major != nbformat.current_nbformat:
            notebook = nbformat.convert(notebook, nbformat.current_nbformat)
            notes.append(f"converted from the old notebook format {major} to format {nbformat.current_nbformat} "
                         f"to grade it")
    except (AttributeError, KeyError) as exc:  # how nbformat says a part lacks a field (or is not an object)
        field = str(exc.args[0]) if exc.args else ""
        detail = f"a part of it lacks its '{field}' field" if field.isidentifier() else "its parts are not laid out " \
                 "as Jupyter saves them"
        raise InvalidSubmission(f"{name} is not a valid notebook ({detail}): {again}") from None
    except Exception as exc:  # nbformat raises several kinds for malformed notebooks
        raise InvalidSubmission(f"{name} is not a valid notebook ({str(exc)[:200]}): {again}") from None
    del data
    minor = notebook.get("nbformat_minor")
    for number, cell in enumerate(notebook.get("cells", [])):
        if isinstance(cell, dict) and isinstance(minor, int) and minor >= 5:
            cell.setdefault("id", f"cell-{number}")  # else nbformat warns on stderr, for a field grading never reads
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as exc:
        notes.append(f"the notebook does not fully follow the nbformat schema ({exc.message[:200]}); graded anyway")
    except Exception:  # nbformat asserts on some malformed fields (a version that is not a number)
        notes.append("the notebook does not fully follow the nbformat schema; graded anyway")
    units, answers = [], {}
    count = 0
    for cell in notebook.get("cells", []):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown"):
            continue
        source = cell.get("source", "")
        if not isinstance(source, str):
            raise InvalidSubmission(f"{name} is not a valid notebook (a cell's source is not text): {again}")
        if cell["cell_type"] == "code":
            count += 1
            units.append(CodeUnit(f"cell [{count}]", f"<cell {count}>", _to_python(source)))
        else:
            answer_id = _answer_id(cell, source, written_ids)
            if answer_id and answer_id not in answers:
                answers[answer_id] = _answer_text(re.sub(r"^\s*\*\*your answer to exercise\s*\d+:?\*\*:?\s*", "",
                                                         source, flags=re.IGNORECASE))
    return Program("notebook", tuple(units), tuple(answers.items()), "__main__", False, tuple(notes))


# ----- Python files -----------------------------------------------------------------------------------------------
def _read_python(text: str, name: str, written_ids: Sequence[str]) -> Program:
    if text.lstrip().startswith("{") and '"nbformat"' in text and '"cells"' in text:  # would run as a dict display
        raise InvalidSubmission(f"{name} holds a Jupyter notebook, not Python code: submit it as a .ipynb file")
    try:
        tree = ast.parse(text, filename=name)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        raise InvalidSubmission(f"{name} has a syntax error at {where}: {exc.msg}; nothing in it could run",
                                f"SyntaxError in {name} at {where}: {exc.msg}\n{(exc.text or '').rstrip()}") from None
    except (RecursionError, MemoryError):
        raise InvalidSubmission(f"{name} is too deeply nested for Python to read; nothing in it could run") from None
    # Split where Python counts lines (the node's line numbers): str.splitlines also splits at form feeds (PEP 8's
    # page breaks) and U+2028, which would shift every statement after one.
    lines = io.StringIO(text, newline="").readlines()
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
