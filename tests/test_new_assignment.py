"""Writing an assignment without reading the engine: ``grader new NAME`` writes one that grades its sample to full
marks and whose known mistake the mutation test catches; the minimal example copied into solutions/ is tested for
what it has; ``grader --version`` says which checkout runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader import __version__
from grader.assign import SOLUTION_SOURCE, stale_templates, with_solution_source
from grader.assign.scaffold import SAMPLE
from grader.check.load import available_assignments, load_assignment
from grader.pipeline import grade_class
from grader.results import SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, ROOT, with_templates, with_variants
from .mutants import mutant_name, mutate
from .sample_classes import by_student

NAME = "multihead_attention"


def grader(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def new(tmp_path: Path, name: str = NAME) -> subprocess.CompletedProcess[str]:
    """``grader new`` into tmp_path's solutions/, assignments/ and submissions/, the project's layout."""
    return grader("new", name, "--solutions", str(tmp_path / "solutions"), "--assignments",
                  str(tmp_path / "assignments"), "--submissions", str(tmp_path / "submissions"))


def scores(result: SubmissionResult) -> dict[str, float]:
    return {q.id: q.score for q in result.questions}


@pytest.mark.slow
def test_a_new_assignment_grades_its_sample_to_full_marks_and_catches_its_mistake(tmp_path: Path) -> None:
    made = new(tmp_path)
    assert made.returncode == 0, made.stderr
    solutions, assignments = tmp_path / "solutions", tmp_path / "assignments"
    assert sorted(p.name for p in (solutions / NAME).iterdir() if p.is_file()) == [
        "__init__.py", "checks.py", "reference_numpy.py", SOLUTION_SOURCE, "variants.py"]
    # What the discovery-driven tests find in it: templates from its notebook, in sync; a catalogue of mistakes.
    assert with_templates(solutions) == with_variants(solutions) == [NAME]
    assert stale_templates(NAME, solutions_dir=solutions, assignments_dir=assignments) == []
    spec = load_assignment(NAME, solutions_dir=solutions)
    assert [v.id for v in spec.variants] == ["q1.no_mask"]

    sample = tmp_path / "submissions" / NAME / SAMPLE
    graded = grader("grade", NAME, str(sample.parent), "--solutions", str(solutions), "--out", str(tmp_path / "out"))
    assert graded.returncode == 0, graded.stderr
    rows = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert rows[0].startswith("student,score,max_score,status,q1,")
    assert rows[1].startswith("reference_style,10,10,graded,10,")  # full marks

    # The mutation test's way: the sample and one mutant per variant graded as a class.
    (tmp_path / "class").mkdir()
    base = sample.read_text()
    (tmp_path / "class" / SAMPLE).write_text(base)
    (variant,) = spec.variants
    (tmp_path / "class" / f"{mutant_name(variant)}.py").write_text(mutate(base, variant))
    run = by_student(grade_class(assignment=NAME, submissions_dir=tmp_path / "class", out_dir=tmp_path / "out2",
                                 solutions_dir=solutions, jobs=1))
    model, mutant = run["reference_style"], run[mutant_name(variant)]
    assert model.score == model.max_score == 10 and all(c.diagnosis is None for c in model.checks)
    assert mutant.status == "graded" and scores(mutant)["q1"] < scores(model)["q1"]
    assert {c.diagnosis.variant for c in mutant.checks if c.diagnosis is not None} == {"q1.no_mask"}


def test_grader_new_refuses_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "solutions" / NAME).mkdir(parents=True)
    (tmp_path / "solutions" / NAME / "checks.py").write_text("# the instructor's work\n")
    refused = new(tmp_path)
    assert refused.returncode == 2
    assert "already exists; `grader new` writes a new assignment only" in refused.stderr
    assert (tmp_path / "solutions" / NAME / "checks.py").read_text() == "# the instructor's work\n"
    assert not (tmp_path / "assignments").exists() and not (tmp_path / "submissions").exists()


@pytest.mark.parametrize("name", ["2heads", "class", "MultiHead", "multi-head", "_private"])
def test_grader_new_takes_a_lower_case_identifier(tmp_path: Path, name: str) -> None:
    refused = new(tmp_path, name)
    assert refused.returncode == 2 and "cannot name an assignment: use a lower-case Python identifier" in refused.stderr
    assert not tmp_path.joinpath("solutions").exists()


def test_the_minimal_example_copied_into_solutions_is_tested_for_what_it_has(tmp_path: Path) -> None:
    """docs/writing-checks.md's minimal example, `cp -r tests/fixtures/solutions/toy solutions/`: it loads, and the
    template and mutation tests, which find assignments by what they have, leave it out (it has no solution.ipynb and
    no variants.py), so `make test` passes with it."""
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions", solutions, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(FIXTURE_SOLUTIONS / "toy", solutions / "toy", ignore=shutil.ignore_patterns("__pycache__"))
    assert "toy" in available_assignments(solutions)
    assert load_assignment("toy", solutions_dir=solutions).name == "toy"
    assert "toy" not in with_templates(solutions) and "toy" not in with_variants(solutions)
    # test_assignment_templates.py's rule, on this folder: every solution source is an assignment's.
    assert set(with_solution_source(solutions)) <= set(available_assignments(solutions))
    assert with_templates(solutions) == with_templates() and with_variants(solutions) == with_variants()


def test_version_names_the_folder_it_runs_from() -> None:
    shown = grader("--version")
    assert shown.returncode == 0
    assert shown.stdout.strip() == f"grader {__version__} ({ROOT / 'grader'})"
