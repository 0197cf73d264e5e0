"""The lowest Python the project states (pyproject.toml's requires-python, which `make install` checks before pip
runs) is one every pinned package accepts: Debian 12's own Python 3.11.2 installs the pins as they are."""

from __future__ import annotations

import re
import subprocess
import tomllib
from importlib import metadata

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.conftest import ROOT


def _floor() -> Version:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    found = re.fullmatch(r">=\s*([0-9.]+)", declared)
    assert found, f"requires-python should be one lower bound, which make install checks: {declared!r}"
    return Version(found.group(1))


def _pins() -> list[tuple[str, str]]:
    pins = []
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins.append((name.strip(), version.strip()))
    return pins


def test_every_pinned_package_accepts_the_stated_lowest_python() -> None:
    floor = _floor()
    # The floor as a full version (3.11 -> 3.11.0), as a packager's `>=3.11.5` reads it.
    lowest = Version(".".join(map(str, (*floor.release, 0, 0)[:3])))
    refusing = []
    for name, pinned in _pins():
        dist = metadata.distribution(name)
        assert Version(Version(dist.version).public) == Version(pinned), \
            f"{name} {dist.version} is installed, {pinned} pinned: run make install"
        needs = dist.metadata.get("Requires-Python") or ""
        if needs and lowest not in SpecifierSet(needs):
            refusing.append(f"{name}=={pinned} needs Python {needs}")
    assert not refusing, f"pyproject.toml says Python {floor}, but " + "; ".join(refusing)


def test_make_install_names_the_lowest_python_before_pip_runs() -> None:
    # The real check, with a floor above this Python: it must refuse, say which Python it needs, and the way on.
    refused = subprocess.run(["make", "-s", "python-version", "PYTHON_FLOOR=3.99"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, check=False)
    assert refused.returncode != 0
    assert "need Python 3.99 or newer" in refused.stderr
    assert "python3.11-venv" in refused.stderr  # the exact command for a distribution whose python3 is older
    accepted = subprocess.run(["make", "-s", "python-version"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                              check=False)
    assert accepted.returncode == 0, accepted.stderr


def test_the_readme_states_the_same_lowest_python() -> None:
    assert f"Python {_floor()} or newer" in (ROOT / "README.md").read_text()
