"""The student kit's output as a real notebook shows it: a submission's code, then the template's "Check your work"
cell, run by nbclient in a real Jupyter kernel from a built kit's folder.

    .venv/bin/python -m tests.kit_notebook FRAGMENT.html [--sample PATH]   # the HTML the check cell displayed

`make screenshots` shoots that fragment (docs/screenshots/kit.png); tests/test_kit_notebook.py opens it in Chromium.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.assign.student_notebook import CHECK_CELL_IDS
from grader.kit.build import build_kit
from grader.paths import PROJECT_ROOT

SAMPLE = PROJECT_ROOT / "tests" / "submissions" / "attention_scoring" / "mistake_softmax_axis.py"
PICTURED = SAMPLE.with_name("mistake_ignores_2d.py")  # one mistake, in one check: a picture of a readable size


def kit_output(kit: Path, code: str, name: str = "attention_scoring") -> tuple[str, str]:
    """(HTML, text) of the one display the template's check cell shows after a cell holding ``code``, in a kernel
    started in the kit's folder ``kit``."""
    template = nbformat.read(kit / f"{name}.ipynb", as_version=4)
    notebook = nbformat.v4.new_notebook(metadata=template.metadata)
    notebook.cells = [nbformat.v4.new_code_cell(code), *[c for c in template.cells if c.id in CHECK_CELL_IDS]]
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(kit)}})
    client.execute(env={k: v for k, v in os.environ.items() if k != "GRADER_KIT"})  # the kit found from the folder
    (shown,) = notebook.cells[-1].outputs
    return shown.data["text/html"], shown.data["text/plain"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fragment", type=Path)
    parser.add_argument("--sample", type=Path, default=PICTURED)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        kit = build_kit("attention_scoring", out_dir=Path(folder))
        html, _ = kit_output(kit, args.sample.read_text(encoding="utf-8"))
    args.fragment.parent.mkdir(parents=True, exist_ok=True)
    args.fragment.write_text(html, encoding="utf-8")
    print(args.fragment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
