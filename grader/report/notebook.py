"""The instructor's view of a submission as it ran: a notebook built from the student's cells, with what the grader
captured of each (stdout, stderr, the error) as its outputs, rendered by nbconvert.

The cells come from the submission file, read again (a stored result keeps no source): a notebook's own cells,
markdown included, with their outputs dropped as the grader drops them (``discover``'s ``notebook_cells``); a ``.py``
file's top-level statements, as the grader ran them. Outputs are only ever what the grader captured, never what a
notebook was saved with.

nbconvert's page templates load MathJax and require.js from CDNs; this uses its ``basic`` template (cells only)
inside the report's own page. Code and outputs reach the page escaped (Pygments, nbconvert's ansi2html); a student's
markdown may hold raw HTML, which nbconvert passes through, so its HTML is cleaned with an allow-list (bleach): nothing
of it may run, load or link anywhere from the instructor's browser: scripts, images, frames, styles and event
handlers are shown as text or dropped, and links keep their text, their address as a tooltip. (The page's
Content-Security-Policy would refuse a script or a load anyway.)
"""

from __future__ import annotations

import functools
import re
import threading
from functools import cache
from typing import Any

import bleach
import jinja2
import nbformat
from bleach.html5lib_shim import Filter
from markupsafe import Markup

from grader.discover import Submission, notebook_cells, read_submission
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


def safe_html(html: str) -> str:
    """HTML from a student's notebook that cannot run, load or link anything (see the module's docstring)."""
    if html.count("<") == len(_PLAIN_TAG.findall(html)):  # every tag is a plain one
        return html
    return _cleaner().clean(html)


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
        receives: highlighted code, raw cells and rich outputs (the notebooks built here hold none of the last two)."""

        @jinja2.pass_context
        def markdown2html(self, context: Any, source: str) -> str:
            return _markdown_html(source)

        def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
            """HTMLExporter's, less its BeautifulSoup pass over the whole page (alt text for images, tabindex on
            JupyterLab's classes: neither is in these notebooks or this template), which costs half the time."""
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


@functools.lru_cache(maxsize=512)  # an assignment's own text is the same in every student's notebook
def _markdown_html(source: str) -> str:
    """A markdown cell as cleaned HTML. nbconvert's filter reads only a cell's attachments from its context, and the
    cells built here carry none: the HTML depends on the text alone."""
    from nbconvert import HTMLExporter

    return safe_html(HTMLExporter.markdown2html(_exporter(), {}, source))


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


def _sources(result: SubmissionResult, submission: Submission) -> tuple[list[tuple[str, str, str]], str]:
    """(cell type, source, the label of its unit in the result) for each cell, or why there are none.

    A graded notebook is parsed once more for its own cells (its code cells are, in order, the units the grader
    ran, "cell [1]" ...); if that does not match, or for a .py, the program is read as the grader read it."""
    if submission.kind == "notebook" and result.units:
        try:
            cells = notebook_cells(submission.path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            cells = []
        labels = iter(u.label for u in result.units)
        if sum(1 for kind, _ in cells if kind == "code") == len(result.units):
            return [(kind, source, next(labels) if kind == "code" else "") for kind, source in cells], ""
    try:
        program = read_submission(submission, written_ids=())
    except InvalidSubmission as exc:
        return [], f"The file could not be read as a {submission.kind}: {exc.message}"
    except OSError as exc:
        return [], f"The file could not be read: {exc}"
    return [("code", u.source, u.label) for u in program.units], ""


def build_notebook(result: SubmissionResult, submission: Submission | None) -> tuple[Any | None, str]:
    """The notebook the instructor sees, or None and why there is none."""
    if submission is None:
        return None, "The submission file is no longer in the submissions folder."
    sources, why = _sources(result, submission)
    if why:
        return None, why
    by_label = {u.label: u for u in result.units}
    cells: list[Any] = []
    count = 0
    for kind, source, label in sources:
        if kind == "markdown":
            cells.append({"cell_type": "markdown", "id": f"markdown-{len(cells) + 1}", "metadata": {},
                          "source": source})
            continue
        count += 1
        cells.append({"cell_type": "code", "id": f"code-{count}", "execution_count": count, "source": source,
                      "metadata": {"grader_label": label}, "outputs": _outputs(by_label.get(label))})
    notebook = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "cells": cells, "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}}})
    return notebook, ""


def render_notebook(notebook: Any) -> Markup:
    """The notebook's cells as HTML (nbconvert's basic template), cleaned of anything that could run or load."""
    with _lock:
        body, _ = _exporter().from_notebook_node(notebook)
    return Markup(body)


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
    notebook, why = build_notebook(result, submission)
    if notebook is None:
        return None, why, raw_source(submission)
    return render_notebook(notebook), "", None

