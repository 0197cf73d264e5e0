"""What a class run writes for the course beyond the grades: the platform's imports (Moodle, Canvas) when the
submissions came from its download, and the similar-submissions pages for the instructor's dashboard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.discover.finder import Submission
from grader.results import SubmissionResult
from grader.similar import SimilarityReport, write_similarity
from grader.similar.pages import DEFAULT_THRESHOLD


@dataclass(frozen=True)
class Handback:
    """The run's settings for it: ``similarity_threshold`` None turns the comparison off."""

    similarity_threshold: float | None = DEFAULT_THRESHOLD
    moodle_worksheet: Path | None = None  # the grading worksheet downloaded from Moodle, to fill in
    canvas_gradebook: Path | None = None  # the gradebook exported from Canvas, to fill in
    canvas_column: str | None = None  # its column for this assignment, when the title does not tell


def platform_of(submissions: Sequence[Submission]) -> str:
    """"moodle" or "canvas" when the submissions came from that platform's download, else ""."""
    keys = {key for s in submissions for key, _ in s.origin}
    return "moodle" if "moodle_participant" in keys else "canvas" if "canvas_user" in keys else ""


def write_platform_files(out_dir: Path, submissions: Sequence[Submission], results: Sequence[SubmissionResult],
                         settings: Handback, *, title: str) -> list[Path]:
    """The platform's imports, written after the class is graded: OUT/moodle/ or OUT/canvas/ (nothing for a
    download of no platform)."""
    platform = platform_of(submissions)
    if platform == "moodle":
        from grader.export.moodle import write_moodle_exports

        return write_moodle_exports(out_dir, submissions, results, worksheet=settings.moodle_worksheet)
    if platform == "canvas":
        from grader.export.canvas import write_canvas_exports

        return write_canvas_exports(out_dir, submissions, results, gradebook=settings.canvas_gradebook,
                                    column=settings.canvas_column, title=title)
    return []


def similarity(out_dir: Path, assignment: str, submissions: Sequence[Submission], settings: Handback, *,
               title: str) -> SimilarityReport | None:
    if settings.similarity_threshold is None:
        return None
    return write_similarity(out_dir, assignment, submissions, threshold=settings.similarity_threshold, title=title)
