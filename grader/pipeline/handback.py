"""What a class run writes for the course beyond the grades: the platform's imports (Moodle, Canvas) when the
submissions came from its download, and the similar-submissions pages for the instructor's dashboard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.discover.finder import Submission
from grader.errors import ConfigurationError
from grader.record.placed import Placed
from grader.report.similar_pages import write_similarity
from grader.results import SubmissionResult
from grader.similar import SimilarityReport
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


def check_handback(settings: Handback, submissions: Sequence[Submission]) -> None:
    """Refuse, before anything is graded, a platform file given for submissions that are not that platform's: its
    grades could never be placed."""
    platform = platform_of(submissions)
    for given, option, wanted in ((settings.moodle_worksheet, "--moodle-worksheet", "moodle"),
                                  (settings.canvas_gradebook, "--canvas-gradebook", "canvas")):
        if given is not None and submissions and platform != wanted:
            found = f"a {platform.title()} download" if platform else "no course platform's download"
            raise ConfigurationError(f"{option} {given} was given, but the submissions are {found}: its grades "
                                     f"could not be placed (grade the {wanted.title()} download it belongs to, with "
                                     f"--layout {wanted})")


def write_platform_files(out_dir: Path, submissions: Sequence[Submission], results: Sequence[SubmissionResult],
                         settings: Handback, *, title: str) -> list[Placed]:
    """The platform's imports, written after the class is graded: OUT/moodle/ or OUT/canvas/ (nothing for a
    download of no platform); what each placed."""
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
