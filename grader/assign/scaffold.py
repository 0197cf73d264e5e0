"""``grader new NAME``: a new assignment that passes the project's tests as soon as it is written.

It writes ``solutions/NAME/`` (the solution notebook with its solution markers, the float64 reference, the checks,
one known mistake and the package's ``__init__.py``), the student templates cut from that notebook
(``assignments/NAME/``, as ``grader assign`` writes them) and the model solution as a student would hand it in
(``tests/submissions/NAME/reference_style.py``, which the mutation test edits). The files' text is in
``scaffold_files``.

``training=True`` adds a question whose check trains a model with the student's class (a harness students get, in
``assignments/NAME/NAME_training.py``), decided by a staged verdict: the scaffold declares the trainings
(``calibration.py``) and runs the calibration, which writes ``training_stages.py`` (grader/check/calibration.py).
``written=True`` adds a written question worth points, with a rubric, and the answer cell its template hands out.
"""

from __future__ import annotations

import keyword
import os
from pathlib import Path

import jinja2
import nbformat

from grader.assign import scaffold_files as files
from grader.assign.markers import BEGIN, END
from grader.assign.student_notebook import ANSWER_TAG_PREFIX, DEMO_TAG
from grader.assign.templates import SOLUTION_SOURCE, write_templates
from grader.check.calibration import STAGES_MODULE, declared, measure, write_stages
from grader.check.load import load_assignment
from grader.check.staged import Stage, StagedVerdict
from grader.errors import ConfigurationError

SAMPLE = "reference_style.py"  # the name tests/test_variants.py looks for


def check_name(name: str) -> None:
    """An assignment's name is a package's and a module's (``NAME.py`` for students): a lower-case identifier."""
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name != name.lower():
        raise ConfigurationError(f"{name!r} cannot name an assignment: use a lower-case Python identifier, such as "
                                 "multihead_attention (letters, digits and _, not starting with a digit or _)")


# The training question's figures the scaffold needs before the calibration has run (checks.py's PASS_ACCURACY, the
# harness's Config.epochs): the verdict it starts from trains to the end and decides at the mark.
TRAINING_MARK, TRAINING_EPOCHS = 0.85, 4.0
WRITTEN_ID = "why_zero"


def harness_name(name: str) -> str:
    return f"{name}_training.py"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
                              lstrip_blocks=True, autoescape=False)  # Python and Markdown, not HTML


def _check_imports(*, training: bool, written: bool) -> str:
    """checks.py's ``from grader.check import ...``, as ruff's isort writes it (the scaffold passes `make lint`)."""
    names = ["HIDDEN", "Arg", "Assignment", "CheckContext", "Question"]
    names += ["RubricItem", "WrittenQuestion"] * written + ["StagedVerdict", "StudentRaised", "WrongAnswer"] * training
    names = names[:1] + sorted(names[1:])
    line = ", ".join(names)
    if len("from grader.check import " + line) <= 120:
        return line
    return "(\n" + "".join(f"    {n},\n" for n in names) + ")"


def render(text: str, context: dict[str, object]) -> str:
    return _environment().from_string(text).render(context)


def solution_notebook(name: str, *, training: bool = False, written: bool = False) -> nbformat.NotebookNode:
    """The solution source: introduction, imports, each question, its marked solution and an example (a demo cell,
    which the .py template runs only as a script); the written question's prompt and answer cell."""
    context = _context(name, training=training, written=written)
    solution = "".join([files.SIGNATURE, f"    {BEGIN}\n", files.SOLUTION_BODY, f"    {END}"])
    cells = [
        nbformat.v4.new_markdown_cell(render(files.INTRODUCTION, context), id="introduction"),
        nbformat.v4.new_code_cell("\n".join([files.IMPORTS] + [files.TRAINING_IMPORTS] * training), id="imports"),
        nbformat.v4.new_markdown_cell(files.QUESTION, id="q1"),
        nbformat.v4.new_code_cell(solution, id="q1-padded-softmax"),
        nbformat.v4.new_code_cell(files.DEMO, id="q1-example", metadata={"tags": [DEMO_TAG]}),
    ]
    if training:
        pooling = "".join([files.POOLING_SIGNATURE, f"        {BEGIN}\n", files.POOLING_BODY, f"        {END}"])
        cells += [
            nbformat.v4.new_markdown_cell(render(files.POOLING_QUESTION, context), id="q2"),
            nbformat.v4.new_code_cell(pooling, id="q2-attention-pooling"),
            nbformat.v4.new_code_cell(render(files.POOLING_DEMO, context), id="q2-example",
                                      metadata={"tags": [DEMO_TAG]}),
        ]
    if written:
        cells += [
            nbformat.v4.new_markdown_cell(render(files.WRITTEN_QUESTION, context), id="written"),
            nbformat.v4.new_markdown_cell(files.WRITTEN_ANSWER, id="written-answer",
                                          metadata={"tags": [f"{ANSWER_TAG_PREFIX}{WRITTEN_ID}"]}),
        ]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return notebook


def _context(name: str, *, training: bool, written: bool, harness_path: str = "") -> dict[str, object]:
    harness = harness_name(name)
    return {"name": name, "training": training, "written": written, "harness": harness,
            "harness_module": harness.removesuffix(".py"), "harness_path": harness_path,
            "written_number": 3 if training else 2, "check_imports": _check_imports(training=training, written=written)}


def scaffold(name: str, *, solutions_dir: Path, assignments_dir: Path, submissions_dir: Path,
             training: bool = False, written: bool = False) -> list[Path]:
    """Write assignment ``name``; returns the files written. Refuses (ConfigurationError) an invalid name, or one
    whose solutions, templates or sample already exist, before writing anything. With ``training``, the calibration
    runs last (trainings in processes of their own: seconds)."""
    check_name(name)
    folder = solutions_dir / name
    sample = submissions_dir / name / SAMPLE
    existing = [path for path in (folder, assignments_dir / name, sample) if path.exists()]
    if existing:
        raise ConfigurationError(f"{name}: {', '.join(map(str, existing))} already exists; `grader new` writes a new "
                                 "assignment only (pick another name, or remove it first)")
    harness = assignments_dir / name / harness_name(name)
    # Relative, so that the course's folder can move; written the way it is joined onto the solution's folder.
    context = _context(name, training=training, written=written,
                       harness_path=Path(os.path.relpath(harness.resolve(), folder.resolve())).as_posix())
    texts = {folder / "__init__.py": files.INIT, folder / "reference_numpy.py": files.REFERENCE_NUMPY,
             folder / "checks.py": files.CHECKS, folder / "variants.py": files.VARIANTS, sample: files.SAMPLE}
    if training:
        texts |= {folder / "calibration.py": files.CALIBRATION, harness: files.HARNESS}
    written_files = []
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(text, context), encoding="utf-8")
        written_files.append(path)
    stages = folder / f"{STAGES_MODULE}.py"
    if training:  # until the calibration has run: train to the end, decide at the mark
        write_stages(StagedVerdict(TRAINING_MARK, (Stage(TRAINING_EPOCHS, TRAINING_MARK, TRAINING_MARK),)), stages,
                     command=f"grader new {name} --training (no stages yet: run grader calibrate {name})",
                     trainings=0, seconds=0.0, unit="epochs")
    nbformat.write(solution_notebook(name, training=training, written=written), folder / SOLUTION_SOURCE)
    written_files.append(folder / SOLUTION_SOURCE)
    load_assignment(name, solutions_dir=solutions_dir)  # what grading would load, validated
    written_files += write_templates(name, solutions_dir=solutions_dir, assignments_dir=assignments_dir)
    if training:
        measure(name, declared(name, solutions_dir), solutions_dir=solutions_dir.resolve(), out=stages,
                command=f"grader calibrate {name}")
        written_files.append(stages)
    return written_files
