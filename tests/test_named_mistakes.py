"""A mistake a check names by string (``misconception="q1.bias_present"``) must be one the assignment registers: a
misspelt one fails when the assignment loads, naming the check, the id and the known ids, and never reaches a
student as an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.check.load import available_assignments, load_assignment
from grader.check.named_mistakes import named_in
from grader.cli import main
from grader.errors import ConfigurationError

from .conftest import write

VARIANTS = '''
from .checks import ASSIGNMENT

ASSIGNMENT.misconception("q1", "bias_present", name="a bias", explain="Your scale adds a bias.")
ASSIGNMENT.misconception("q1", "halved", name="halved", explain="Your scale halves.")
'''


def spelt(folder: Path, *, in_check: str = "q1.bias_present", in_helper: str = "q1.halved") -> Path:
    """An assignment in ``folder/spelt`` whose check names ``in_check`` directly and whose helper names ``in_helper``
    through a local name, as solutions/bahdanau_attention's q1.parameters does."""
    write(folder / "spelt", "__init__.py", "")
    write(folder / "spelt", "variants.py", VARIANTS)
    write(folder / "spelt", "checks.py", f'''
        import numpy as np

        from grader.check import Arg, Assignment, CheckContext, Question

        ASSIGNMENT = Assignment(name="spelt", title="Spelt", questions=[Question("q1", "scale", defines=("scale",))])
        check = ASSIGNMENT.check


        def expect_doubled(ctx: CheckContext, got: np.ndarray, x: np.ndarray) -> None:
            named = None
            if np.allclose(got, x / 2):
                named = "{in_helper}"
            ctx.expect(np.allclose(got, 2 * x), "not doubled", misconception=named)


        @check("q1", points=1)
        def q1_doubles(ctx: CheckContext) -> None:
            x = np.array([1.0, 2.0])
            got = ctx.student.function("scale")(Arg.tensor(x)).array
            ctx.expect(got[0] != 3.0 or "energy.bias" in str(got), "a bias",
                       misconception="{in_check}" if got[0] == 3.0 else None)
            expect_doubled(ctx, got, x)
        ''')
    return folder


def test_the_ids_named_are_read_from_the_checks_source(tmp_path: Path) -> None:
    folder = spelt(tmp_path)
    named = {(n.id, n.function) for n in named_in(folder / "spelt" / "checks.py")}
    # The condition's string is not an id; the helper's is found through the local name it assigns.
    assert named == {("q1.bias_present", "q1_doubles"), ("q1.halved", "expect_doubled")}
    assert [v.id for v in load_assignment("spelt", solutions_dir=folder).variants] == ["q1.bias_present", "q1.halved"]
    naming = 0
    for name in available_assignments():  # every assignment: the ids its checks name are its variants'
        spec = load_assignment(name)
        ids = {n.id for n in named_in(spec.folder / "checks.py")}
        assert ids <= {v.id for v in spec.variants}, name
        naming += bool(ids)
    assert naming >= 3  # attention_scoring, bahdanau_attention and keras_additive_attention name some


def test_a_misspelt_id_in_a_check_fails_when_the_assignment_loads(tmp_path: Path) -> None:
    folder = spelt(tmp_path, in_check="q1.bais_present")
    with pytest.raises(ConfigurationError) as caught:
        load_assignment("spelt", solutions_dir=folder)
    message = caught.value.message
    assert message.startswith("spelt: check q1.doubles (q1_doubles, checks.py, line ")
    assert "names misconception 'q1.bais_present', which no variant or misconception registers" in message
    assert "did you mean 'q1.bias_present'?" in message and "(known: q1.bias_present, q1.halved)" in message


def test_a_misspelt_id_in_a_helper_fails_when_the_assignment_loads(tmp_path: Path) -> None:
    folder = spelt(tmp_path, in_helper="q1.halfed")
    with pytest.raises(ConfigurationError, match=r"spelt: expect_doubled \(checks.py, line \d+\) names misconception "
                                                 r"'q1.halfed'.*did you mean 'q1.halved'\?"):
        load_assignment("spelt", solutions_dir=folder)


def test_grading_stops_before_any_student_with_the_instructors_error(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    folder = spelt(tmp_path, in_check="q2.bias_present")
    write(tmp_path / "class", "ana.py", "def scale(x):\n    return x * 2\n")
    code = main(["grade", "spelt", str(tmp_path / "class"), "--solutions", str(folder), "--out", str(tmp_path / "out")])
    assert code == ConfigurationError.exit_code  # 2, the instructor's: not 3 with ana's 0/100 internal_error
    assert "names misconception 'q2.bias_present'" in capsys.readouterr().err
    assert not (tmp_path / "out" / "students").exists()


def test_a_folder_missing_a_file_says_what_to_add(tmp_path: Path) -> None:
    write(tmp_path / "half", "checks.py", "")
    assert available_assignments(tmp_path) == []
    with pytest.raises(ConfigurationError, match=r"half is not an assignment: add __init__.py \(.*`grader new NAME`"):
        load_assignment("half", solutions_dir=tmp_path)
