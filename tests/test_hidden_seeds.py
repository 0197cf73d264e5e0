"""Hidden checks' random cases are keyed with the course's secret, kept beside the solutions and never shipped: the
seed's code is in the student kit's wheel, but without the secret no one can rebuild a hidden check's inputs.
Public checks' cases stay everyone's (the kit draws them too)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from grader.check.load import load_assignment
from grader.check.seeds import SECRET_FILE, check_seed, course_secret
from grader.results import HIDDEN, PUBLIC

from .conftest import ROOT

names = st.text(min_size=1, max_size=20)
keys = st.binary(min_size=16, max_size=32)


@given(assignment=names, student=names, other=names, check=names, key=keys, another=keys)
def test_a_hidden_seed_needs_the_key_and_a_public_one_is_everyones(
        assignment: str, student: str, other: str, check: str, key: bytes, another: bytes) -> None:
    hidden = check_seed(assignment, student, check, HIDDEN, key)
    assert hidden == check_seed(assignment, student, check, HIDDEN, key)  # replayable by whoever holds the key
    if another != key:
        assert hidden != check_seed(assignment, student, check, HIDDEN, another)
    assert hidden != check_seed(assignment, student, check, HIDDEN)  # the shipped code alone: another seed
    public = check_seed(assignment, student, check, PUBLIC, key)
    assert public == check_seed(assignment, other, check, PUBLIC) == check_seed(assignment, "", check, PUBLIC, another)


def test_the_secret_is_made_once_private_and_read_by_the_loader(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "tests" / "fixtures" / "solutions" / "toy", solutions / "toy")
    assert not (solutions / SECRET_FILE).exists()
    first = load_assignment("toy", solutions_dir=solutions).seed_key
    path = solutions / SECRET_FILE
    assert len(first) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_assignment("toy", solutions_dir=solutions).seed_key == first == course_secret(solutions)
    assert bytes.fromhex(path.read_text().strip()) == first


def test_graders_starting_together_agree_on_one_secret(tmp_path: Path) -> None:
    code = "import sys; from pathlib import Path; from grader.check.seeds import course_secret; " \
           "print(course_secret(Path(sys.argv[1])).hex())"
    started = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outputs = [p.communicate(timeout=60) for p in started]
    secrets = {out.strip() for out, _ in outputs}
    assert len(secrets) == 1 and (tmp_path / SECRET_FILE).read_text().strip() in secrets
    assert sum("made" in err for _, err in outputs) == 1  # told once, by the one that made it
    assert [p for p in os.listdir(tmp_path) if p != SECRET_FILE] == []  # no temporary file left behind


def test_the_course_secret_travels_with_the_solutions_not_the_kit(kits: Path) -> None:
    secret = (ROOT / "solutions" / SECRET_FILE).read_text().strip()
    for path in kits.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data and bytes.fromhex(secret) not in data, path
