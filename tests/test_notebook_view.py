"""Notebooks as Jupyter and its relatives write them, through the real reader and the instructor page's real renderer.

Every nbformat 4 minor version and nbformat 3, JupyterLab's, classic Notebook's, VS Code's, Colab's and Kaggle's
layouts (tests/fixtures/notebooks/, one each), pasted images (cell attachments) present and dangling, the outputs a
notebook is saved with (images shown, labelled as saved; everything else left out), widgets, and notebooks nbformat
cannot validate. The pages are rendered straight from a ``SubmissionResult`` (no grading) except in the last tests,
which grade a notebook with a pasted image in the real sandbox and open its instructor page in Chromium.
"""

from __future__ import annotations

import base64
import html
import json
import random
import re
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.discover import Submission, notebook_cells, read_program
from grader.discover.program import NOTEBOOK_IMAGES_SHOWN
from grader.errors import InvalidSubmission
from grader.report import render_instructor_report
from grader.results import SubmissionResult, UnitResult

from .conftest import MEASURED, ROOT, SAMPLES

FIXTURES = ROOT / "tests" / "fixtures" / "notebooks"
TITLE = "Attention scoring functions (d2l 11.3)"
SAVED_TEXT = "SAVED-TEXT-OUTPUT"  # in every saved text output: the page must never show it
WIDGET_STATE = {"application/vnd.jupyter.widget-state+json": {"version_major": 2, "version_minor": 0, "state": {
    "0a1b2c3d4e5f": {"model_name": "IntSliderModel", "model_module": "@jupyter-widgets/controls",
                     "model_module_version": "2.0.0", "state": {"value": 3}}}}}
WIDGET_VIEW = {"application/vnd.jupyter.widget-view+json": {"model_id": "0a1b2c3d4e5f", "version_major": 2,
                                                            "version_minor": 0},
               "text/plain": f"IntSlider(value=3) {SAVED_TEXT}"}
HOSTILE = ("<script>alert(1)</script>", '<img src=x onerror="alert(2)">', "<svg onload=alert(3)><circle/></svg>",
           '<a href="javascript:alert(4)" onclick="alert(5)">link</a>', "[md](javascript:alert(6))",
           '<iframe src="https://example.com"></iframe>', "<style>body{display:none}</style>",
           "![remote](https://example.com/x.png)", '<img src="data:image/svg+xml;utf8,<svg onload=alert(7)>">',
           "```\n<script>alert(8)</script>\n```", "<!-- <script>alert(9)</script> -->", "$x^2$", "%%html")


def png(width: int, height: int, rgb: tuple[int, int, int]) -> str:
    """A real PNG (a browser draws it), as base64."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode()


PASTED_PNG = png(12, 8, (200, 40, 40))
SAVED_PNG = png(16, 10, (44, 114, 142))
FAKE_JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(range(60))).decode()  # the bytes are never decoded here
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" onload="alert(10)"><script>alert(11)</script>'
       '<rect width="40" height="20" fill="#2c728e"/></svg>')
PASTED_SVG = SVG.replace("#2c728e", "#c82828")
IMAGES = {"image/png": PASTED_PNG, "image/jpeg": FAKE_JPEG,  # an attachment's SVG is base64, like the others
          "image/svg+xml": base64.b64encode(PASTED_SVG.encode()).decode()}


def base64_of(mime: str, value: str) -> str:
    """How the page spells an image: base64 (an output's SVG is XML text)."""
    return base64.b64encode(value.encode()).decode() if value.lstrip().startswith("<") else value


# Pages --------------------------------------------------------------------------------------------------------------


def result_for(student: str, code_cells: int, *, kind: str = "notebook") -> SubmissionResult:
    """A graded result whose units are a notebook's code cells, each having printed CAPTURED-<n>."""
    units = tuple(UnitResult(f"cell [{n}]", "ok", f"CAPTURED-{n}\n", "", "") for n in range(1, code_cells + 1))
    return SubmissionResult(student, "attention_scoring", f"{student}.ipynb", kind, "", "graded", "", (), units, (), (),
                            "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01+00:00", 1.0)


def instructor_page(path: Path, code_cells: int) -> str:
    submission = Submission(path.stem, path, "notebook", datetime.now(UTC))
    return render_instructor_report(result_for(path.stem, code_cells), title=TITLE, submission=submission)


def text_of(fragment: str) -> str:
    """HTML as a reader sees it: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def notebook_part(page: str) -> str:
    """The page's notebook section, which must hold the rendered notebook."""
    section = page.split('<section id="notebook">')[1].split("</section>")[0]
    assert "could not be rendered" not in section, section[:2000]
    assert '<div class="notebook">' in section, section[:2000]
    return section


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags_of(fragment: str) -> list[tuple[str, dict[str, str | None]]]:
    """The elements a browser builds from the HTML, with their attributes."""
    parser = _Tags()
    parser.feed(fragment)
    parser.close()
    return parser.tags


def assert_nothing_runs_or_loads(section: str) -> None:
    assert "<script" not in section.lower() and "<svg" not in section.lower()
    for tag, attributes in tags_of(section):
        assert tag not in ("script", "iframe", "object", "embed", "style", "link", "svg", "frame", "base"), tag
        assert not [a for a in attributes if a.startswith("on") or a in ("style", "srcset")], (tag, attributes)
        if tag == "img":
            assert (attributes.get("src") or "").startswith("data:image/"), attributes
        assert not (attributes.get("href") or "").strip().lower().startswith(("javascript", "http", "//", "data")), \
            attributes


def shown_images(section: str) -> list[str]:
    return [attributes.get("src") or "" for tag, attributes in tags_of(section) if tag == "img"]


# Notebooks built by hypothesis: one notebook, written in each format ------------------------------------------------


@dataclass
class Output:
    kind: str  # stream, execute_result, png, jpeg, svg, html, widget, error


@dataclass
class Cell:
    kind: str  # markdown, code, raw
    text: str
    as_lines: bool
    pasted: list[tuple[str, str]] = field(default_factory=list)  # (name, mime) held by the cell and referred to
    dangling: list[str] = field(default_factory=list)  # names referred to that the cell does not hold
    outputs: list[Output] = field(default_factory=list)
    executed: int | None = None


@dataclass
class Notebook:
    cells: list[Cell]
    flavour: str  # jupyterlab, classic, vscode, colab, kaggle
    widgets: bool

    def code(self) -> list[str]:
        return [cell.text for cell in self.cells if cell.kind == "code"]


VERSIONS = [(4, minor) for minor in range(6)] + [(3, 0)]
NAMES = ("image.png", "image-2.png", "Screenshot 2026-01-05 at 10.02.11.png", "plot.svg", "photo.jpg")
texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE)), max_size=4).map("\n".join)


@st.composite
def cells(draw: st.DrawFn) -> Cell:
    kind = draw(st.sampled_from(["markdown", "markdown", "code", "code", "raw"]))
    cell = Cell(kind, draw(texts), draw(st.booleans()))
    if kind in ("markdown", "raw"):
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
        split = draw(st.integers(0, len(names)))
        mimes = st.sampled_from(list(IMAGES))
        cell.pasted = [(name, draw(mimes)) for name in names[:split]]
        cell.dangling = names[split:] if kind == "markdown" else []
    else:
        cell.executed = draw(st.none() | st.integers(1, 99))
        kinds = st.sampled_from(["stream", "execute_result", "png", "jpeg", "svg", "html", "widget", "error"])
        cell.outputs = [Output(k) for k in draw(st.lists(kinds, max_size=4))]
    return cell


notebooks = st.builds(Notebook, st.lists(cells(), min_size=1, max_size=6),
                      st.sampled_from(["jupyterlab", "classic", "vscode", "colab", "kaggle"]), st.booleans())


def reference(name: str) -> str:
    """How JupyterLab writes a pasted image's name in the markdown: %-encoded (a space would end the link)."""
    return name.replace(" ", "%20")


def markdown_source(cell: Cell) -> str:
    refs = "".join(f"![{name}](attachment:{reference(name)})\n\n" for name, _ in cell.pasted)
    refs += "".join(f"![{name}](attachment:{reference(name)})\n\n" for name in cell.dangling)
    return refs + cell.text if cell.kind == "markdown" else cell.text


def source_field(text: str, as_lines: bool) -> str | list[str]:
    return text.splitlines(keepends=True) if as_lines else text


def output_v4(output: Output, count: int | None) -> dict[str, Any]:
    meta = {"outputId": "7c1d2e3f-4a5b"} if count is None else {}  # Colab's, on some outputs
    if output.kind == "stream":
        return {"output_type": "stream", "name": "stdout", "text": [f"{SAVED_TEXT}\n", "more\n"]}
    if output.kind == "error":
        return {"output_type": "error", "ename": "ValueError", "evalue": SAVED_TEXT,
                "traceback": [f"\x1b[0;31mValueError\x1b[0m: {SAVED_TEXT}"]}
    data: dict[str, Any] = {
        "execute_result": {"text/plain": [SAVED_TEXT]},
        "png": {"image/png": SAVED_PNG, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
        "jpeg": {"image/jpeg": FAKE_JPEG + "\n", "text/plain": ["<Figure>"]},
        "svg": {"image/svg+xml": SVG.replace("><", ">\n<").splitlines(keepends=True)},
        "html": {"text/html": [f"<b>{SAVED_TEXT}</b><script>alert('saved')</script>"], "text/plain": [SAVED_TEXT]},
        "widget": WIDGET_VIEW,
    }[output.kind]
    if output.kind == "execute_result":
        return {"output_type": "execute_result", "execution_count": count, "metadata": meta, "data": data}
    return {"output_type": "display_data", "metadata": meta, "data": data}


def output_v3(output: Output, count: int | None) -> dict[str, Any] | None:
    if output.kind == "stream":
        return {"output_type": "stream", "stream": "stdout", "text": [f"{SAVED_TEXT}\n"]}
    if output.kind == "error":
        return {"output_type": "pyerr", "ename": "ValueError", "evalue": SAVED_TEXT, "traceback": [SAVED_TEXT]}
    if output.kind == "execute_result":
        return {"output_type": "pyout", "prompt_number": count or 1, "metadata": {}, "text": [SAVED_TEXT]}
    keyed = {"png": {"png": SAVED_PNG}, "jpeg": {"jpeg": FAKE_JPEG}, "svg": {"svg": SVG},
             "html": {"html": [f"<b>{SAVED_TEXT}</b><script>alert('saved')</script>"]}}
    if output.kind not in keyed:
        return None  # no widgets in nbformat 3
    return {"output_type": "display_data", "metadata": {}, **keyed[output.kind]}


FLAVOURS: dict[str, tuple[dict[str, Any], Callable[[int, str], dict[str, Any]]]] = {
    "jupyterlab": ({"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                    "language_info": {"name": "python", "version": "3.11.4"}}, lambda n, kind: {}),
    "classic": ({"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
                lambda n, kind: {"scrolled": True} if kind == "code" else {}),
    "vscode": ({"language_info": {"name": "python"}, "orig_nbformat": 4,
                "vscode": {"interpreter": {"hash": "4f9a1c2b7d3e8f60"}}}, lambda n, kind: {}),
    "colab": ({"colab": {"provenance": [], "name": "attention.ipynb"}, "accelerator": "GPU",
               "kernelspec": {"display_name": "Python 3", "name": "python3"}},
              lambda n, kind: {"id": f"Xq3vY7pLk{n:03d}",
                               **({"colab": {"base_uri": "https://localhost:8080/"}} if kind == "code" else {})}),
    "kaggle": ({"kaggle": {"accelerator": "none", "dataSources": [], "isInternetEnabled": False}},
               lambda n, kind: {"execution": {"iopub.status.busy": "2026-01-05T10:00:00Z"}, "trusted": True}
               if kind == "code" else {}),
}


def write_v4(notebook: Notebook, minor: int) -> dict[str, Any]:
    top, cell_metadata = FLAVOURS[notebook.flavour]
    cells = []
    for n, cell in enumerate(notebook.cells):
        written: dict[str, Any] = {"cell_type": cell.kind, "metadata": cell_metadata(n, cell.kind)}
        if minor >= 5:
            written["id"] = f"cell-{n}"
        if cell.kind == "code":
            written["source"] = source_field(cell.text, cell.as_lines)
            written["execution_count"] = cell.executed
            written["outputs"] = [output_v4(o, cell.executed) for o in cell.outputs]
        else:
            written["source"] = source_field(markdown_source(cell), cell.as_lines)
            if cell.pasted and minor >= 1:  # attachments came with nbformat 4.1
                written["attachments"] = {name: {mime: IMAGES[mime]} for name, mime in cell.pasted}
        cells.append(written)
    metadata = {**top, **({"widgets": WIDGET_STATE} if notebook.widgets else {})}
    return {"nbformat": 4, "nbformat_minor": minor, "metadata": metadata, "cells": cells}


def write_v3(notebook: Notebook) -> dict[str, Any]:
    cells = []
    for cell in notebook.cells:
        if cell.kind == "code":
            outputs = [o for o in (output_v3(o, cell.executed) for o in cell.outputs) if o is not None]
            cells.append({"cell_type": "code", "collapsed": False, "input": source_field(cell.text, cell.as_lines),
                          "language": "python", "metadata": {}, "outputs": outputs,
                          **({"prompt_number": cell.executed} if cell.executed is not None else {})})
        else:
            cells.append({"cell_type": cell.kind, "metadata": {},
                          "source": source_field(markdown_source(cell), cell.as_lines)})
    return {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""}, "worksheets": [{"metadata": {},
                                                                                            "cells": cells}]}


def write(notebook: Notebook, version: tuple[int, int]) -> dict[str, Any]:
    return write_v3(notebook) if version[0] == 3 else write_v4(notebook, version[1])


def has_attachments(version: tuple[int, int]) -> bool:
    return version >= (4, 1)


# The properties ------------------------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(notebook=notebooks, version=st.sampled_from(VERSIONS))
def test_any_notebook_in_any_format_is_shown_with_its_images_and_nothing_that_runs(
        tmp_path: Path, notebook: Notebook, version: tuple[int, int]) -> None:
    path = tmp_path / "student.ipynb"
    path.write_text(json.dumps(write(notebook, version)), encoding="utf-8")
    section = notebook_part(instructor_page(path, len(notebook.code())))
    assert_nothing_runs_or_loads(section)
    assert "does not follow the notebook format" not in section  # these notebooks are valid: no false alarm
    text = html.unescape(section)
    for n in range(1, len(notebook.code()) + 1):  # the grader's outputs are the cells' outputs
        assert f"CAPTURED-{n}" in text
    assert SAVED_TEXT not in text  # saved text outputs are not: they could be written by hand
    images = shown_images(section)
    for cell in notebook.cells:
        for name, mime in cell.pasted:
            if has_attachments(version):
                assert f"data:{mime};base64,{IMAGES[mime]}" in images, (name, mime)
            elif cell.kind == "markdown":
                assert f"[missing attachment: {name}]" in text
        for name in cell.dangling:
            assert f"[missing attachment: {name}]" in text
    saved = [o.kind for c in notebook.cells for o in c.outputs if o.kind in ("png", "jpeg", "svg")]
    assert len(images) >= len(saved) + sum(len(c.pasted) for c in notebook.cells) * has_attachments(version)
    if saved:
        assert section.count('class="saved-label"') >= 1 and "Saved with the notebook, not produced when graded" in text
        assert ("data:image/png;base64," + SAVED_PNG in images) == ("png" in saved)
        assert ("data:image/svg+xml;base64," + base64_of("image/svg+xml", SVG.replace("><", ">\n<")) in images
                or "data:image/svg+xml;base64," + base64_of("image/svg+xml", SVG) in images) == ("svg" in saved)
    if version[0] == 4 and any(o.kind == "widget" for c in notebook.cells for o in c.outputs):
        assert "[an interactive widget: it needs a running kernel, not shown]" in text


@settings(max_examples=25)
@given(notebook=notebooks)
@example(notebook=Notebook([Cell("code", "x = 1\x0cy = 2", as_lines=True)], "jupyterlab", widgets=False))  # a form feed
def test_the_reader_gives_the_same_code_cells_at_every_format_version(tmp_path: Path, notebook: Notebook) -> None:
    graded, shown = [], []
    for major, minor in VERSIONS:
        data = json.dumps(write(notebook, (major, minor))).encode()
        program = read_program(data, kind="notebook", name="student.ipynb", written_ids=[])
        graded.append([unit.source for unit in program.units])
        path = tmp_path / f"v{major}_{minor}.ipynb"
        path.write_bytes(data)
        shown.append([source for kind, source in notebook_cells(path) if kind == "code"])
        assert not [note for note in program.notes if "schema" in note], (major, minor, program.notes)
    assert all(cells == graded[0] for cells in graded), "the grader reads other code at another version"
    assert all(cells == notebook.code() for cells in shown), "the page shows other code at another version"
    assert len(graded[0]) == len(notebook.code())


# As each editor saves a notebook -----------------------------------------------------------------------------------

# fixture -> (the images its page shows, the attachments it refers to but does not hold)
EDITORS = {
    "jupyterlab_4_5.ipynb": (3, []), "classic_4_4.ipynb": (1, ["old.png"]), "vscode_4_2.ipynb": (2, []),
    "colab_4_0.ipynb": (2, []), "kaggle_4_4.ipynb": (2, []), "ipython2_v3.ipynb": (2, []),
}
FIXTURE_CODE = ["import numpy as np\n\nx = np.arange(6.0).reshape(2, 3)\nprint(x.sum())",
                "%matplotlib inline\ny = np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)\ny"]


@pytest.mark.parametrize("name", sorted(EDITORS))
def test_a_notebook_as_each_editor_saves_it_is_graded_and_shown(name: str) -> None:
    path = FIXTURES / name
    images, dangling = EDITORS[name]
    program = read_program(path.read_bytes(), kind="notebook", name=name, written_ids=[])
    assert [unit.source.strip() for unit in program.units][:1] == [FIXTURE_CODE[0]]
    assert [source for kind, source in notebook_cells(path) if kind == "code"] == FIXTURE_CODE
    assert not [note for note in program.notes if "schema" in note]
    section = notebook_part(instructor_page(path, len(program.units)))
    assert_nothing_runs_or_loads(section)
    assert len(shown_images(section)) == images
    text = html.unescape(section)
    assert [n for n in re.findall(r"\[missing attachment: ([^\]]+)\]", text)] == dangling
    assert "CAPTURED-1" in text and "CAPTURED-2" in text and "15.0" not in text


def test_a_pasted_image_is_shown_where_its_markdown_puts_it(tmp_path: Path) -> None:
    section = notebook_part(instructor_page(FIXTURES / "jupyterlab_4_5.ipynb", 2))
    pasted = f'src="data:image/png;base64,{PASTED_PNG}"'
    first, smaller = section.split("Exercise 2")[1], section.split("The same, smaller")[1]
    assert pasted in first.split("In&nbsp;[1]")[0]  # in its own cell, before the next one
    assert re.search(rf'<img class="nb-image" {re.escape(pasted)} alt="attention map" width="120">', smaller)
    assert section.count(pasted) == 2
    saved = section.split('class="saved-outputs"')[1].split("</div>")[0]  # the second code cell's saved outputs
    assert f"data:image/png;base64,{SAVED_PNG}" in saved and "interactive widget" in saved
    assert section.index("CAPTURED-2") < section.index('class="saved-outputs"')  # below the grader's


def test_an_svg_is_an_image_whose_scripts_never_run(tmp_path: Path) -> None:
    for name in ("vscode_4_2.ipynb", "ipython2_v3.ipynb"):
        section = notebook_part(instructor_page(FIXTURES / name, 2))
        svgs = [src for src in shown_images(section) if src.startswith("data:image/svg+xml;base64,")]
        assert len(svgs) == 1 and "<rect" in base64.b64decode(svgs[0].split(",", 1)[1]).decode()
        assert "<svg" not in section and "alert(" not in html.unescape(section)


# Notebooks nbformat cannot validate --------------------------------------------------------------------------------


def textbook() -> dict[str, Any]:
    return json.loads((SAMPLES / "textbook.ipynb").read_text(encoding="utf-8"))


def first_code(notebook: dict[str, Any]) -> dict[str, Any]:
    return next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")


def set_key(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda notebook: first_code(notebook).__setitem__(key, value)


# (what is wrong, how, what the page says of it). Grading reads no outputs, so only the page says what is wrong in them.
INVALID: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("a cell lacks its metadata", lambda nb: first_code(nb).pop("metadata"), "'metadata' is a required property"),
    ("the notebook lacks its metadata", lambda nb: nb.pop("metadata"), "'metadata' is a required property"),
    ("a code cell lacks its outputs", lambda nb: first_code(nb).pop("outputs"), "'outputs' is a required property"),
    ("an execution count is text", set_key("execution_count", "1"), "'1' is not of type 'integer', 'null'"),
    ("a cell's metadata is a list", set_key("metadata", []), "[] is not of type 'object'"),
    ("an output of an unknown type", set_key("outputs", [{"output_type": "plot3d", "data": {}}]),
     "outputs/0: an output of type 'plot3d' not laid out as the format allows"),
    ("an image that is a number", set_key("outputs", [{"output_type": "display_data", "metadata": {},
                                                       "data": {"image/png": 5}}]),
     "outputs/0/data/image/png: 5 is not valid"),
    ("an extra top-level key", lambda nb: nb.__setitem__("saved_by", "my editor"),
     "Additional properties are not allowed ('saved_by' was unexpected)"),
    ("a cell that is not an object", lambda nb: nb["cells"].insert(1, "print(1)"), "'print(1)' is not of type"),
    ("nbformat_minor is text", lambda nb: nb.__setitem__("nbformat_minor", "5"), "its nbformat_minor is '5'"),
]


@pytest.mark.parametrize(("what", "change", "reason"), INVALID, ids=[case[0] for case in INVALID])
def test_a_notebook_nbformat_cannot_validate_is_shown_with_the_reason_and_graded(
        tmp_path: Path, what: str, change: Callable[[dict[str, Any]], Any], reason: str) -> None:
    notebook = textbook()
    change(notebook)
    path = tmp_path / "student.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    code = [c for c in notebook["cells"] if isinstance(c, dict) and c.get("cell_type") == "code"]
    program = read_program(path.read_bytes(), kind="notebook", name="student.ipynb", written_ids=[])
    assert len(program.units) == len(code)  # every cell it holds is graded
    in_outputs = reason.startswith("outputs/")
    assert any("nbformat schema" in note and reason in note for note in program.notes) != in_outputs, program.notes
    section = notebook_part(instructor_page(path, len(code)))
    said = html.unescape(section.split('<div class="notebook">')[1])
    first = said.split("\n")[0]
    assert first.startswith('<p class="note warn">This notebook does not follow the notebook format (nbformat): ')
    assert reason in first and first.endswith("It is shown as far as its cells could be read.</p>")
    assert said.count('class="cell border-box-sizing code_cell') == len(code)
    shown = text_of(said)
    assert "def masked_softmax(X, valid_lens):" in shown and "Attention Scoring Functions" in shown
    assert f"CAPTURED-{len(code)}" in shown


def test_a_cell_whose_source_is_not_text_is_left_out_and_the_rest_graded(tmp_path: Path) -> None:
    notebook = textbook()
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    code[1]["source"] = 42
    code[2]["source"] = ["x = 1\n", None]
    path = tmp_path / "student.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    program = read_program(path.read_bytes(), kind="notebook", name="student.ipynb", written_ids=[])
    assert len(program.units) == len(code) - 2
    assert "2 cells whose source is not text (neither a string nor a list of lines) could not be read, and were " \
           "left out" in program.notes
    section = notebook_part(instructor_page(path, len(program.units)))
    text = html.unescape(section)
    assert text.count("A code cell whose source is not text (neither a string nor a list of lines): not graded.") == 2
    assert f"CAPTURED-{len(program.units)}" in text and "cell [1]" not in text


def test_json_that_does_not_parse_is_shown_as_text_and_refused(tmp_path: Path) -> None:
    text = (SAMPLES / "textbook.ipynb").read_text(encoding="utf-8")
    path = tmp_path / "student.ipynb"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(InvalidSubmission, match=r"not a valid notebook \(broken JSON"):
        read_program(path.read_bytes(), kind="notebook", name="student.ipynb", written_ids=[])
    page = render_instructor_report(result_for("student", 0), title=TITLE,
                                    submission=Submission("student", path, "notebook", datetime.now(UTC)))
    section = page.split('<section id="notebook">')[1]
    assert "could not be read as a notebook" in section and "broken JSON" in section
    assert '<pre class="source">' in section and "def masked_softmax" in text_of(section)


# What a page holds of a notebook's images -------------------------------------------------------------------------


def test_a_50_mb_notebook_of_images_makes_a_page_of_at_most_5_mb_that_says_what_it_left_out(tmp_path: Path) -> None:
    notebook = textbook()
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    size = 2_600_000  # characters of base64 per image: two fit in the page's 5 MB, the third does not
    randomness = random.Random(0)
    figures = [base64.b64encode(randomness.randbytes(size * 3 // 4)).decode() for _ in range(20)]
    code[0]["outputs"] = [{"output_type": "display_data", "metadata": {},
                           "data": {"image/png": figure, "text/plain": ["<Figure>"]}} for figure in figures]
    path = tmp_path / "student.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    assert path.stat().st_size > 50 * 10**6
    started = time.perf_counter()
    page = instructor_page(path, len(code))
    MEASURED["the instructor page of a 50 MB notebook of images"] = f"{time.perf_counter() - started:.2f} s"
    section = notebook_part(page)
    assert len(page.encode()) < NOTEBOOK_IMAGES_SHOWN + 2**20
    assert shown_images(section) == [f"data:image/png;base64,{figure}" for figure in figures[:2]]
    text = html.unescape(section)
    assert (f"18 of the notebook's images ({18 * size / 2**20:.1f} MB) are not shown here: this page holds at most "
            f"5.0 MB of them. They are in the submitted file.") in text
    assert text.count("[saved output: image/png of 2.5 MB, not shown: this page holds 5.0 MB of images at most]") == 18


# Graded for real, and seen in a browser ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pasted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A class of one: the textbook solution with a pasted image, a cell that prints, the attention map it was saved
    with, a widget, graded."""
    from grader.pipeline import RunOptions, RunRequest, grade_class

    notebook = textbook()
    notebook["metadata"]["widgets"] = WIDGET_STATE
    notebook["cells"].insert(1, {"cell_type": "markdown", "id": "pasted-figure", "metadata": {},
                                 "source": ["My sketch of the attention weights:\n", "\n",
                                            "![image.png](attachment:image.png)"],
                                 "attachments": {"image.png": {"image/png": PASTED_PNG}}})
    at = next(n for n, cell in enumerate(notebook["cells"]) if "def masked_softmax" in "".join(cell["source"]))
    notebook["cells"].insert(at + 1, {
        "cell_type": "code", "execution_count": 3, "id": "printed", "metadata": {},
        "source": ["print('masked:', masked_softmax(torch.ones(1, 1, 4), torch.tensor([2])))"],
        "outputs": [{"output_type": "stream", "name": "stdout", "text": [f"{SAVED_TEXT}\n"]},
                    {"output_type": "display_data", "metadata": {}, "data": WIDGET_VIEW}]})
    heatmap = next(cell for cell in notebook["cells"] if "show_heatmaps" in "".join(cell["source"]))
    heatmap["outputs"] = [{"output_type": "display_data", "metadata": {},
                           "data": {"image/png": SAVED_PNG, "text/plain": ["<Figure size 180x180 with 2 Axes>"]}}]
    folder = tmp_path_factory.mktemp("pasted") / "submissions"
    folder.mkdir()
    (folder / "ana.ipynb").write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    yield grade_class(RunRequest(assignment="attention_scoring", submissions_dir=folder, out_dir=folder.parent / "out"),
                      RunOptions(jobs=1))


@pytest.mark.slow
def test_a_graded_notebook_with_a_pasted_image_shows_it_and_the_code_outputs(pasted: Any) -> None:
    result = pasted.results[0]
    assert result.status == "graded" and result.score == result.max_score, result.reason
    page = (pasted.out_dir / "students" / "ana" / "instructor.html").read_text(encoding="utf-8")
    section = notebook_part(page)
    assert_nothing_runs_or_loads(section)
    assert section.count('class="cell border-box-sizing code_cell') == len(result.units)
    assert f"data:image/png;base64,{PASTED_PNG}" in shown_images(section)
    text = text_of(section)
    assert "masked: tensor([[[0.5000, 0.5000, 0.0000, 0.0000]]])" in text  # what the grader captured
    assert SAVED_TEXT not in text
    saved = section.split('class="saved-outputs"')
    assert len(saved) == 3  # the printing cell's widget, the heatmap cell's figure
    assert "interactive widget" in saved[1].split("</div>")[0]
    assert f"data:image/png;base64,{SAVED_PNG}" in saved[2].split("</div>")[0]
    assert "Saved with the notebook, not produced when graded" in saved[2]


@pytest.mark.slow
def test_the_pasted_image_loads_in_a_browser_under_the_pages_policy(pasted: Any) -> None:
    from .browser import chromium, chromium_path, open_file, watched_page

    if chromium_path() is None:
        pytest.fail("no Chromium: `make system-deps` installs Debian's chromium (as root), or set CHROMIUM")
    path = pasted.out_dir / "students" / "ana" / "instructor.html"
    with chromium(browser_log=True) as browser, watched_page(browser) as (page, watch):
        open_file(page, path)
        policy = page.eval_on_selector('meta[http-equiv="Content-Security-Policy"]', "m => m.content")
        assert "img-src data:" in policy and "default-src 'none'" in policy
        drawn = page.eval_on_selector_all(".notebook img", """images => images.map(image => ({
            alt: image.alt, complete: image.complete, width: image.naturalWidth, height: image.naturalHeight,
            shown: image.getBoundingClientRect().width}))""")
        assert watch.problems() == [], watch.problems()
    pasted_image = [image for image in drawn if image["alt"] == "image.png"]
    assert pasted_image and pasted_image[0]["complete"] and (pasted_image[0]["width"], pasted_image[0]["height"]) \
        == (12, 8) and pasted_image[0]["shown"] > 0
    assert len(drawn) == 2 and all(image["complete"] and image["width"] > 0 for image in drawn)
