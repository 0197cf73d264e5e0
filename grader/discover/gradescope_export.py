"""A Gradescope submissions export (the "Download Submissions" zip, unpacked).

The export holds ``submission_metadata.yml`` and one folder per submission, ``submission_<id>/``, with the files the
student uploaded. The YAML comes from Ruby: its keys are symbols (``:submitters:``, ``:created_at:``), read here as
plain names, and any Ruby type tag is read as the plain mapping, list or string under it::

    submission_123456:
      :submitters:
      - :name: Ada Lovelace
        :sid: '1815'
        :email: ada@example.edu
      :created_at: 2024-03-01 12:00:00.123456000 -08:00

A student's id is their SID, else their e-mail, else their name (``gradescope.submitter_id``, the autograder's rule
too), so the LMS export matches the course roster. Every member of a group submission gets the group's result. A
folder the YAML does not list is graded under its own name.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from grader.discover.finder import (
    IGNORED_DIRS,
    Skipped,
    Submission,
    candidates,
    choose_submission,
    link_problem,
    modified_at,
)
from grader.discover.gradescope import submitter_id
from grader.errors import ConfigurationError
from grader.times import parse_submission_time

METADATA = "submission_metadata.yml"


class _ExportLoader(yaml.SafeLoader):
    """PyYAML's safe loader, reading Ruby-tagged nodes (``!ruby/object:...``) as plain data instead of failing."""


def _untagged(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_ExportLoader.add_multi_constructor("!", _untagged)


def _plain_keys(data: Any) -> Any:
    """Ruby's ``:symbol`` keys as plain names, all the way down."""
    if isinstance(data, dict):
        return {str(k).lstrip(":"): _plain_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain_keys(item) for item in data]
    return data


def read_export_metadata(path: Path) -> dict[str, dict[str, Any]]:
    """``submission_metadata.yml`` as {folder name: {"submitters": [...], "created_at": ..., ...}}."""
    try:
        data = _plain_keys(yaml.load(path.read_text(encoding="utf-8"), Loader=_ExportLoader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"{path} is not a Gradescope submission_metadata.yml the grader can read: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ConfigurationError(f"{path} does not map submission folders to their submitters, as a Gradescope "
                                 "export's submission_metadata.yml does")
    return data


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _who(submitter: dict[str, Any]) -> str:
    name, ident = _text(submitter.get("name")), submitter_id(submitter)
    return f"{name} ({ident})" if name and name != ident else ident


def _submission_time(entry: dict[str, Any]) -> tuple[datetime | None, tuple[str, ...]]:
    value = entry.get("created_at")
    when = parse_submission_time(value)
    if when is None:
        said = f"holds {str(value)[:60]!r}" if value is not None else "gives none"
        return None, (f"{METADATA} {said} for the submission time: the file's time is used",)
    return when, ()


def _submission(student: str, folder: Path, *, directory: Path, when: datetime | None,
                notes: tuple[str, ...]) -> Submission:
    root = directory.resolve()
    shown = str(folder.relative_to(directory))
    problem = link_problem(folder, shown, root)
    files = [] if problem or not folder.is_dir() else candidates(folder)
    if not problem and not files:
        found = ", ".join(p.name for p in sorted(folder.iterdir())) if folder.is_dir() else ""
        problem = (f"your Gradescope submission holds no notebook (.ipynb) or Python file (.py) "
                   f"(found: {found or 'nothing'}): submit your notebook")
    if problem:
        return Submission(student, folder, "notebook", when or modified_at(folder), notes, problem)
    return choose_submission(student, files, directory=directory, submitted_at=when, notes=notes)


def discover_gradescope_export(export: Path, *, directory: Path) -> tuple[list[Submission], list[Skipped]]:
    """Every submitter's submission in ``export`` (the folder holding submission_metadata.yml, ``directory`` or
    inside it: paths in results are relative to ``directory``)."""
    metadata = read_export_metadata(export / METADATA)
    chosen: dict[str, tuple[Submission, datetime | None, Path]] = {}  # student -> (submission, created, folder)
    skipped: list[Skipped] = []

    def add(submission: Submission, created: datetime | None, folder: Path) -> None:
        earlier = chosen.get(submission.student)
        if earlier is None:
            chosen[submission.student] = (submission, created, folder)
            return
        # A student in two submissions (say, a group's and their own): the newer one is graded.
        keep, drop = (earlier, (submission, created, folder))
        if (created or submission.submitted_at) > (earlier[1] or earlier[0].submitted_at):
            keep, drop = drop, keep
        chosen[submission.student] = keep
        skipped.append(Skipped(drop[2], f"an older submission by {submission.student} ({keep[2].name} is graded)"))

    for folder_name, entry in sorted(metadata.items()):
        folder = export / folder_name
        if not folder.exists() and not folder.is_symlink():
            skipped.append(Skipped(folder, f"listed in {METADATA}, but the export holds no folder {folder_name}"))
            continue
        when, notes = _submission_time(entry)
        submitters = [s for s in entry.get("submitters") or [] if isinstance(s, dict) and submitter_id(s)]
        if not submitters:
            notes = (*notes, f"{METADATA} names no submitter for {folder_name}: graded under the folder's name")
            add(_submission(folder_name, folder, directory=directory, when=when, notes=notes), when, folder)
            continue
        for submitter in submitters:
            others = [_who(s) for s in submitters if s is not submitter]
            group = (f"group submission {folder_name}, with {', '.join(others)}",) if others else ()
            add(_submission(submitter_id(submitter), folder, directory=directory, when=when,
                            notes=(*notes, *group)), when, folder)
    for folder in sorted(export.iterdir()):
        if folder.name in metadata or not folder.is_dir() or folder.name.startswith(".") \
                or folder.name in IGNORED_DIRS:
            continue
        notes = (f"{folder.name} is not listed in {METADATA}: graded under the folder's name",)
        add(_submission(folder.name, folder, directory=directory, when=None, notes=notes), None, folder)
    return sorted((s for s, _, _ in chosen.values()), key=lambda s: s.student), skipped
