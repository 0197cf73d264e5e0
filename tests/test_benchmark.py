"""`make bench` builds its synthetic class as it says: notebooks of the sample class, each student's code their own."""

from __future__ import annotations

from pathlib import Path

import nbformat

from tests.benchmark import build_class, sample_notebooks


def test_the_synthetic_class_cycles_through_the_samples_with_every_code_cell_its_own(tmp_path: Path) -> None:
    samples = sample_notebooks()
    paths = build_class(tmp_path, len(samples) + 2)
    assert len(paths) == len(samples) + 2 and len({p.name for p in paths}) == len(paths)
    assert {name for name, _ in samples} >= {"textbook", "mistake_softmax_axis", "einsum_style", "folder_student"}
    seen: set[str] = set()
    for index, path in enumerate(paths):
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        sources = [c.source for c in notebook.cells if c.cell_type == "code"]
        assert all(source.startswith(f"# student {index}\n") for source in sources[:-1])
        assert not seen & set(sources)  # no cell a grader could cache across students
        seen |= set(sources)
