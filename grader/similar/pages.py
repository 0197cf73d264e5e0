"""The "Similar submissions" report's data: the dashboard's table (``SimilarityReport``), and the name of each pair's
side-by-side page in OUT/similar/ (written by grader/report/similar_pages.py). Instructor only: nothing here is linked
from, or copied into, a student's page or an export."""

from __future__ import annotations

from dataclasses import dataclass

from grader.discover import Submission
from grader.discover.program import read_submission
from grader.names import file_name
from grader.record.output import SIMILAR
from grader.similar.compare import Pair

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
