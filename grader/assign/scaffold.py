"""``grader new NAME``: a new assignment that passes the project's tests as soon as it is written.

It writes ``solutions/NAME/`` (the solution notebook with its solution markers, the float64 reference, the checks,
one known mistake and the package's ``__init__.py``), the student templates cut from that notebook
(``assignments/NAME/``, as ``grader assign`` writes them) and the model solution as a student would hand it in
(``tests/submissions/NAME/reference_style.py``, which the mutation test edits). The files' text is in
``scaffold_files``.
"""

from __future__ import annotations

import keyword
from pathlib import Path

import nbformat

from grader.assign import scaffold_files as files
from grader.assign.markers import BEGIN, END
from grader.assign.student_notebook import DEMO_TAG
from grader.assign.templates import SOLUTION_SOURCE, write_templates
from grader.check.load import load_assignment
from grader.errors import ConfigurationError

SAMPLE = "reference_style.py"  # the name tests/test_variants.py looks for


def check_name(name: str) -> None:
    """An assignment's name is a package's and a module's (``NAME.py`` for students): a lower-case identifier."""
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name != name.lower():
        raise ConfigurationError(f"{name!r} cannot name an assignment: use a lower-case Python identifier, such as "
                                 "multihead_attention (letters, digits and _, not starting with a digit or _)")


def solution_notebook(name: str) -> nbformat.NotebookNode:
    """The solution source: introduction, imports, the question, its marked solution and an example (a demo cell,
    which the .py template runs only as a script)."""
    solution = "".join([files.SIGNATURE, f"    {BEGIN}\n", files.SOLUTION_BODY, f"    {END}"])
    cells = [
        nbformat.v4.new_markdown_cell(_named(files.INTRODUCTION, name), id="introduction"),
        nbformat.v4.new_code_cell(files.IMPORTS, id="imports"),
        nbformat.v4.new_markdown_cell(files.QUESTION, id="q1"),
        nbformat.v4.new_code_cell(solution, id="q1-padded-softmax"),
        nbformat.v4.new_code_cell(files.DEMO, id="q1-example", metadata={"tags": [DEMO_TAG]}),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    nbformat.validate(notebook)
    return notebook


def _named(text: str, name: str) -> str:
    return text.replace("{{name}}", name)


def scaffold(name: str, *, solutions_dir: Path, assignments_dir: Path, submissions_dir: Path) -> list[Path]:
    """Write assignment ``name``; returns the files written. Refuses (ConfigurationError) an invalid name, or one
    whose solutions, templates or sample already exist, before writing anything."""
    check_name(name)
    folder = solutions_dir / name
    sample = submissions_dir / name / SAMPLE
    existing = [path for path in (folder, assignments_dir / name, sample) if path.exists()]
    if existing:
        raise ConfigurationError(f"{name}: {', '.join(map(str, existing))} already exists; `grader new` writes a new "
                                 "assignment only (pick another name, or remove it first)")
    texts = {folder / "__init__.py": files.INIT, folder / "reference_numpy.py": files.REFERENCE_NUMPY,
             folder / "checks.py": files.CHECKS, folder / "variants.py": files.VARIANTS, sample: files.SAMPLE}
    written = []
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_named(text, name), encoding="utf-8")
        written.append(path)
    nbformat.write(solution_notebook(name), folder / SOLUTION_SOURCE)
    written.append(folder / SOLUTION_SOURCE)
    load_assignment(name, solutions_dir=solutions_dir)  # what grading would load, validated
    written += write_templates(name, solutions_dir=solutions_dir, assignments_dir=assignments_dir)
    return written
