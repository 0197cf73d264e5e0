"""Two assignments that ask for the same name: `grader check` on a file that only that name tells apart asks which
assignment it is for instead of choosing one; `grader new` and `grader assign` warn when a name is asked twice."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.discover.assignment_of import infer_assignment, shared_name_warnings
from grader.errors import ConfigurationError

from .conftest import ROOT

NAMES = ("self_attention", "masked_softmax", "AdditiveAttention", "DotProdAttention", "PositionalEncoding",
         "multi_head_attention")
asked_sets = st.dictionaries(st.sampled_from(("a1", "a2", "a3", "a4")),
                             st.frozensets(st.sampled_from(NAMES), min_size=1), min_size=2)


@given(asked=asked_sets, defined=st.frozensets(st.sampled_from(NAMES), min_size=1))
def test_a_chosen_assignment_is_told_apart_by_the_file(asked: dict[str, frozenset[str]],
                                                       defined: frozenset[str]) -> None:
    sources = tuple(f"def {name}(): pass" for name in sorted(defined))
    try:
        chosen = infer_assignment(Path("work.py"), available=sorted(asked), asks_for=lambda a: tuple(asked[a]),
                                  sources=lambda: sources)
    except ConfigurationError as error:
        assert "--assignment" in str(error)
        return
    mine = asked[chosen] & defined
    assert mine  # it defines something the chosen one asks for
    for other, names in asked.items():
        if other != chosen and names & defined:
            assert not mine <= names, (chosen, other)  # and not only what another asks for too


def test_a_name_two_assignments_ask_for_is_no_answer(tmp_path: Path) -> None:
    asked = {"practical10": ("self_attention", "multi_head_attention", "DotProdAttention"),
             "positional": ("self_attention", "PositionalEncoding")}

    def infer(*defined: str) -> str:
        return infer_assignment(tmp_path / "mine.py", available=sorted(asked), asks_for=asked.__getitem__,
                                sources=lambda: tuple(f"def {n}(): pass" for n in defined))

    with pytest.raises(ConfigurationError, match=r"could be for positional or practical10 \(each asks for "
                                                 r"self_attention\): name it with --assignment"):
        infer("self_attention")  # positional's share (1 of 2) is larger, yet nothing tells them apart
    assert infer("self_attention", "PositionalEncoding") == "positional"
    assert infer("self_attention", "DotProdAttention") == "practical10"
    assert shared_name_warnings(asked) == [
        "warning: self_attention is asked for by positional and practical10: `grader check` on a file that defines "
        "only such names asks for --assignment (the notebooks `grader assign` writes name their assignment, and a "
        "file named after its assignment is told by its name)"]
    assert shared_name_warnings(asked, involving=["other"]) == []


def _grader(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_grader_new_and_assign_warn_and_grader_check_asks(tmp_path: Path) -> None:
    solutions, assignments = tmp_path / "solutions", tmp_path / "assignments"
    shutil.copytree(ROOT / "solutions" / "practical10", solutions / "practical10",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "solutions" / ".course-secret", solutions / ".course-secret")
    done = _grader("new", "probe", "--solutions", str(solutions), "--assignments", str(assignments),
                   "--submissions", str(tmp_path / "submissions"), cwd=tmp_path)
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
    # The new assignment asks for practical10's self_attention too.
    checks = solutions / "probe" / "checks.py"
    checks.write_text(checks.read_text().replace('defines=("padded_softmax",)',
                                                 'defines=("padded_softmax", "self_attention")'))
    assert "self_attention" in checks.read_text()
    done = _grader("assign", "probe", "--no-kit", "--solutions", str(solutions), "--out", str(assignments),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "warning: self_attention is asked for by practical10 and probe" in done.stderr
    mine = tmp_path / "mine.py"
    mine.write_text("import numpy as np\n\ndef self_attention(X, W_Q, W_K, W_V):\n    return X\n")
    done = _grader("check", str(mine), "--solutions", str(solutions), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2 and "could be for practical10 or probe (each asks for self_attention)" in done.stderr, \
        done.stdout + done.stderr
