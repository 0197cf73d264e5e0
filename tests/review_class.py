"""A class of the written_maps fixture assignment (tests/fixtures/solutions/written_maps) to mark in the review app:
notebooks whose written answers are tagged markdown cells, each after a code cell saved with a figure, as Jupyter
saves them. Shared by the review app's tests and its benchmark (tests/review_benchmark.py)."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import nbformat

from grader.pipeline import ClassRun, RunOptions, RunRequest, grade_class

from .conftest import FIXTURE_SOLUTIONS

ASSIGNMENT = "written_maps"
CODE = """import torch

def attend(scores):
    return torch.softmax(scores, dim=-1)
"""
WRONG = """import torch

def attend(scores):
    return torch.softmax(scores, dim=0)
"""
# An answer a student wrote with HTML in it: none of it may run or load in the marker's browser.
HOSTILE = ('Softmax <script>window.__pwned = "script"</script><img src="x" onerror="window.__pwned = \'onerror\'">'
           ' normalises each row. <a href="javascript:window.__pwned=1">see</a>')


def png(size: int = 96) -> str:
    """A real PNG, base64, as a notebook saves a figure: an attention map whose diagonal is bright."""
    def pixel(row: int, column: int) -> bytes:
        return bytes([250, 220, 40] if row == column else [40, 20, 90])  # an 8 x 8 map, in blocks

    rows = b"".join(b"\x00" + b"".join(pixel(r // (size // 8), c // (size // 8)) for c in range(size))
                    for r in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    image = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
             + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(image).decode("ascii")


def notebook(code: str, why: str, maps: str) -> str:
    cells = [
        nbformat.v4.new_markdown_cell("# Attention maps"),
        nbformat.v4.new_code_cell(code),
        nbformat.v4.new_markdown_cell("**Question.** Why do the rows of the weights sum to 1?"),
        nbformat.v4.new_markdown_cell(why, metadata={"tags": ["answer:why"]}),
        nbformat.v4.new_markdown_cell("**Question.** Do your attention maps look as expected?"),
        nbformat.v4.new_code_cell("plot(attend(scores))", outputs=[nbformat.v4.new_output(
            "display_data", data={"image/png": png(), "text/plain": "<Figure>"})]),
        nbformat.v4.new_markdown_cell(maps, metadata={"tags": ["answer:maps"]}),
    ]
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells))


STUDENTS = {
    "ana": notebook(CODE, HOSTILE, "The diagonal is bright: each query looks at its own key."),
    "ben": notebook(WRONG, "Because of the softmax, and the weights are positive.", "They look odd."),
    "cleo": notebook(CODE, "They are probabilities.", "Yes, a clear diagonal, see the figure above."),
}


def write_class(folder: Path, students: dict[str, str] = STUDENTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for student, text in students.items():
        (folder / f"{student}.ipynb").write_text(text, encoding="utf-8")
    return folder


def grade(submissions: Path, out: Path, *, jobs: int = 2, force: bool = False,
          job_processes: bool | None = None) -> ClassRun:
    return grade_class(RunRequest(assignment=ASSIGNMENT, submissions_dir=submissions, out_dir=out,
                                  solutions_dir=FIXTURE_SOLUTIONS, force=force),
                       RunOptions(jobs=jobs, job_processes=job_processes))
