"""Read a submission file into code units (notebook cells or top-level statements) and written answers; and a
notebook's cells as its author wrote them, with its pasted images and the images it was saved with, for the
instructor's page (``notebook_file``).

A notebook is graded as far as its cells can be read: one nbformat cannot read or validate (a missing field, a wrong
type, an unknown output type) is graded with a note that names the first thing wrong; only JSON that does not parse,
or that holds no list of cells, is refused."""

from __future__ import annotations

import ast
import base64
import contextlib
import functools
import io
import json
import os
import re
import threading
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import nbformat

from grader.discover.finder import Submission
from grader.errors import InvalidSubmission
from grader.names import readable

# What the templates put in an answer cell before the student writes anything, and in place of a code answer (the
# grader reads both back: an untouched answer is no answer, an untouched raise is "not written yet").
PLACEHOLDER_ANSWER = "_Write your answer here._"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError")


# The one rule for an answer's header: a first line "Your answer", or "Your answer to ..." (bold, italic or a
# heading), that ends there or at a colon ("**Your answer to exercise 1:**", "Your answer to question 3:", "### Your
# answer") is the template's, not the answer: a blank template's answer is empty, whatever its header says.
_MARKUP = r"(?:\*\*|__|\*|_)?"
ANSWER_HEADER = re.compile(rf"^\s*(?:#{{1,6}}[ \t]*)?{_MARKUP}[ \t]*your answer(?:[ \t]+to[ \t]+[^:*_\n]{{1,60}})?"
                           rf"[ \t]*{_MARKUP}[ \t]*(?P<colon>:)?[ \t]*{_MARKUP}[ \t]*", re.IGNORECASE)


def _answer_text(text: str) -> str:
    """The student's answer: the template's header line and placeholder left out."""
    header = ANSWER_HEADER.match(text)
    if header and (header["colon"] or text[header.end():].startswith("\n") or header.end() == len(text)):
        text = text[header.end():]
    return text.replace(PLACEHOLDER_ANSWER, "").strip()


@dataclass(frozen=True)
class CodeUnit:
    label: str  # "cell [3]" or "lines 10-24", as the report shows it
    filename: str  # what tracebacks show
    source: str
    first_line: int = 1

    def defines(self, name: str) -> bool | None:
        """Whether the unit's code would bind ``name`` at the top level (define, import or assign it), had it run
        to the end; None when it does not parse or star-imports, and so might have."""
        names = _unit_names(self.source)
        return None if names is None or "*" in names else name in names


    def binds_anywhere(self, name: str) -> bool:
        """Whether ``name`` is bound anywhere in the unit, function bodies included (a local, a parameter)."""
        return name in (_all_names(self.source) or ())


@functools.lru_cache(maxsize=256)
def _unit_names(source: str) -> frozenset[str] | None:
    try:
        return frozenset(top_level_names(ast.parse(source)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@functools.lru_cache(maxsize=256)
def _all_names(source: str) -> frozenset[str] | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return frozenset(names)


def top_level_names(tree: ast.AST) -> set[str]:
    """The names a module's code binds outside function and class bodies: what it defines or imports, assigns,
    loops or opens ``as``; the statements under ``if``/``try``/``with`` at the top level included."""
    names: set[str] = set()
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue  # its body binds its own names
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # a comprehension's variables are its own
        pending.extend(ast.iter_child_nodes(node))
    return names


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


def _answer_id(metadata: Any, source: str, written_ids: Sequence[str]) -> str | None:
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    tags = tags if isinstance(tags, list) else []
    for answer_id in written_ids:
        if f"answer:{answer_id}" in tags:
            return answer_id
    for answer_id in written_ids:
        number = re.sub(r"\D", "", answer_id)
        if number and re.search(rf"your answer to (?:exercise|question|part|q)\s*{number}\b", source, re.IGNORECASE):
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


def _source_text(source: Any) -> str | None:
    """A cell's source: a string, or (as Jupyter saves it) a list of lines; None for anything else (a number, a list
    holding one), which no editor writes and whose code cannot be known."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


# Where str.splitlines ends a line: nbformat 3's writer split sources with splitlines(True), so a line may end with any.
_LINE_ENDS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _old_source_text(source: Any) -> str | None:
    """A cell's source in nbformat 3 (and before): lines with their ends, as splitlines(True) left them, or (from some
    older writers) without, to be joined with newlines. nbformat guesses which from the first line's end alone, so a
    form feed ending it joins a cell's lines with newlines it never had; the grader and the page both read it so."""
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        ended = len(source) < 2 or any(line.endswith(_LINE_ENDS) for line in source[:-1])
        return "".join(source) if ended else "\n".join(source)
    return _source_text(source)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _printable(text: str) -> str:
    """JSON may spell a lone surrogate (\\ud800), which no page can be encoded with: it becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


# Images a page may show as <img src="data:...">, in the order one is picked from an output's bundle. An SVG shown so
# is drawn without its scripts and loads nothing.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_V3_IMAGES = {"png": "image/png", "jpeg": "image/jpeg", "svg": "image/svg+xml"}  # nbformat 3 outputs' own keys
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class NotebookImage:
    """An image the notebook holds: a cell's attachment (a pasted image) or an output it was saved with."""

    mime: str
    data: str | None  # base64; None when not kept (past the reader's limit) or not readable
    size: int  # characters of base64: what showing it adds to a page
    readable: bool = True  # False: not base64 (or SVG text), so never shown


@dataclass(frozen=True)
class SavedOutput:
    """An output the notebook was saved with that a page can show: an image, or a widget (which needs a kernel)."""

    kind: str  # "image" or "widget"
    image: NotebookImage | None = None


@dataclass(frozen=True)
class NotebookCell:
    kind: str  # code, markdown (nbformat 3's headings included) or raw
    source: str | None  # None when the source is not text: such a code cell is not graded
    attachments: tuple[tuple[str, NotebookImage], ...] = ()  # (name, image): what `attachment:name` refers to
    saved: tuple[SavedOutput, ...] = ()  # a code cell's saved images and widgets (other saved outputs are left out)


@dataclass(frozen=True)
class NotebookFile:
    """A notebook as its author saved it, read without nbformat's conversion, for the instructor's page."""

    cells: tuple[NotebookCell, ...]
    problem: str  # how it does not follow the nbformat schema, one line; "" when it does


def _light_output(obj: dict) -> Any:
    """json object_hook: an output's text is blanked as soon as it is parsed (only its images are ever shown); its
    keys stay, so the notebook can still be checked against the schema."""
    if "output_type" not in obj:
        return obj
    for key, value in obj.items():
        if key in ("text", "traceback", "html", "latex", "javascript", "json", "markdown"):
            obj[key] = [] if isinstance(value, list) else "" if isinstance(value, str) else value
        elif key == "data" and isinstance(value, dict):
            for mime in value:
                if mime not in IMAGE_TYPES and mime != WIDGET_VIEW and isinstance(value[mime], (str, list)):
                    value[mime] = ""
    return obj


def read_image(mime: str, value: Any) -> NotebookImage:
    """An image as a notebook holds it (base64, or an SVG's XML text; a string or a list of lines), as base64."""
    text = _source_text(value)
    if text is None or mime not in IMAGE_TYPES:
        return NotebookImage(mime, None, 0, readable=False)
    if mime == "image/svg+xml" and text.lstrip().startswith("<"):  # an output's SVG is XML text
        data = base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")
    else:
        data = _SPACE.sub("", text)  # base64 as some writers wrap it in lines
        if not _BASE64.fullmatch(data):
            return NotebookImage(mime, None, len(data), readable=False)
    return NotebookImage(mime, data, len(data))


class _ImageBudget:
    """Keeps images while their sizes add up to ``limit`` characters; past it, only their types and sizes."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def take(self, mime: str, value: Any) -> NotebookImage:
        image = read_image(mime, value)
        if image.data is None:
            return image
        if image.size > self.left:
            return replace(image, data=None)
        self.left -= image.size
        return image


def _pick_image(bundle: dict) -> str | None:
    return next((mime for mime in IMAGE_TYPES if mime in bundle), None)


def _saved_outputs(outputs: Any, budget: _ImageBudget) -> tuple[SavedOutput, ...]:
    saved = []
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict):
            continue
        data = output.get("data") if isinstance(output.get("data"), dict) else {}
        bundle = {**data, **{mime: output[key] for key, mime in _V3_IMAGES.items() if key in output}}
        mime = _pick_image(bundle)
        if mime is not None:
            saved.append(SavedOutput("image", budget.take(mime, bundle[mime])))
        elif WIDGET_VIEW in bundle:
            saved.append(SavedOutput("widget"))
        for place, key in [*((data, m) for m in IMAGE_TYPES), *((output, k) for k in _V3_IMAGES)]:
            if isinstance(place.get(key), (str, list)):  # taken: what stays is only checked against the schema
                place[key] = ""
    return tuple(saved)


def _referenced(name: str, source: str) -> bool:
    from urllib.parse import quote

    return f"attachment:{name}" in source or f"attachment:{quote(name)}" in source


def _attachments(value: Any, source: str | None, kind: str,
                 budget: _ImageBudget) -> tuple[tuple[str, NotebookImage], ...]:
    """A cell's pasted images: a markdown cell's as its text refers to them (Jupyter drops the others on save), a raw
    cell's all (it shows none itself)."""
    found = []
    for name, bundle in value.items() if isinstance(value, dict) else ():
        if not isinstance(bundle, dict) or not isinstance(name, str):
            continue
        if kind == "markdown" and not _referenced(name, source or ""):
            continue
        mime = _pick_image(bundle) or next(iter(bundle), None)
        if mime is None:
            continue
        found.append((_printable(name), budget.take(mime, bundle[mime])))
        for key in bundle:
            if isinstance(bundle[key], (str, list)):
                bundle[key] = ""
    return tuple(found)


def _plain_cells(data: dict, budget: _ImageBudget | None = None) -> list[tuple[NotebookCell, Any]]:
    """Each cell of a parsed notebook, read without nbformat: (the cell, its metadata). nbformat 3's code ``input``
    and heading cells (as markdown, as nbformat's conversion makes them) are read here directly."""
    text_of = _old_source_text if "worksheets" in data else _source_text
    found = []
    for cell in _cells(data):
        if not isinstance(cell, dict):
            continue
        kind = cell.get("cell_type")
        if kind == "heading":
            level = cell.get("level")
            level = level if type(level) is int and 1 <= level <= 6 else 1
            text = text_of(cell.get("source", ""))
            kind, source = "markdown", None if text is None else "#" * level + " " + text
        elif kind == "code":
            source = text_of(cell.get("input" if "worksheets" in data else "source", ""))
        elif kind in ("markdown", "raw"):
            source = text_of(cell.get("source", ""))
        else:
            continue
        source = None if source is None else _printable(source)
        attachments: tuple[tuple[str, NotebookImage], ...] = ()
        saved: tuple[SavedOutput, ...] = ()
        if budget is not None:
            if kind == "code":
                saved = _saved_outputs(cell.get("outputs"), budget)
            else:
                attachments = _attachments(cell.get("attachments"), source, kind, budget)
        found.append((NotebookCell(kind, source, attachments, saved), cell.get("metadata")))
    return found


def schema_problem(data: dict) -> str:
    """How a parsed notebook does not follow its nbformat version's schema, in one line; "" when it does.

    Cell ids, required from format 4.5, are not asked for: the grader reads cells by position, and Jupyter adds ids
    to a notebook without them when it opens it."""
    from nbformat.validator import iter_validate

    major, minor = data.get("nbformat"), data.get("nbformat_minor", 0)
    if type(major) is not int or major not in nbformat.versions:
        return f"it says it is in notebook format {major!r}, which nbformat does not know"
    if type(minor) is not int:
        return f"its nbformat_minor is {minor!r}, not a number"
    idless = [c for c in _cells(data) if isinstance(c, dict) and "id" not in c] if (major, minor) >= (4, 5) else []
    for cell in idless:
        cell["id"] = "cell"
    try:
        error = next(iter_validate(data, version=major, version_minor=minor), None)
    except Exception as exc:  # nbformat asserts on some malformed fields
        return f"nbformat could not check it ({type(exc).__name__})"
    finally:
        for cell in idless:
            del cell["id"]
    if error is None:
        return ""
    where = "/".join(str(part) for part in getattr(error, "absolute_path", ()))
    message = " ".join(str(getattr(error, "message", error)).split())
    instance = getattr(error, "instance", None)
    if isinstance(instance, dict) and getattr(error, "validator", None) in ("oneOf", "anyOf"):  # not its repr
        key, what = next(((k, w) for k, w in (("output_type", "an output"), ("cell_type", "a cell")) if k in instance),
                         ("", "a cell without a cell_type" if re.search(r"cells/\d+$", where) else "a part"))
        kind = f" of type {str(instance[key])[:40]!r}" if key else ""
        message = f"{what}{kind} not laid out as the format allows"
    if len(message) > 160:
        message = message[:150] + " [...]"
    return f"{where}: {message}" if where else message


# What a page embeds of a notebook's images at most (characters of base64, about 3.75 MB of image): past it, a page
# with all the figures of a 50 MB notebook would be as big.
NOTEBOOK_IMAGES_SHOWN = 5 * 2**20


def notebook_file(path: Path, *, image_limit: int = NOTEBOOK_IMAGES_SHOWN) -> NotebookFile:
    """A notebook's cells as its author wrote them (code, markdown and raw), with their attachments and the images
    and widgets of the outputs they were saved with, and how it strays from the nbformat schema.

    The sources are as the student wrote them (``read_submission``'s units have IPython syntax made Python, and
    leave markdown out). Images are kept in the notebook's order while they add up to ``image_limit`` characters of
    base64; past it, only their types and sizes. Text outputs are dropped while parsing. Raises ValueError (too big,
    not JSON, not UTF-8, JSON not laid out as a notebook) or OSError.
    """
    if path.stat().st_size > MAX_SUBMISSION_BYTES:
        raise ValueError("too big")
    data = json.loads(path.read_text(encoding="utf-8-sig"), object_hook=_light_output)
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise ValueError("JSON, but not a notebook: it has no cells")
    cells = tuple(cell for cell, _ in _plain_cells(data, _ImageBudget(image_limit)))
    return NotebookFile(cells, schema_problem(data))


def notebook_cells(path: Path) -> list[tuple[str, str]]:
    """(cell type, source) of a notebook's code and markdown cells, as ``notebook_file`` reads them: the code cells
    are, in order, the units the grader ran (a cell whose source is not text is not one, and is left out)."""
    return [(c.kind, c.source) for c in notebook_file(path, image_limit=0).cells
            if c.kind in ("code", "markdown") and c.source is not None]


_RESAVE = "re-save it in Jupyter and submit it again"


def _cells_count(number: int) -> str:
    return "a cell" if number == 1 else f"{number} cells"


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
    if "worksheets" in data:  # before nbformat joins them its own way (see _old_source_text)
        for cell in _cells(data):
            for key in ("input", "source") if isinstance(cell, dict) else ():
                text = _old_source_text(cell.get(key))
                if text is not None:
                    cell[key] = text
    try:
        notebook = nbformat.versions[major].to_notebook_json(data, minor=data.get("nbformat_minor", 0))
        if major != nbformat.current_nbformat:
            notebook = nbformat.convert(notebook, nbformat.current_nbformat)
    except Exception:  # nbformat's own reading fails on parts not laid out as it expects: the cells are read below
        notebook = None
    if major != nbformat.current_nbformat:
        notes.append(f"converted from the old notebook format {major} to format {nbformat.current_nbformat} "
                     f"to grade it")
    if notebook is not None:
        problem = schema_problem(notebook)
        if problem:
            notes.append(f"the notebook does not fully follow the nbformat schema ({problem}); graded anyway")
        cells = [(cell.get("cell_type"), _source_text(cell.get("source", "")), cell.get("metadata"))
                 for cell in notebook.get("cells", []) if isinstance(cell, dict)]
    else:
        problem = schema_problem(data) or "its parts are not laid out as Jupyter saves them"
        notes.append(f"the notebook does not follow the nbformat schema ({problem}); graded as far as its cells "
                     f"could be read")
        cells = [(cell.kind, cell.source, metadata) for cell, metadata in _plain_cells(data)]
    del data
    units, answers = [], {}
    count = unreadable = 0
    for kind, source, metadata in cells:
        if kind not in ("code", "markdown"):
            continue
        if source is None:
            unreadable += 1
        elif kind == "code":
            count += 1
            units.append(CodeUnit(f"cell [{count}]", f"<cell {count}>", _to_python(source)))
        else:
            answer_id = _answer_id(metadata, source, written_ids)
            if answer_id and answer_id not in answers:
                answers[answer_id] = _answer_text(source)
    if unreadable:
        notes.append(f"{_cells_count(unreadable)} whose source is not text (neither a string nor a list of lines) "
                     f"could not be read, and {'was' if unreadable == 1 else 'were'} left out")
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
