"""Each assignment's kit as a new student installs it: in an environment that has exactly what the kit's guide names
(the wheel's requirements and the kit's requirements.txt, with what they bring), the guide's own install command
works offline, and the finished notebook, run as a script from the kit folder, ends with every public check passed.

The environment is a fresh venv whose site-packages links each of those distributions (and nothing else) from the
course's own environment: offline, and seconds rather than minutes, yet a package the guide does not name is not
importable in it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from packaging.requirements import Requirement

from grader.assign.student_notebook import CHECK_CELL_IDS
from grader.kit.requirements import REQUIREMENTS_FILE

from .conftest import ROOT, with_templates

if TYPE_CHECKING:
    from grader.kit.wheel import BuiltPackage

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def package() -> BuiltPackage:
    """The grader's package as the kits' wheel holds it (pip's build: the slow part of a wheel)."""
    from grader.kit.wheel import build_package

    return build_package()


@pytest.fixture(scope="module")
def wheel(package: BuiltPackage, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from grader.kit.wheel import write_wheel

    return write_wheel(package, tmp_path_factory.mktemp("wheel"))


def _requirements(lines: list[str]) -> list[Requirement]:
    return [Requirement(line) for line in (text.split("#")[0].strip() for text in lines) if line]


def _closure(requirements: list[Requirement]) -> dict[str, metadata.Distribution]:
    """The distributions ``requirements`` name, and theirs, as the course's environment has them."""
    found: dict[str, metadata.Distribution] = {}
    waiting = list(requirements)
    while waiting:
        requirement = waiting.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        name = requirement.name.lower().replace("_", "-")
        if name in found:
            continue
        found[name] = metadata.distribution(name)  # the course's environment has all it needs
        waiting += _requirements(found[name].requires or [])
    return found


def exact_environment(requirements: list[Requirement], folder: Path) -> Path:
    """A venv (no pip) whose site-packages holds exactly the closure of ``requirements``; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)}))
    for distribution in _closure(requirements).values():
        for top in {f.parts[0] for f in distribution.files or [] if f.parts[0] != ".."}:
            link = purelib / top
            if not link.exists():
                link.symlink_to(Path(str(distribution.locate_file(top))).resolve())
    return folder / "bin" / "python"


def finished_script(name: str, kit: Path) -> Path:
    """The solution notebook's code, then the check cell the template ends with: the student's finished work."""
    solution = nbformat.read(ROOT / "solutions" / name / "solution.ipynb", as_version=4)
    template = nbformat.read(kit / f"{name}.ipynb", as_version=4)
    check = next(c.source for c in template.cells
                 if c.cell_type == "code" and c.get("id") in CHECK_CELL_IDS and "check(" in c.source)
    code = [c.source for c in solution.cells if c.cell_type == "code"]
    lines = [line for cell in [*code, check] for line in cell.splitlines() if not line.lstrip().startswith(("%", "!"))]
    script = kit / f"{name}_finished.py"
    script.write_text("\n".join(lines) + "\n")
    return script


@pytest.mark.parametrize("name", with_templates())
def test_a_kit_installed_as_its_guide_says_checks_the_finished_work(kits: Path, wheel: Path, name: str,
                                                                    tmp_path: Path) -> None:
    kit = tmp_path / name
    shutil.copytree(kits / name, kit)
    shutil.copyfile(wheel, kit / wheel.name)
    with zipfile.ZipFile(wheel) as archive:
        info = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        head = archive.read(info).decode().partition("\n\n")[0].splitlines()
    named = _requirements([line.removeprefix("Requires-Dist: ") for line in head if line.startswith("Requires-Dist:")])
    named += _requirements((kit / REQUIREMENTS_FILE).read_text().splitlines())
    python = exact_environment(named, tmp_path / "env")
    # The guide's command, offline.
    guide = (kit / "CHECKING.md").read_text()
    assert f"-m pip install {wheel.name.split('-')[0]}-" in guide and f"-r {REQUIREMENTS_FILE}" in guide
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
                           "--disable-pip-version-check", "--quiet", str(kit / wheel.name), "-r",
                           str(kit / REQUIREMENTS_FILE)], capture_output=True, text=True, timeout=300, cwd=kit)
    assert done.returncode == 0, done.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "GRADER_KIT", "VIRTUAL_ENV")}
    script = finished_script(name, kit)
    done = subprocess.run([str(python), script.name], capture_output=True, text=True, timeout=600, cwd=kit,
                          env={**env, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # "All 9 public checks passed", or "The public check passed" where there is one (a new assignment's).
    assert re.search(r"(All \d+ public checks|The public check) passed", done.stdout), done.stdout[-3000:]
    assert "did not pass" not in done.stdout, done.stdout[-3000:]
    # Nothing of the course's checkout or environment was imported: the venv's copy of the grader ran.
    probe = subprocess.run([str(python), "-c", "import grader, sys; print(grader.__file__)"], capture_output=True,
                           text=True, timeout=60, cwd=tmp_path, env=env)
    assert Path(probe.stdout.strip()).is_relative_to(tmp_path / "env"), probe.stdout + probe.stderr


SCORING, BAHDANAU = "attention_scoring", "bahdanau_attention"
OFFERED = re.compile(r"attention_grader-(\S+?)-py3-none-any\.whl|needs grader (\S+) or newer")


def _install(python: Path, kit: Path) -> str:
    """The wheel in ``kit``'s folder installed as its guide says (offline); the grader's version now installed."""
    (wheel,) = kit.glob("attention_grader-*.whl")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
                           "--disable-pip-version-check", "--quiet", str(wheel)], capture_output=True, text=True,
                          timeout=300, cwd=kit)
    assert done.returncode == 0, done.stderr
    return wheel.name.split("-")[1]


def _check(python: Path, kit: Path, name: str, installed: str) -> str:
    """The finished work checked in ``kit``'s folder: every public check passes; what it printed. Whatever it says,
    it never offers a wheel older than the one installed."""
    from packaging.version import Version

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "GRADER_KIT", "VIRTUAL_ENV")}
    done = subprocess.run([str(python), finished_script(name, kit).name], capture_output=True, text=True,
                          timeout=600, cwd=kit, env={**env, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"All \d+ public checks passed", done.stdout), done.stdout[-3000:]
    for offered in OFFERED.finditer(done.stdout):
        assert Version(offered.group(1) or offered.group(2)) > Version(installed), done.stdout[-3000:]
    return done.stdout


def test_two_kits_of_one_course_check_in_one_environment(kits: Path, package: BuiltPackage, tmp_path: Path) -> None:
    """Kits that coexist (issue 46): a course publishes attention_scoring's and bahdanau_attention's kits, then,
    with the grader's code changed, attention_scoring's again with a check worth 2 more points. A student with one
    environment and both kits: the untouched bahdanau kit checks without a warning with either wheel; the new
    attention_scoring kit names its own, newer, wheel while the older one is installed; the older
    attention_scoring kit names the kit to fetch; nothing ever advises an older wheel."""
    import dataclasses

    from grader.kit.build import build_kit
    from grader.kit.publish import previous_release, publish
    from grader.kit.wheel import KIT_REQUIREMENTS

    from .test_kit_cli import _points_changed

    course = tmp_path / "dist"  # the course's dist/, kept between builds
    for name in (SCORING, BAHDANAU):
        shutil.copytree(kits / name, course / name)
    publish([course / SCORING, course / BAHDANAU], course, package, previous_release(course))
    home = tmp_path / "student"
    shutil.copytree(course / SCORING, home / "first" / SCORING)  # the attention_scoring kit handed out first
    build_kit(SCORING, solutions_dir=_points_changed(tmp_path), out_dir=course)
    changed = dataclasses.replace(package, package=[(n, d + b"# changed\n" if n == "grader/kit/display.py" else d)
                                                    for n, d in package.package])
    publish([course / SCORING], course, changed, previous_release(course))
    for name in (SCORING, BAHDANAU):  # what the course hands out now: bahdanau's kit as it was, with its wheel
        shutil.copytree(course / name, home / name)
    named = _requirements([*KIT_REQUIREMENTS, *(home / SCORING / REQUIREMENTS_FILE).read_text().splitlines(),
                           *(home / BAHDANAU / REQUIREMENTS_FILE).read_text().splitlines()])
    python = exact_environment(named, tmp_path / "env")

    first = _install(python, home / BAHDANAU)  # release 1
    assert first.startswith("0.1.0.post1+k")
    printed = _check(python, home / SCORING, SCORING, first)
    newer = next((home / SCORING).glob("attention_grader-*.whl")).name
    assert newer.startswith("attention_grader-0.1.0.post2+k")
    assert f"This kit needs grader 0.1.0.post2 or newer, but grader {first} is installed: install the wheel from " \
           f"this kit's folder (python -m pip install {newer})" in printed, printed[-3000:]

    second = _install(python, home / SCORING)  # release 2, over release 1
    for kit in (home / BAHDANAU, home / SCORING):  # both kits of the course, in one environment: no warning
        printed = _check(python, kit, kit.name, second)
        assert "This kit" not in printed, printed[-3000:]
    printed = _check(python, home / "first" / SCORING, SCORING, second)
    assert f"is older than the {SCORING} kit your course published with grader {second}: fetch the new {SCORING} " \
           "kit from your course" in printed, printed[-3000:]


def test_an_environment_without_a_named_package_cannot_import_it(tmp_path: Path) -> None:
    """The environment is as exact as it says: numpy alone does not bring torch."""
    python = exact_environment(_requirements(["numpy"]), tmp_path / "env")
    done = subprocess.run([str(python), "-c", "import numpy, importlib.util as u; print(u.find_spec('torch'))"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stderr


def test_the_install_takes_less_disk_than_the_guide_says(kits: Path) -> None:
    """What the guide names, with what it brings, for every kit, fits in the size the guide states."""
    from grader.kit.wheel import KIT_REQUIREMENTS

    guide = (ROOT / "docs" / "student-kit.md").read_text()
    stated = float(re.search(r"and (\d+(?:\.\d+)?) GB on disk", guide).group(1)) * 1e9  # type: ignore[union-attr]
    for kit in sorted(p for p in kits.iterdir() if p.is_dir()):
        named = _requirements([*KIT_REQUIREMENTS, *(kit / REQUIREMENTS_FILE).read_text().splitlines()])
        size = sum(os.path.getsize(path) for d in _closure(named).values() for f in d.files or []
                   if (path := Path(str(d.locate_file(f)))).is_file())
        assert size < stated, (kit.name, size)


def test_the_guides_torch_line_says_which_build_is_installed() -> None:
    """The one line the guide gives a student to see which torch they have runs, and says this one is the CPU-only
    build with its size (the project's pinned torch is)."""
    guide = (ROOT / "docs" / "student-kit.md").read_text()
    (line,) = [line.strip() for line in guide.splitlines() if "torch.version.cuda" in line]
    words = shlex.split(line)
    assert words[:2] == ["python", "-c"]
    done = subprocess.run([sys.executable, "-c", words[2]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"torch \S+ (CPU-only|CUDA \S+) \d+ MB\n", done.stdout), done.stdout
    assert "CPU-only" in done.stdout
