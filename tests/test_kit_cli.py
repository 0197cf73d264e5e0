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

from grader.kit.wheel import KIT_REQUIREMENTS

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


def _wheel(kit: Path) -> Path:
    (wheel,) = kit.glob("attention_grader-*.whl")
    return wheel


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
    assert _wheel(kit).name == f"attention_grader-{data['identity']['wheel']}-py3-none-any.whl"
    assert not list((ROOT / "assignments" / NAME).glob("*.whl"))  # the kit's, not copied back


def test_two_builds_give_the_same_bytes_wheel_included(builds: list[tuple[Path, str]]) -> None:
    (first, _), (second, _) = builds
    digests, again = _digests(first), _digests(second)
    assert _wheel(first).name in digests and "grader-kit/kit.json" in digests
    assert sorted(digests) == sorted(again)
    # The wheel too: its entries have fixed timestamps (a source edited between the builds would differ, of course).
    assert [name for name in digests if digests[name] != again[name]] == []


def test_the_wheel_requires_what_the_kit_imports_and_its_record_holds(builds: list[tuple[Path, str]]) -> None:
    version = json.loads((builds[0][0] / "grader-kit" / "kit.json").read_text())["identity"]["wheel"]
    with zipfile.ZipFile(_wheel(builds[0][0])) as wheel:
        names = wheel.namelist()
        info = f"attention_grader-{version}.dist-info"
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
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
    status = 0
except SystemExit as stop:  # the check's verdict, passed on below once the probe has said what it saw
    status = stop.code
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
sys.exit(status)
"""


@pytest.fixture(scope="module")
def student(builds: list[tuple[Path, str]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The kit copied where a student keeps it, outside the checkout, and the wheel installed beside it."""
    home = tmp_path_factory.mktemp("student")
    assert not home.resolve().is_relative_to(ROOT)
    kit = home / NAME
    shutil.copytree(builds[0][0], kit)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", "--no-index", "--target", str(home / "site"), str(_wheel(kit))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    (home / "probe.py").write_text(PROBE)
    return kit


def _run_as_student(kit: Path, submission: Path, *, status: int = 0) -> tuple[str, dict[str, object]]:
    """The student's file: their code (a submission) and, at its end, the check the kit's .py template ends with;
    ``status``: the exit status `python` must end with (1 when a check fails)."""
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
    assert done.returncode == status, done.stdout[-3000:] + done.stderr[-3000:]
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
    assert "All 15 public checks passed (59 / 59 points; the grade is out of 100: your instructor grades the " \
           "rest)." in printed, printed
    assert "Hidden checks, on other inputs, also count towards your grade" in printed
    assert set(found["third_party"]) == _requirement_names()  # type: ignore[arg-type]


def test_a_student_sees_what_is_wrong_with_a_wrong_file(student: Path) -> None:
    printed, _ = _run_as_student(student, SUBMISSIONS / "mistake_softmax_axis.py", status=1)
    summary = next(line for line in printed.splitlines() if line.startswith("q1 "))
    assert " 0 / 13 " in summary and summary.endswith("0 of 3 public checks passed"), summary
    assert "FAILED  textbook example" in printed
    assert "Likely cause: softmax over the queries axis" in printed
    # Only q1's: q2 and q3 are checked with the reference masked_softmax's answers, as when graded.
    assert "3 of 15 public checks did not pass (46 / 59 points; the grade is out of 100" in printed


def test_assign_writes_the_kits_after_the_templates(tmp_path: Path) -> None:
    done = _grader("assign", NAME, "--out", str(tmp_path / "assignments"), "--kit-out", str(tmp_path / "dist"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{NAME}: wrote ") and lines[1].startswith(f"{NAME}: wrote {tmp_path / 'dist' / NAME}/")
    kit = tmp_path / "dist" / NAME
    assert (kit / f"{NAME}.ipynb").read_bytes() == (ROOT / "assignments" / NAME / f"{NAME}.ipynb").read_bytes()
    assert (kit / "grader-kit" / "kit.json").is_file() and _wheel(kit).is_file()
    done = _grader("assign", NAME, "--check", "--out", str(tmp_path / "assignments"),
                   "--kit-out", str(tmp_path / "dist"))
    assert done.returncode == 0 and done.stdout.startswith("Templates up to date"), done.stderr


def _points_changed(tmp_path: Path) -> Path:
    """A copy of the course's solutions in which one public check is worth 2 points more."""
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions", solutions, ignore=shutil.ignore_patterns("__pycache__"))
    checks = solutions / NAME / "checks.py"
    source = checks.read_text()
    marker = '@check("q1", points='
    at = source.index(marker) + len(marker)
    points = source[at:source.index(",", at)]
    checks.write_text(source[:at] + str(int(points) + 2) + source[source.index(",", at):])
    return solutions


def test_a_rebuilt_kit_has_a_new_identity_wheel_and_assign_check_reports_the_old(
        builds: list[tuple[Path, str]], tmp_path: Path) -> None:
    kit = builds[0][0]
    identity = json.loads((kit / "grader-kit" / "kit.json").read_text())["identity"]
    assert identity["assignment"] == NAME and identity["version"] == "1" and len(identity["digest"]) == 64
    assert identity["wheel"].startswith("0.1.0.post1+k") and identity["needs"] == "0.1.0.post1"
    assert builds[0][1].splitlines()[-1] == (f"Wheel {_wheel(kit).name}: release 1 of the course's kits "
                                             f"({kit.parent / 'published.json'}); new in it: {NAME}")
    solutions = _points_changed(tmp_path)
    # The kit built from today's checks is older than the changed ones: named, exit 1.
    done = _grader("assign", NAME, "--check", "--solutions", str(solutions), "--kit-out", str(kit.parent))
    assert done.returncode == 1 and f"kit out of date: {kit}" in done.stderr, done.stderr
    rebuilt = tmp_path / "dist"  # the course's dist/, kept: the next release
    shutil.copytree(kit.parent, rebuilt)
    done = _grader("kit", NAME, "--solutions", str(solutions), "--out", str(rebuilt))
    assert done.returncode == 0, done.stderr
    again = json.loads((rebuilt / NAME / "grader-kit" / "kit.json").read_text())["identity"]
    assert again["digest"] != identity["digest"] and again["sources"] != identity["sources"]
    assert again["wheel"].startswith("0.1.0.post2+k") and _wheel(rebuilt / NAME).name != _wheel(kit).name
    # The same grader code: the first wheel serves it too (unless the grader's code was edited meanwhile).
    assert again["needs"] == ("0.1.0.post1" if again["grader"] == identity["grader"] else "0.1.0.post2")
    assert done.stdout.splitlines()[-1].endswith(f"release 2 of the course's kits ({rebuilt / 'published.json'}); "
                                                 f"new in it: {NAME}")
    done = _grader("assign", NAME, "--check", "--solutions", str(solutions), "--kit-out", str(rebuilt))
    assert done.returncode == 0, done.stderr


VERSION = "import importlib.metadata as m; print(m.version('attention_grader'))"


def test_pip_replaces_an_installed_kit_wheel_with_a_newer_one(builds: list[tuple[Path, str]], tmp_path: Path) -> None:
    """The student's environment (a venv) has the old wheel; the newer one is installed over it, not skipped."""
    from grader.kit.wheel import build_package, write_wheel

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    old = _wheel(builds[0][0])
    new = write_wheel(build_package(), tmp_path, "0.1.0.post2+k0000000000")

    def install(wheel: Path) -> str:
        done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                               "--no-index", "--disable-pip-version-check", str(wheel)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        shown = subprocess.run([str(python), "-c", VERSION], capture_output=True, text=True, timeout=60)
        return shown.stdout.strip()

    assert install(old) == old.name.split("-")[1]
    assert install(new) == "0.1.0.post2+k0000000000"


def test_a_check_shows_its_kit_and_says_when_the_installed_wheel_does_not_serve_it(student: Path) -> None:
    data = json.loads((student / "grader-kit" / "kit.json").read_text())
    identity = dict(data["identity"])
    printed, _ = _run_as_student(student, SUBMISSIONS / "einsum_style.py")
    assert f"with kit {NAME} 1 · {identity['digest'][:8]}." in printed.splitlines()[-1]
    assert "This kit" not in printed

    def altered(folder: str, **changes: str) -> Path:
        kit = student.parent / folder
        shutil.copytree(student, kit)
        (kit / "grader-kit" / "kit.json").write_text(json.dumps({**data, "identity": {**identity, **changes}}))
        return kit

    # A kit of a later release, built with other grader code: its own wheel, newer than the installed one, named.
    newer = altered("newer", wheel="0.1.0.post9+kffffffffff", needs="0.1.0.post9")
    printed, _ = _run_as_student(newer, SUBMISSIONS / "einsum_style.py")
    assert f"This kit needs grader 0.1.0.post9 or newer, but grader {identity['wheel']} is installed: install the " \
           "wheel from this kit's folder (python -m pip install attention_grader-0.1.0.post9+kffffffffff-py3-none-" \
           "any.whl), then restart the kernel." in printed
    # A kit older than the one the installed wheel was published with (its table, in the wheel): the kit to fetch.
    older = altered("older", wheel="0.1.0+kffffffffff", needs="", digest="0" * 64)
    printed, _ = _run_as_student(older, SUBMISSIONS / "einsum_style.py")
    assert f"This kit (kit {NAME} 1 · 00000000) is older than the {NAME} kit your course published with grader " \
           f"{identity['wheel']}: fetch the new {NAME} kit from your course" in printed


# Course-side code a student's wheel must not hold: the commands (and `python -m grader`), the class pipeline and
# exports, `grader new`'s scaffold, the sandbox's d2l stand-in (the textbook's answers), the similarity report's copy
# of the textbook, how kits are built.
NOT_SHIPPED = ("grader/cli/", "grader/__main__.py", "grader/pipeline/", "grader/export/", "grader/adjust/",
               "grader/record/", "grader/assign/", "grader/similar/", "grader/execute/child/stubs.py",
               "grader/execute/child/main.py", "grader/execute/child/zygote.py", "grader/kit/build.py",
               "grader/kit/derive.py", "grader/kit/wheel.py", "grader/kit/publish.py", "grader/storage.py")


ATTENTION_WORDS = ("softmax", "@", "tanh", "bmm", "matmul", "exp(", "mask", "attention", "scores", "weights",
                   "valid_lens", "queries", "keys", "values")


def _answer_lines() -> set[str]:
    """Lines of every reference and variant, and of the textbook copies the course side keeps, that compute
    something of attention's (not an import, a comment or a common statement such as making a folder)."""
    sources = [*ROOT.glob("solutions/*/reference_*.py"), *ROOT.glob("solutions/*/variants.py"),
               ROOT / "grader" / "execute" / "child" / "stubs.py", ROOT / "grader" / "similar" / "textbook.py",
               *ROOT.glob("grader/assign/scaffold*.py")]
    lines = set()
    for path in sources:
        for line in path.read_text().splitlines():
            text = line.strip()
            if len(text) >= 40 and not text.startswith(("#", "import ", "from ", '"""', "def __init__(self")) \
                    and any(word in text for word in ATTENTION_WORDS):
                lines.add(text)
    return lines


def test_the_wheel_holds_what_the_kit_runs_and_no_answer(builds: list[tuple[Path, str]]) -> None:
    from grader.kit.wheel import shipped_modules

    modules = shipped_modules()
    assert {"grader.kit.runner", "grader.check.runner", "grader.execute.child.calls"} <= modules
    with zipfile.ZipFile(_wheel(builds[0][0])) as wheel:
        names = [n for n in wheel.namelist() if not n.split("/")[0].endswith(".dist-info")]
        texts = {n: wheel.read(n).decode() for n in names}
    allowed = {f"{m.replace('.', '/')}{'/__init__' if (ROOT / m.replace('.', '/')).is_dir() else ''}.py"
               for m in modules}
    code = {n for n in names if n.endswith(".py")}
    assert code == allowed
    assert {n for n in names if not n.endswith(".py")} == \
        {f"grader/templates/{p.name}" for p in (ROOT / "templates").iterdir() if p.is_file()} | \
        {"grader/kit/published.json"}  # the course's kits as of this release
    assert [n for n in names if n.startswith(NOT_SHIPPED)] == []
    answers = _answer_lines()
    assert len(answers) > 100
    assert [(name, line) for name, text in texts.items() for line in answers if line in text] == []
