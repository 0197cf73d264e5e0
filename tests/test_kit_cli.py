"""`grader kit`: the student kit as a student is given it (templates, grader-kit/, the grader's wheel), the same
bytes from every build, and the student's side: the wheel installed outside the course's checkout, the kit's check
run by `python NAME.py` from the kit folder, with the checkout out of reach.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.kit.wheel import KIT_REQUIREMENTS, WHEEL_NAME

from .conftest import ROOT

NAME = "attention_scoring"
SUBMISSIONS = ROOT / "tests" / "submissions" / NAME


def _grader(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, str]]:
    """The kit built twice, each by its own `grader kit` run: (its folder, what the command printed)."""
    runs = []
    for number in (1, 2):
        out = tmp_path_factory.mktemp(f"dist{number}")
        done = _grader("kit", NAME, "--out", str(out))
        assert done.returncode == 0, done.stderr
        runs.append((out / NAME, done.stdout))
    return runs


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_kit_writes_the_templates_the_checks_and_the_wheel(builds: list[tuple[Path, str]]) -> None:
    kit, printed = builds[0]
    assert printed.startswith(f"{NAME}: wrote {kit}/ (")
    for name in (f"{NAME}.ipynb", f"{NAME}.py", "README.md"):  # every file of assignments/NAME/, as it is there
        assert (kit / name).read_bytes() == (ROOT / "assignments" / NAME / name).read_bytes()
    data = json.loads((kit / "grader-kit" / "kit.json").read_text())
    assert data["assignment"] == NAME and len(data["checks"]) == 15
    assert (kit / "grader-kit" / "checks.py").is_file() and any((kit / "grader-kit" / "arrays").glob("*.npy"))
    assert (kit / WHEEL_NAME).is_file()
    assert not (ROOT / "assignments" / NAME / WHEEL_NAME).exists()  # the kit's, not copied back


def test_two_builds_give_the_same_bytes_wheel_included(builds: list[tuple[Path, str]]) -> None:
    (first, _), (second, _) = builds
    digests, again = _digests(first), _digests(second)
    assert WHEEL_NAME in digests and "grader-kit/kit.json" in digests
    assert sorted(digests) == sorted(again)
    # The wheel too: its entries have fixed timestamps (a source edited between the builds would differ, of course).
    assert [name for name in digests if digests[name] != again[name]] == []


def test_the_wheel_requires_what_the_kit_imports_and_its_record_holds(builds: list[tuple[Path, str]]) -> None:
    with zipfile.ZipFile(builds[0][0] / WHEEL_NAME) as wheel:
        names = wheel.namelist()
        info = "attention_grader-0.1.0.dist-info"
        metadata = wheel.read(f"{info}/METADATA").decode()
        head = metadata.partition("\n\n")[0].splitlines()
        assert [line.removeprefix("Requires-Dist: ") for line in head if line.startswith("Requires-Dist:")] == \
            list(KIT_REQUIREMENTS)
        assert not any(line.startswith("Provides-Extra:") for line in head)
        assert f"{info}/entry_points.txt" not in names  # no `grader` command: it needs the instructor's solutions
        assert "grader/templates/kit.html.j2" in names and "grader/kit/runner.py" in names
        assert not any(n.startswith(("solutions/", "tests/")) or "__pycache__" in n for n in names)
        record = wheel.read(f"{info}/RECORD").decode().splitlines()
        assert sorted(line.split(",")[0] for line in record) == sorted(names)
        for line in record:
            path, digest, size = line.split(",")
            if path == f"{info}/RECORD":
                assert (digest, size) == ("", "")
                continue
            data = wheel.read(path)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert int(size) == len(data)


# Run as the student runs their file (`python NAME.py`, in the kit folder), then says where grader came from, whether
# the checkout can be reached, and what grader's own modules imported from outside the standard library.
PROBE = """
import builtins, importlib.metadata, json, runpy, sys

imported = set()
_import = builtins.__import__


def noting(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if level == 0 and importer.startswith(("grader", "_grader_kit")):
        imported.add(name.split(".")[0])
    return _import(name, globals, locals, fromlist, level)


builtins.__import__ = noting
runpy.run_path(sys.argv[1], run_name="__main__")
builtins.__import__ = _import
import grader

try:
    import solutions
    reachable = solutions.__file__
except ImportError:
    reachable = None
owners = importlib.metadata.packages_distributions()
third_party = {d.lower() for m in imported - set(sys.stdlib_module_names) - {"grader"} for d in owners.get(m, [m])}
print(json.dumps({"grader": grader.__file__, "solutions": reachable, "path": sys.path,
                  "third_party": sorted(third_party)}))
"""


@pytest.fixture(scope="module")
def student(builds: list[tuple[Path, str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit copied where a student keeps it, outside the checkout, and the wheel installed beside it."""
    home = tmp_path_factory.mktemp("student")
    assert not home.resolve().is_relative_to(ROOT)
    kit = home / NAME
    shutil.copytree(builds[0][0], kit)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--no-index", "--target", str(home / "site"), str(kit / WHEEL_NAME)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (home / "probe.py").write_text(PROBE)
    return kit


def _run_as_student(kit: Path, submission: Path) -> tuple[str, dict[str, object]]:
    """The student's file: their code (a submission) and, at its end, the check the kit's .py template ends with."""
    template = (kit / f"{NAME}.py").read_text()
    check = template[template.rindex("# %%\n"):]
    assert "from grader.kit import check" in check
    mine = kit / f"{NAME}_mine.py"
    mine.write_text(f"{submission.read_text()}\n\n{check}")
    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_KIT", "PYTHONPATH", "PYTHONHOME")}
    # The course's interpreter, whose site-packages has the grader installed in editable mode: the wheel's copy on
    # PYTHONPATH comes first, and the probe shows which one ran.
    done = subprocess.run([sys.executable, str(kit.parent / "probe.py"), mine.name], capture_output=True, text=True,
                          timeout=300, cwd=kit, env={**env, "PYTHONPATH": str(kit.parent / "site")})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    printed, _, probe = done.stdout.rstrip().rpartition("\n")
    found = json.loads(probe)
    assert Path(found["grader"]).is_relative_to(kit.parent / "site")
    assert found["solutions"] is None
    # Nothing of the checkout but the interpreter's own site-packages (the editable install's path hook is no folder).
    folders = [Path(p).resolve() for p in found["path"] if Path(p).is_absolute()]  # type: ignore[union-attr]
    assert [p for p in folders if p.is_relative_to(ROOT) and not p.is_relative_to(ROOT / ".venv")] == []
    return printed, found


def _requirement_names() -> set[str]:
    return {r.split(">")[0].split("=")[0].split("<")[0].lower() for r in KIT_REQUIREMENTS}


def test_a_student_checks_a_correct_file_with_the_kit_alone(student: Path) -> None:
    printed, found = _run_as_student(student, SUBMISSIONS / "einsum_style.py")
    assert "All 15 public checks passed (59 / 59 points)." in printed, printed
    assert "Hidden checks, on other inputs, also count towards your grade" in printed
    assert set(found["third_party"]) == _requirement_names()  # type: ignore[arg-type]


def test_a_student_sees_what_is_wrong_with_a_wrong_file(student: Path) -> None:
    printed, _ = _run_as_student(student, SUBMISSIONS / "mistake_softmax_axis.py")
    summary = next(line for line in printed.splitlines() if line.startswith("q1 "))
    assert " 0 / 13 " in summary and summary.endswith("0 of 3 public checks passed"), summary
    assert "FAILED  textbook example" in printed
    assert "Likely cause: softmax over the queries axis" in printed
    # Only q1's: q2 and q3 are checked with the reference masked_softmax's answers, as when graded.
    assert "3 of 15 public checks did not pass (46 / 59 points)" in printed


def test_assign_writes_the_kits_after_the_templates(tmp_path: Path) -> None:
    done = _grader("assign", NAME, "--out", str(tmp_path / "assignments"), "--kit-out", str(tmp_path / "dist"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{NAME}: wrote ") and lines[1].startswith(f"{NAME}: wrote {tmp_path / 'dist' / NAME}/")
    kit = tmp_path / "dist" / NAME
    assert (kit / f"{NAME}.ipynb").read_bytes() == (ROOT / "assignments" / NAME / f"{NAME}.ipynb").read_bytes()
    assert (kit / "grader-kit" / "kit.json").is_file() and (kit / WHEEL_NAME).is_file()
    assert _grader("assign", NAME, "--check").stdout.startswith("Templates up to date")
