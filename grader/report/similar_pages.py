"""The similar-submissions pages (OUT/similar/<a>--<b>.html): two students' code side by side, what they share
marked and linked, for each pair grader/similar found at or above the threshold."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from markupsafe import Markup, escape

from grader.discover import Submission
from grader.errors import InvalidSubmission
from grader.files import write_text_atomic
from grader.report.render import _render
from grader.similar.boilerplate import boilerplate_for
from grader.similar.compare import Pair, similar_pairs
from grader.similar.pages import DEFAULT_THRESHOLD, FOLDER, PairRow, SimilarityReport, code_of, page_name


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


def render_similar_pair(pair: Pair, source_a: str, source_b: str, *, title: str, threshold: float) -> str:
    """Two students' code side by side, what they share marked; each of a's marked stretches links to b's."""
    numbers_b: dict[tuple[int, int], int] = {}
    for number, region in enumerate(pair.regions, 1):
        numbers_b.setdefault(region.b, number)
    # a b stretch several of a's pair with links back to the first; one none pairs with is marked, unlinked
    spans_b = sorted({*pair.b_spans, *numbers_b})
    return _render("similar_pair.html.j2", title=title, pair=pair, threshold=threshold,
                   code_a=marked(source_a, [r.a for r in pair.regions], side="a", other="b",
                                 numbers=range(1, len(pair.regions) + 1)),
                   code_b=marked(source_b, spans_b, side="b", other="a", numbers=[numbers_b.get(s) for s in spans_b]))


def write_similarity(out_dir: Path, assignment: str, submissions: Sequence[Submission], *,
                     threshold: float = DEFAULT_THRESHOLD, title: str | None = None) -> SimilarityReport:
    """Compare every submission's code, write OUT/similar/<a>--<b>.html for each pair at or above ``threshold`` (pages
    of pairs no longer reported are removed) and return what the dashboard shows."""
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
