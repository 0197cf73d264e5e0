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
from grader.check.load import available_assignments, load_assignment, load_solution_module
from grader.pipeline import RunOptions, RunRequest, grade_class
from grader.results import SubmissionResult

from .conftest import FIXTURE_SOLUTIONS, ROOT, with_templates, with_variants
from .mutants import mutant_name, mutate
from .sample_classes import by_student, student_reads

NAME = "multihead_attention"


def grader(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


def new(tmp_path: Path, name: str = NAME, *options: str) -> subprocess.CompletedProcess[str]:
    """``grader new`` into tmp_path's solutions/, assignments/ and submissions/, the project's layout."""
    return grader("new", name, *options, "--solutions", str(tmp_path / "solutions"), "--assignments",
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
    run = by_student(grade_class(RunRequest(assignment=NAME, submissions_dir=tmp_path / "class",
                                            out_dir=tmp_path / "out2", solutions_dir=solutions), RunOptions(jobs=1)))
    model, mutant = run["reference_style"], run[mutant_name(variant)]
    assert model.score == model.max_score == 10 and all(c.diagnosis is None for c in model.checks)
    assert mutant.status == "graded" and scores(mutant)["q1"] < scores(model)["q1"]
    assert {c.diagnosis.variant for c in mutant.checks if c.diagnosis is not None} == {"q1.no_mask"}


@pytest.mark.slow
def test_a_new_assignment_with_a_training_and_a_written_question_passes_its_own_tests_at_once(tmp_path: Path) -> None:
    """`grader new NAME --training --written`: a question whose check trains a model with the student's class,
    decided by a staged verdict the scaffold calibrated, and a written question worth points with a rubric. What
    `make test-assignment` holds it to, here on a class: the model solution earns every automatic point, each known
    mistake costs its own question only (q1's mistake does not sink q2's training), the blank templates earn 0 and
    hand in no written answer, and lint passes on what was written."""
    made = new(tmp_path, NAME, "--training", "--written")
    assert made.returncode == 0, made.stderr
    assert "warning" not in made.stderr  # the rubric adds up to the points
    solutions, assignments = tmp_path / "solutions", tmp_path / "assignments"
    folder = solutions / NAME
    assert {"calibration.py", "training_stages.py"} <= {p.name for p in folder.iterdir()}
    assert (assignments / NAME / f"{NAME}_training.py").is_file()
    stages = (folder / "training_stages.py").read_text()
    assert f"written by `grader calibrate {NAME}`" in stages  # the calibration ran: no threshold typed in
    measured = load_solution_module(NAME, "training_stages", solutions_dir=solutions).MEASURED
    assert measured["calibration"]["failed_early"] == measured["calibration"]["passed_early"] == 0
    assert set(measured["check_seed"]) == {"reference", "valid_lens ignored", "scores ignored"}
    linted = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"),
                             str(folder)], capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout
    assert stale_templates(NAME, solutions_dir=solutions, assignments_dir=assignments) == []

    spec = load_assignment(NAME, solutions_dir=solutions)
    assert spec.authoring_warnings() == []
    assert spec.warm_up == "optimizer"  # its harness makes torch's Adam: the zygote pays the compiler's import once
    assert [w.id for w in spec.written] == ["why_zero"] and spec.written[0].points == 4
    assert sorted(v.id for v in spec.variants) == ["q1.no_mask", "q2.scores_ignored"]
    sample = tmp_path / "submissions" / NAME / SAMPLE
    (tmp_path / "class").mkdir()
    base = sample.read_text()
    (tmp_path / "class" / SAMPLE).write_text(base)
    for variant in spec.variants:
        (tmp_path / "class" / f"{mutant_name(variant)}.py").write_text(mutate(base, variant))
    shutil.copy(assignments / NAME / f"{NAME}.py", tmp_path / "class" / "blank_py.py")
    shutil.copy(assignments / NAME / f"{NAME}.ipynb", tmp_path / "class" / "blank_notebook.ipynb")
    run = by_student(grade_class(RunRequest(assignment=NAME, submissions_dir=tmp_path / "class",
                                            out_dir=tmp_path / "out", solutions_dir=solutions), RunOptions(jobs=2)))
    model = run["reference_style"]
    assert scores(model) == {"q1": 10, "q2": 30} and all(c.diagnosis is None for c in model.checks)
    training = next(c for c in model.checks if c.check_id == "q2.training")
    assert "decided after" in " ".join(training.notes)  # the staged verdict stopped before the last epoch
    no_mask, ignored = run["q1_no_mask"], run["q2_scores_ignored"]
    assert scores(no_mask) == {"q1": 0, "q2": 30}  # q2 masks on its own
    assert {c.diagnosis.variant for c in no_mask.checks if c.diagnosis} == {"q1.no_mask"}
    assert scores(ignored)["q1"] == 10 and scores(ignored)["q2"] == 0
    assert {c.diagnosis.variant for c in ignored.checks if c.diagnosis} == {"q2.scores_ignored"}
    assert "learned too little" in student_reads(ignored, "q2.training")
    for blank in ("blank_py", "blank_notebook"):
        assert scores(run[blank]) == {"q1": 0, "q2": 0}
    assert [a.text for a in run["blank_notebook"].answers] == [""]  # the header is the template's, not an answer


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
