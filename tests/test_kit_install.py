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

import nbformat
import pytest
from packaging.requirements import Requirement

from grader.assign.student_notebook import CHECK_CELL_IDS
from grader.kit.requirements import REQUIREMENTS_FILE

from .conftest import ROOT, with_templates

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from grader.kit.wheel import build_package, write_wheel

    return write_wheel(build_package(), tmp_path_factory.mktemp("wheel"))


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
