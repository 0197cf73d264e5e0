"""Nothing of the solutions reaches a student kit beyond the public checks: no hidden check's id, name or title, no
line of the reference code (nor of the known-wrong variants, which are the reference with one mistake), and none
of the inputs the hidden checks draw for the kit's student. Each is searched for in every file of every kit."""

from __future__ import annotations

import ast
import copy
import zipfile
from pathlib import Path

import numpy as np
import pytest

from grader.check.load import load_assignment, load_solution_module
from grader.execute import isolation
from grader.kit import build
from grader.kit.bundle import KIT_FOLDER, read_json
from grader.paths import ASSIGNMENTS_DIR, SOLUTIONS_DIR
from grader.pipeline.submission_run import grade_submission
from grader.results import PUBLIC

from .conftest import with_templates

ASSIGNMENTS = with_templates()  # every assignment with a kit
SOURCES = ("reference_numpy.py", "reference_torch.py", "variants.py")



def kit_text(folder: Path, *, own: bool = False) -> str:
    """Every text the kit holds: its files' text, and the names inside a wheel, if any; ``own``: only what the kit
    adds to the assignment's folder that students get anyway (the templates' prose may use a title's words)."""
    texts = []
    for path in sorted((folder / KIT_FOLDER if own else folder).rglob("*")):
        if path.suffix == ".whl":
            texts.append("\n".join(zipfile.ZipFile(path).namelist()))
        elif path.is_file() and path.suffix != ".npy":
            texts.append(path.read_text(encoding="utf-8"))
    return "\n".join(texts)


def code_lines(path: Path) -> set[str]:
    """The lines of a file's functions and classes that say something (no docstrings, no short or bare lines)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node)
            for line in lines[node.lineno - 1:node.end_lineno]:
                text = line.strip()
                if len(text) >= 24 and not text.startswith(("#", "@", "def ", "class ", '"', "'")) \
                        and (doc is None or text not in doc):
                    found.add(text)
    return found


def given_to_students(name: str) -> str:
    """What students have anyway: the assignment's folder (templates, a training harness)."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((ASSIGNMENTS_DIR / name).iterdir()) if p.is_file())


def hidden_inputs(name: str) -> list[np.ndarray]:
    """The arrays the hidden checks pass to the references, drawn as for the kit's student (the kit's seeds)."""
    spec = load_assignment(name)
    hidden = copy.copy(spec)
    hidden.checks = [c for c in spec.checks if c.visibility != PUBLIC]
    hidden.questions = tuple(q for q in spec.questions if any(c.question == q.id for c in hidden.checks))
    calls: dict[str, list] = {}
    hidden.checks = [build._recorded_check(c, calls, set(), {}, set()) for c in hidden.checks]
    checks = load_solution_module(name, "checks")
    derived = build.derive_public_checks((SOLUTIONS_DIR / name / "checks.py").read_text(), name=name,
                                         public=[c.run.__name__ for c in spec.checks], hidden=[])
    solution = build._solution(name, SOLUTIONS_DIR)
    with build._recorded_references(checks, derived.relative_imports, checks.__package__, {}):
        grade_submission(submission=solution, assignment=hidden, root=solution.path.parent, limits=spec.limits,
                         sandbox=isolation.detect())
    arrays = []
    for recorded in calls.values():
        for call in recorded:
            for value in [*call.args, *call.kwargs.values()]:
                values = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) \
                    else [value]
                arrays += [np.asarray(v) for v in values if isinstance(v, np.ndarray) and v.size >= 4]
    return arrays


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_no_hidden_check_is_named_or_counted(kits: Path, name: str) -> None:
    spec = load_assignment(name)
    text, own = kit_text(kits / name), kit_text(kits / name, own=True)
    hidden = [c for c in spec.checks if c.visibility != PUBLIC]
    assert hidden
    for check in hidden:
        for word in (check.id, check.run.__name__):
            assert word not in text, f"{name}: the kit names hidden check {check.id} ({word!r})"
        assert check.title not in own, f"{name}: the kit holds the title of hidden check {check.id}"
    listed = read_json(kits / name / KIT_FOLDER / "kit.json")["checks"]
    assert [c["id"] for c in listed] == [c.id for c in spec.checks if c.visibility == PUBLIC]


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_no_line_of_the_reference_code_is_in_the_kit(kits: Path, name: str) -> None:
    text = kit_text(kits / name, own=True)
    given = given_to_students(name)
    lines = set().union(*(code_lines(SOLUTIONS_DIR / name / source) for source in SOURCES
                          if (SOLUTIONS_DIR / name / source).is_file()))
    assert lines, f"{name}: no line of its reference code to look for"  # a new assignment's may be a few lines
    # The public checks' own code is in the kit by design: a line it shares with the reference (`if mask is not
    # None:`, the specification in a message) is the check's, and so is what students are given anyway.
    checks = (SOLUTIONS_DIR / name / "checks.py").read_text(encoding="utf-8")
    leaked = sorted(line for line in lines if line in text and line not in given and line not in checks)
    assert not leaked, f"{name}: reference lines in the kit: {leaked[:5]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_no_input_of_a_hidden_check_is_in_the_kit(kits: Path, name: str) -> None:
    secret = hidden_inputs(name)
    assert secret, name
    shipped = [np.load(p, allow_pickle=False) for p in (kits / name / KIT_FOLDER).rglob("*.npy")]
    assert shipped
    for array in secret:
        same = [s for s in shipped if s.shape == array.shape and np.allclose(s, array, rtol=1e-6, atol=0)]
        assert not same, f"{name}: a hidden input of shape {array.shape} is in the kit"

