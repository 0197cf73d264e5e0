"""The "Similar submissions" report: the dashboard's table (``SimilarityReport``) and one side-by-side page per pair in
OUT/similar/. Instructor only: nothing here is linked from, or copied into, a student's page or an export."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup, escape

from grader.discover import Submission
from grader.discover.program import read_submission
from grader.errors import InvalidSubmission
from grader.files import write_text_atomic
from grader.names import file_name
from grader.record.output import SIMILAR
from grader.similar.boilerplate import boilerplate_for
from grader.similar.compare import Pair, similar_pairs

FOLDER = SIMILAR  # under the output folder, beside index.html
DEFAULT_THRESHOLD = 0.5


@dataclass(frozen=True)
class PairRow:
    pair: Pair
    href: str  # relative to index.html


@dataclass(frozen=True)
class SimilarityReport:
    """What ``render_dashboard(similarity=...)`` shows: the pairs at or above the threshold, most shared first."""

    threshold: float
    compared: int  # submissions whose code could be read
    unread: tuple[str, ...]  # students whose code could not be read (an invalid file): not compared
    rows: tuple[PairRow, ...]


def page_name(a: str, b: str) -> str:
    """``<a>--<b>.html``, each student as a file name (``grader.names.file_name``, which never holds ``--``): at most
    two bounded names, so the page's name fits any file system whatever the ids."""
    return f"{file_name(a)}--{file_name(b)}.html"


def code_of(submission: Submission) -> str:
    """A submission's code units joined, each after a comment naming it (comments are not compared)."""
    program = read_submission(submission, written_ids=[])
    return "\n\n".join(f"# {unit.label}\n{unit.source}" for unit in program.units)


def marked(text: str, spans: Sequence[tuple[int, int]], *, side: str, other: str,
           numbers: Sequence[int | None]) -> Markup:
    """``text`` escaped, each span in a ``<mark>``; a numbered span is an anchor linking to the other side's."""
    out: list[str] = []
    at = 0
    for (start, end), number in sorted(zip(spans, numbers), key=lambda item: item[0]):
        if start < at:  # spans never overlap; a defensive skip rather than garbled markup
            continue
        out.append(str(escape(text[at:start])))
        if number is None:
            out.append(f"<mark>{escape(text[start:end])}</mark>")
        else:
            out.append(f'<a class="shared" id="{side}{number}" href="#{other}{number}"><mark>'
                       f"{escape(text[start:end])}</mark></a>")
        at = end
    out.append(str(escape(text[at:])))
    return Markup("".join(out))


def write_similarity(out_dir: Path, assignment: str, submissions: Sequence[Submission], *,
                     threshold: float = DEFAULT_THRESHOLD, title: str | None = None) -> SimilarityReport:
    """Compare every submission's code, write OUT/similar/<a>--<b>.html for each pair at or above ``threshold`` (pages
    of pairs no longer reported are removed) and return what the dashboard shows."""
    from grader.report.render import render_similar_pair  # the renderer imports this module for its types

    sources: dict[str, str] = {}
    unread: list[str] = []
    for submission in sorted(submissions, key=lambda s: s.student):
        try:
            sources[submission.student] = code_of(submission)
        except InvalidSubmission:
            unread.append(submission.student)
    pairs = similar_pairs(sources, boilerplate=boilerplate_for(assignment), threshold=threshold)
    folder = out_dir / FOLDER
    rows, written = [], set()
    for pair in pairs:
        name = page_name(pair.a, pair.b)
        page = render_similar_pair(pair, sources[pair.a], sources[pair.b], title=title or assignment,
                                   threshold=threshold)
        write_text_atomic(folder / name, page)
        written.add(name)
        rows.append(PairRow(pair, f"{FOLDER}/{quote(name)}"))
    if folder.is_dir():
        for stale in folder.glob("*.html"):
            if stale.name not in written:
                stale.unlink()
    return SimilarityReport(threshold, len(sources), tuple(unread), tuple(rows))
