"""What the accounting of a class run (grader/record/accounting.py) needs from the run's own files: whose pages are
all there as drawn, and the students' folders (OUT/student-folders.json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from grader.files import write_text_atomic
from grader.names import file_name
from grader.pipeline.student_files import FALLBACK_MARK
from grader.record.output import STUDENT_FILES, OutputFolder
from grader.record.placed import Placed


def pages_placed(out: OutputFolder, students: Sequence[str]) -> Placed:
    """The students' folders as a file of the run: whose three files are all there as drawn; a student whose folder
    lacks one, or holds a plain page in place of one, is left out of ``placed`` and named in a warning."""
    warnings = []
    for student in students:
        folder = out.student(student)
        absent = [name for name in STUDENT_FILES if not (folder.path / name).is_file()]
        plain = [page.name for page in (folder.report, folder.instructor) if page.name not in absent
                 and _is_fallback(page)]
        said = [*([", ".join(absent) + " not written"] if absent else []),
                *(f"{name} is a plain page with the score (the page could not be drawn)" for name in plain)]
        if said:
            warnings.append((student, f"{student}: {'; '.join(said)}"))
    lacking = {s for s, _ in warnings}
    placed = tuple(s for s in students if s not in lacking)
    return Placed(out.path / "students", "students/", len(placed), placed, warnings=tuple(w for _, w in warnings))


def _is_fallback(page: Path) -> bool:
    with page.open("rb") as handle:
        return handle.read(len(FALLBACK_MARK)) == FALLBACK_MARK.encode()


def write_student_folders(out: OutputFolder, students: Sequence[str]) -> dict[str, str]:
    """OUT/student-folders.json: each student id and the folder its files are in (ids are data; the folder name is
    made from the id by ``grader.names.file_name``, which people and scripts need not redo)."""
    mapping = {student: file_name(student) for student in sorted(students)}
    write_text_atomic(out.student_folders, json.dumps(mapping, ensure_ascii=False, indent=1) + "\n")
    return mapping


def read_student_folders(out: OutputFolder) -> dict[str, str]:
    """The mapping an earlier run wrote ({} when none could be read: a folder from before it was written)."""
    try:
        data = json.loads(out.student_folders.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
