"""The worked example of docs/writing-checks.md runs as printed: its checks.py and variants.py, taken from the page's
code blocks, with the example's reference (tests/fixtures/docs_example/), give d2l's MultiHeadAttention full marks and
name each of the two mistakes the page declares when a submission makes it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from grader.check.load import load_assignment
from grader.pipeline import grade_class

from .conftest import ROOT

PAGE = ROOT / "docs" / "writing-checks.md"
FIXTURE = ROOT / "tests" / "fixtures" / "docs_example"
NAME = "multihead_attention"


def page_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```\n", PAGE.read_text(encoding="utf-8"), flags=re.S)


def the_block(marker: str) -> str:
    found = [block for block in page_blocks() if marker in block]
    assert len(found) == 1, f"docs/writing-checks.md: expected one code block with {marker!r}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    solutions = tmp_path_factory.mktemp("solutions")
    package = solutions / NAME
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(FIXTURE / "reference_numpy.py", package / "reference_numpy.py")
    (package / "checks.py").write_text(the_block(f'name="{NAME}"'), encoding="utf-8")
    (package / "variants.py").write_text(the_block("@ASSIGNMENT.variant("), encoding="utf-8")
    return solutions


def test_the_example_grades_a_correct_module_in_full_and_names_each_mistake(example: Path, tmp_path: Path) -> None:
    spec = load_assignment(NAME, solutions_dir=example)
    assert spec.max_score == 20
    correct = (FIXTURE / "reference_style.py").read_text(encoding="utf-8")
    class_dir = tmp_path / "class"
    class_dir.mkdir()
    (class_dir / "correct.py").write_text(correct, encoding="utf-8")
    for variant in spec.variants:
        mutated = correct
        for old, new in variant.mutation:
            assert correct.count(old) == 1, (variant.id, old)
            mutated = mutated.replace(old, new)
        (class_dir / f"{variant.id.split('.')[1]}.py").write_text(mutated, encoding="utf-8")
    run = grade_class(assignment=NAME, submissions_dir=class_dir, out_dir=tmp_path / "out", solutions_dir=example)
    results = {r.student: r for r in run.results}
    assert results["correct"].score == 20
    assert all(c.diagnosis is None for c in results["correct"].checks)
    assert {v.id for v in spec.variants} == {"q1.unscaled", "q1.valid_lens_not_repeated"}
    for variant in spec.variants:
        result = results[variant.id.split(".")[1]]
        assert result.score < 20, variant.id
        diagnosed = {c.diagnosis.variant for c in result.checks if c.diagnosis is not None}
        assert diagnosed == {variant.id}, (variant.id, [c.message for c in result.checks])
