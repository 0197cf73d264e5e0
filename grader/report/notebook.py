"""The instructor's view of a submission as it ran: a notebook built from the student's cells, with what the grader
captured of each (stdout, stderr, the error) as its outputs, rendered by nbconvert.

The cells come from the submission file, read again (a stored result keeps no source): a notebook's own cells as
Jupyter, VS Code, Colab or Kaggle saved them, markdown and raw included (``discover``'s ``notebook_file``); a ``.py``
file's top-level statements, as the grader ran them. A code cell's outputs are what the grader captured, never what
the notebook was saved with, which its author could have written by hand. Of the saved outputs only images are shown
(the figures a written answer talks about), in a box under the cell's outputs that says they were saved with the
notebook, not produced when graded; a saved widget is a one-line placeholder (it needs a kernel). A notebook that
does not follow the nbformat schema is shown as far as its cells can be read, with the schema's complaint in one
line above them.

Images (pasted attachments, images inline in markdown, saved outputs) are embedded as ``<img src="data:...">``, the
one kind of load the page's Content-Security-Policy allows; an SVG is shown only so, never as inline markup, so its
scripts never run. Each becomes a marker while the page is rendered, filled in afterwards in page order while they
add up to ``NOTEBOOK_IMAGES_SHOWN`` characters: past it, and for an attachment the cell does not hold, a placeholder
says what is missing, and a note above the cells says what was left out. The markers carry a secret drawn when the
process starts, so no text in a notebook can make one.

nbconvert's page templates load MathJax and require.js from CDNs; this uses its ``basic`` template (cells only)
inside the report's own page. Code and outputs reach the page escaped (Pygments, nbconvert's ansi2html); a student's
markdown may hold raw HTML, which nbconvert passes through, so its HTML is cleaned with an allow-list (bleach): nothing
of it may run, load or link anywhere from the instructor's browser: scripts, images other than the data: ones above,
frames, styles and event handlers are shown as text or dropped, and links keep their text, their address as a
tooltip. (The page's Content-Security-Policy would refuse a script or a load anyway.)
"""

from __future__ import annotations

import functools
import html
import re
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import unquote

import bleach
import jinja2
import nbformat
from bleach.html5lib_shim import Filter
from markupsafe import Markup

from grader.discover import Submission, read_submission
from grader.discover.program import (
    IMAGE_TYPES,
    NOTEBOOK_IMAGES_SHOWN,
    NotebookCell,
    NotebookImage,
    SavedOutput,
    notebook_file,
    read_image,
)
from grader.errors import InvalidSubmission
from grader.results import SubmissionResult, UnitResult, UnitStatus, status_label

RAW_SOURCE_LIMIT = 200_000  # characters of an unreadable file shown as text to the instructor
OUTPUT_SHOWN = 20_000  # characters of one output stream of a cell

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "ul",
})
ALLOWED_ATTRIBUTES = {"*": ["class"], "a": ["href", "title"], "td": ["colspan", "rowspan"],
                      "th": ["colspan", "rowspan"]}


class _LinksGoNowhere(Filter):
    """A link keeps its text; its address becomes a tooltip, so the page links to nothing, on or off the machine
    (nor to an anchor of the student's notebook, whose ids the page does not keep)."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        for token in super().__iter__():
            if token.get("type") in ("StartTag", "EmptyTag") and token.get("name") == "a":
                attributes = dict(token.get("data") or {})
                href = attributes.pop((None, "href"), None)
                if href and not href.startswith("#"):
                    attributes[(None, "title")] = href
                token = {**token, "data": attributes}
            yield token


@cache
def _cleaner() -> bleach.Cleaner:
    return bleach.Cleaner(tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, strip=False, strip_comments=True,
                          filters=[_LinksGoNowhere])


# A tag that cannot run, load or link anything: a plain element, at most a class. Pygments' highlighted code and most
# rendered markdown hold only these, and skip the (slow) HTML parse of the cleaner.
_PLAIN_TAG = re.compile(r'<(?:/?(?:a|p|h[1-6]|em|strong|b|i|code|pre|span|div|ul|ol|li|blockquote|table|thead|tbody|'
                        r'tr|th|td|sub|sup|del|s|kbd|dl|dt|dd)(?: class="[\w\- :]*")?|br ?/?|hr ?/?)>')


# Elements whose content the HTML parser reads as raw text up to their end tag (style, script, textarea, title, ...;
# plaintext to the end of the document). Left unclosed in an answer, one makes the rest of the answer its content,
# which the cleaner then shows as one run of unrendered text or, in a table, drops without a word. None of them is
# allowed, so each is shown as text anyway: escaped before the parse, it never changes how what follows is read.
_RAW_TEXT_TAG = re.compile(r"<(?=/?(?:style|script|textarea|title|xmp|noscript|iframe|noembed|noframes|plaintext)"
                           r"(?:[\s/>]|$))", re.IGNORECASE)


def safe_html(html: str) -> str:
    """HTML from a student's notebook that cannot run, load or link anything (see the module's docstring)."""
    if html.count("<") == len(_PLAIN_TAG.findall(html)):  # every tag is a plain one
        return html
    # In a <div>: text and elements the parser moves out of an unclosed <table> ("foster parenting") go before the
    # table, into its parent; at the top of a fragment, html5lib (bleach's parser) has none and drops them.
    return _cleaner().clean(f"<div>{_RAW_TEXT_TAG.sub('&lt;', html)}</div>")


@cache
def _highlighter(language: str) -> tuple[Any, Any]:
    """A Pygments lexer and formatter per language, made once: nbconvert makes both for every cell, and making the
    IPython lexer costs about 5 ms (more than highlighting the cell)."""
    from html import escape

    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    if language in ("ipython3", "ipython"):
        from IPython.lib.lexers import IPython3Lexer

        lexer = IPython3Lexer()
    else:
        try:
            lexer = get_lexer_by_name(language)
        except ClassNotFound:
            lexer = TextLexer()
    return lexer, HtmlFormatter(cssclass=escape(f" highlight hl-{language}"))


def highlight_code(source: str, language: str | None = None, metadata: Any = None) -> str:
    """nbconvert's ``highlight_code`` filter (Highlight2HTML) with the lexer and formatter made once per language."""
    language = language or "ipython3"
    if language.startswith("ipython") and metadata and "magics_language" in metadata:
        language = metadata["magics_language"]
    return _highlighted(source or " ", language)


_MAGIC_LINE = re.compile(r"^\s*[%!]", re.MULTILINE)


@functools.lru_cache(maxsize=512)  # an assignment's template has a few dozen cells
def _highlighted(source: str, language: str) -> str:
    """Cells a class shares (the template's own code, untouched) are highlighted once (Pygments: ~1 ms a cell).
    A cell without magics or shell lines is plain Python, which Pygments' Python lexer reads in about 60% of the
    time of IPython's (whose rules only add those lines)."""
    from pygments import highlight

    lexer, formatter = _highlighter(language)
    if language in ("ipython3", "ipython") and not _MAGIC_LINE.search(source):
        lexer = _highlighter("python3")[0]
    return highlight(source, lexer, formatter)


@cache
def _exporter() -> Any:
    # Imported on first use: nbconvert takes a few hundred milliseconds to import.
    from nbconvert import HTMLExporter, TemplateExporter
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
    from traitlets.config import Config

    class SafeHTMLExporter(HTMLExporter):  # type: ignore[misc]
        """Markdown cells' HTML is cleaned (nbconvert passes a cell's raw HTML through), as is what ``clean_html``
        receives: highlighted code, raw cells and rich outputs. The notebooks built here hold no raw cells (a raw
        cell becomes a markdown cell shown as text), and their one rich output, the box of saved images, is HTML
        this module writes, holding nothing of the notebook but markers for its images."""

        @jinja2.pass_context
        def markdown2html(self, context: Any, source: str) -> str:
            return _cell_html(context, source)

        def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
            """HTMLExporter's, less its BeautifulSoup pass over the whole page (alt text for images, tabindex on
            JupyterLab's classes: the images here, put in afterwards, have theirs, and this template has none of those
            classes), which costs half the time."""
            try:
                self.register_filter("highlight_code", highlight_code)
                resources = self._init_resources(resources)
                self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                    notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            except AttributeError:  # another nbconvert: its own way
                return super().from_notebook_node(nb, resources, **kw)
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    # optimistic_validation: the notebook is validated once, not after each of its preprocessors (built here, it is
    # valid by construction; a validation costs a millisecond or two). Of the preprocessors on by default, only
    # HighlightMagicsPreprocessor (a %%bash cell highlighted as bash) changes these notebooks: no cell has tags or
    # patterns to remove, and the page's own stylesheet holds Pygments' colours (highlight_css), not nbconvert's.
    unused = {"TagRemovePreprocessor", "RegexRemovePreprocessor", "CSSHTMLHeaderPreprocessor"}
    return SafeHTMLExporter(template_name="basic", exclude_anchor_links=True, filters={"clean_html": safe_html},
                            optimistic_validation=True, config=Config({name: {"enabled": False} for name in unused}))


# Markers for the images of a page: put in while it is rendered, filled in afterwards (see the module's docstring).
# A cell's markdown is rendered once for the class with markers of its own (``nbref``), renumbered per page (``nbimg``).
_SECRET = secrets.token_hex(8)
_PAGE_MARKER = re.compile(rf'<span class="nbimg-{_SECRET}-(\d+)"></span>')
_CELL_MARKER = re.compile(rf'<span class="nbref-{_SECRET}-(\d+)"></span>')
_IMG_TAG = re.compile(r"""<img\b(?:[^>"']++|"[^"]*+"|'[^']*+')*+>""", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_DATA_IMAGE = re.compile(r"data:(image/[\w.+-]+)((?:;[^;,]*)*);base64,(.*)", re.IGNORECASE | re.DOTALL)
_DIMENSION = re.compile(r"\d{1,5}")
MARKDOWN_CACHED = 100_000  # characters: a longer cell (an image pasted inline as base64) is rendered each time


@dataclass(frozen=True)
class _ImageRef:
    """An <img> of a cell's markdown (or of the HTML in it) that the page shows: an attachment or a data: URI."""

    attachment: str | None  # the name after `attachment:`, or None for a data: URI
    image: NotebookImage | None  # a data: URI's image
    alt: str
    width: str = ""
    height: str = ""


@dataclass(frozen=True)
class _Shown:
    """What a marker of the page stands for: an image, or (image None) an attachment the cell does not hold."""

    image: NotebookImage | None
    label: str
    width: str = ""
    height: str = ""


@dataclass
class PageImages:
    """The images of one page, in the order their markers were made, and each cell's attachments."""

    shown: list[_Shown] = field(default_factory=list)
    attachments: list[dict[str, NotebookImage]] = field(default_factory=list)

    def __deepcopy__(self, memo: dict) -> PageImages:
        return self  # nbconvert renders with a copy of its resources: the markers made then are this page's

    def marker(self, shown: _Shown) -> str:
        self.shown.append(shown)
        return f'<span class="nbimg-{_SECRET}-{len(self.shown) - 1}"></span>'

    def cell(self, attachments: Sequence[tuple[str, NotebookImage]]) -> int:
        """Keeps a cell's attachments for its markdown; the number its metadata names them by."""
        self.attachments.append(dict(attachments))
        return len(self.attachments) - 1


def _markdown_renderer() -> Any:
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class Renderer(IPythonRenderer):  # type: ignore[misc]
        """nbconvert's, but an image from an attachment or a data: URI stays an <img> that names it (nbconvert's
        raises for an attachment the cell lacks; mistune's drops an SVG data: URI): the page fills those in."""

        def image(self, text: str, url: str, title: str | None = None) -> str:
            if url.lower().startswith(("attachment:", "data:image/")):
                from mistune.util import striptags

                return "<img" + self.render_attrs({"src": url, "alt": striptags(text)}) + ">"
            return super().image(text, url, title)

    return Renderer(escape=False, anchor_link_text=_exporter().anchor_link_text, exclude_anchor_links=True)


def _image_ref(tag: str) -> _ImageRef | None:
    attributes = {}
    for match in _ATTRIBUTE.finditer(tag[4:].rstrip(">/")):
        name, *values = match.groups()
        attributes.setdefault(name.lower(), html.unescape(next((v for v in values if v is not None), "")))
    src = attributes.get("src", "").strip()
    width, height = (attributes.get(a, "") for a in ("width", "height"))
    dimensions = {"width": width if _DIMENSION.fullmatch(width) else "",
                  "height": height if _DIMENSION.fullmatch(height) else ""}
    alt = attributes.get("alt", "")
    if src.lower().startswith("attachment:"):
        return _ImageRef(src[len("attachment:"):], None, alt, **dimensions)
    data = _DATA_IMAGE.fullmatch(src)
    if data is None or data.group(1).lower() not in IMAGE_TYPES:
        return None  # left to the cleaner, which shows it as text
    return _ImageRef(None, read_image(data.group(1).lower(), data.group(3)), alt or "image", **dimensions)


def _render_markdown(source: str) -> tuple[str, tuple[_ImageRef, ...]]:
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    rendered = MarkdownWithMath(renderer=_markdown_renderer()).render(source)
    refs: list[_ImageRef] = []

    def swap(match: re.Match[str]) -> str:
        ref = _image_ref(match.group(0))
        if ref is None:
            return match.group(0)
        refs.append(ref)
        return f'<span class="nbref-{_SECRET}-{len(refs) - 1}"></span>'

    if "<img" in rendered.lower():
        rendered = _IMG_TAG.sub(swap, rendered)
    return safe_html(rendered), tuple(refs)


_cached_markdown = functools.lru_cache(maxsize=512)(_render_markdown)  # a template's text is in every notebook


def _markdown_html(source: str, attachments: dict[str, NotebookImage], images: PageImages) -> str:
    """A markdown cell as cleaned HTML, its images as markers of the page: the attachment it names (as it is, or
    %-decoded as Jupyter writes names with spaces), or a placeholder where the cell holds none so named."""
    rendered, refs = (_cached_markdown if len(source) <= MARKDOWN_CACHED else _render_markdown)(source)
    if not refs:
        return rendered
    markers = []
    for ref in refs:
        if ref.attachment is None:
            shown = _Shown(ref.image, ref.alt, ref.width, ref.height)
        else:
            name = unquote(ref.attachment)
            image = attachments.get(ref.attachment, attachments.get(name))
            shown = _Shown(image, ref.alt or name, ref.width, ref.height) if image else _Shown(None, name)
        markers.append(images.marker(shown))
    return _CELL_MARKER.sub(lambda match: markers[int(match.group(1))], rendered)


def _cell_html(context: Any, source: str) -> str:
    """What a markdown cell of the built notebook shows: its markdown, a raw cell's text and attachments, or the
    grader's note on a cell it could not read (as the cell's metadata says)."""
    cell = context.get("cell") or {}
    metadata = cell.get("metadata") or {}
    resources = context.get("resources") or {}
    images = resources.get("grader_images") or PageImages()
    attachments = images.attachments[metadata["grader_attachments"]] if "grader_attachments" in metadata else {}
    if "grader_note" in metadata:
        return f'<p class="note warn">{html.escape(metadata["grader_note"])}</p>'
    if metadata.get("grader_raw"):
        shown = "".join(f'<p class="nb-attachment">{images.marker(_Shown(image, name))}</p>'
                        for name, image in attachments.items())
        return f'<p class="muted small">Raw cell</p><pre class="raw-cell">{html.escape(source)}</pre>{shown}'
    return _markdown_html(source, attachments, images)


_lock = threading.Lock()  # one exporter, used by one thread at a time


@cache
def highlight_css() -> str:
    """Pygments' colours for the code cells (nbconvert marks tokens with its classes), under ``.notebook``."""
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style="default").get_style_defs(".notebook .highlight")


def clip(text: str, limit: int = OUTPUT_SHOWN) -> str:
    """Long output cut in the middle: its beginning and its end (an error, a note of what was not kept) stay."""
    if len(text) <= limit:
        return text
    head, tail = limit * 3 // 4, limit // 4
    return f"{text[:head]}\n[... {len(text) - head - tail} characters not shown here ...]\n{text[-tail:]}"


# Nodes built as plain dicts: nbformat.v4.new_* validate each one (a few milliseconds a page); nbconvert validates
# the whole notebook once anyway.
def _stream(name: str, text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": name, "text": text}


def _outputs(unit: UnitResult | None) -> list:
    """What the grader captured of one unit, as nbformat outputs."""
    if unit is None:
        return [_stream("stderr", "[grader] this code did not run\n")]
    outputs = []
    if unit.stdout:
        outputs.append(_stream("stdout", clip(unit.stdout)))
    if unit.stderr:
        outputs.append(_stream("stderr", clip(unit.stderr)))
    if unit.error:
        last = unit.error.rstrip().splitlines()[-1] if unit.error.strip() else unit.error
        name, _, value = last.partition(": ")
        outputs.append({"output_type": "error", "ename": name, "evalue": value,
                        "traceback": unit.error.rstrip().splitlines()})
    unusual = unit.status not in (UnitStatus.OK, UnitStatus.ERROR)
    grader_says = [f"[grader] {status_label(unit.status)}"] if unusual else []
    grader_says += [f"[grader] {note}" for note in unit.notes]
    if grader_says:
        outputs.append(_stream("stderr", "\n".join(grader_says) + "\n"))
    return outputs


def _saved_outputs(saved: Sequence[SavedOutput], images: PageImages) -> list:
    """The images and widgets a code cell was saved with, as one output below the grader's, labelled as such."""
    shown = []
    for output in saved:
        if output.kind == "image" and output.image is not None:
            shown.append(f'<p class="nb-saved-image">{images.marker(_Shown(output.image, "saved output"))}</p>')
        elif output.kind == "widget":
            shown.append('<p class="nb-placeholder">[an interactive widget: it needs a running kernel, not shown]</p>')
    if not shown:
        return []
    box = ('<div class="saved-outputs"><p class="saved-label">Saved with the notebook, not produced when graded:</p>'
           + "".join(shown) + "</div>")
    return [{"output_type": "display_data", "metadata": {}, "data": {"text/html": box}}]


def _size(characters: int) -> str:
    """What base64 adds to a page (a third more than the image's own bytes)."""
    return f"{characters / 2**20:.1f} MB" if characters >= 2**20 else f"{max(1, round(characters / 1024))} KB"


def _fill(body: str, images: PageImages, limit: int = NOTEBOOK_IMAGES_SHOWN) -> tuple[str, list[NotebookImage]]:
    """The page's markers replaced, in page order, by their images while they add up to ``limit`` characters, and by
    placeholders past it; and the images left out."""
    left, not_shown = limit, []

    def one(match: re.Match[str]) -> str:
        nonlocal left
        shown = images.shown[int(match.group(1))]
        image, label = shown.image, html.escape(shown.label)
        if image is None:
            return f'<span class="nb-placeholder">[missing attachment: {label}]</span>'
        if not image.readable:
            return f'<span class="nb-placeholder">[{label}: {html.escape(image.mime)} that is not a readable ' \
                   f'image, not shown]</span>'
        if image.data is None or image.size > left:
            not_shown.append(image)
            return f'<span class="nb-placeholder">[{label}: {image.mime} of {_size(image.size)}, not shown: this ' \
                   f'page holds {_size(limit)} of images at most]</span>'
        left -= image.size
        size = "".join(f' {name}="{value}"' for name, value in (("width", shown.width), ("height", shown.height))
                       if value)
        return f'<img class="nb-image" src="data:{image.mime};base64,{image.data}" alt="{label}"{size}>'

    return _PAGE_MARKER.sub(one, body), not_shown


def markdown_html(source: str, attachments: Sequence[tuple[str, NotebookImage]] = ()) -> str:
    """One markdown text of a student's (a written answer, for the review app) as cleaned HTML, its images filled
    in as on the instructor's page."""
    images = PageImages()
    return _fill(_markdown_html(source, dict(attachments), images), images)[0]


@dataclass
class NotebookView:
    """The notebook built for nbconvert, the images its markers stand for, and what to say above its cells."""

    notebook: Any
    images: PageImages
    notes: list[str]


def _cells(result: SubmissionResult, submission: Submission) -> tuple[list[tuple[NotebookCell, str]], str, str]:
    """(cell, the label of its unit in the result) for each cell, why there are none, and how the notebook strays
    from the nbformat schema.

    A notebook is read once more for its own cells (its readable code cells are, in order, the units the grader ran,
    "cell [1]" ...); if that does not match, or for a .py, the program is read as the grader read it."""
    if submission.kind == "notebook":
        try:
            read = notebook_file(submission.path)
        except (OSError, ValueError, RecursionError):
            read = None
        if read is not None:
            graded = [cell.kind == "code" and cell.source is not None for cell in read.cells]
            if not result.units or sum(graded) == len(result.units):
                labels = iter(u.label for u in result.units)
                return ([(cell, next(labels, "") if ran else "") for cell, ran in zip(read.cells, graded, strict=True)],
                        "", read.problem)
    try:
        program = read_submission(submission, written_ids=())
    except InvalidSubmission as exc:
        return [], f"The file could not be read as a {submission.kind}: {exc.message}", ""
    except OSError as exc:
        return [], f"The file could not be read: {exc}", ""
    return [(NotebookCell("code", u.source), u.label) for u in program.units], "", ""


def build_notebook(result: SubmissionResult, submission: Submission | None) -> tuple[NotebookView | None, str]:
    """The notebook the instructor sees, or None and why there is none."""
    if submission is None:
        return None, "The submission file is no longer in the submissions folder."
    sources, why, problem = _cells(result, submission)
    if why:
        return None, why
    by_label = {u.label: u for u in result.units}
    images = PageImages()
    cells: list[Any] = []
    count = 0
    for cell, label in sources:
        metadata: dict[str, Any] = {}
        if cell.attachments:
            metadata["grader_attachments"] = images.cell(cell.attachments)
        if cell.source is None:
            note = f"A {cell.kind} cell whose source is not text (neither a string nor a list of lines): " \
                   f"{'not graded' if cell.kind == 'code' else 'not shown'}."
            cells.append({"cell_type": "markdown", "id": f"note-{len(cells) + 1}", "metadata": {"grader_note": note},
                          "source": ""})
        elif cell.kind in ("markdown", "raw"):
            metadata["grader_raw"] = cell.kind == "raw"
            cells.append({"cell_type": "markdown", "id": f"{cell.kind}-{len(cells) + 1}", "metadata": metadata,
                          "source": cell.source})
        else:
            count += 1
            unit = by_label.get(label) if label else None
            cells.append({"cell_type": "code", "id": f"code-{count}", "execution_count": count, "source": cell.source,
                          "metadata": {"grader_label": label},
                          "outputs": _outputs(unit) + _saved_outputs(cell.saved, images)})
    notebook = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "cells": cells, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}}})
    notes = [f"This notebook does not follow the notebook format (nbformat): {problem}. It is shown as far as its "
             f"cells could be read."] if problem else []
    return NotebookView(notebook, images, notes), ""


def render_notebook(notebook: Any, images: PageImages | None = None, notes: Sequence[str] = ()) -> Markup:
    """The notebook's cells as HTML (nbconvert's basic template), cleaned of anything that could run or load, its
    images filled in, ``notes`` (and what was left out of the images) above them."""
    images = images if images is not None else PageImages()
    with _lock:
        body, _ = _exporter().from_notebook_node(notebook, resources={"grader_images": images})
    body, not_shown = _fill(body, images)
    said = list(notes)
    if not_shown:
        size = _size(sum(image.size for image in not_shown))
        said.append(f"{len(not_shown)} of the notebook's images ({size}) are not shown here: this page holds at most "
                    f"{_size(NOTEBOOK_IMAGES_SHOWN)} of them. They are in the submitted file.")
    top = "".join(f'<p class="note warn">{html.escape(note)}</p>\n' for note in said)
    return Markup(top + body)


def raw_source(submission: Submission | None) -> str | None:
    """An unreadable submission as text, if it is text at all, for the instructor to see what went wrong."""
    if submission is None or submission.problem:
        return None
    try:
        if submission.path.is_symlink() or submission.path.stat().st_size > 8 * RAW_SOURCE_LIMIT:
            return None
        data = submission.path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    text = data.decode("utf-8", errors="replace")
    if len(text) > RAW_SOURCE_LIMIT:
        text = text[:RAW_SOURCE_LIMIT] + f"\n[... {len(text) - RAW_SOURCE_LIMIT} more characters not shown]"
    return text


def notebook_section(result: SubmissionResult, submission: Submission | None) -> tuple[Markup | None, str, str | None]:
    """(the rendered notebook or None, why there is none, the file as text when it could not be read)."""
    view, why = build_notebook(result, submission)
    if view is None:
        return None, why, raw_source(submission)
    return render_notebook(view.notebook, view.images, view.notes), "", None

