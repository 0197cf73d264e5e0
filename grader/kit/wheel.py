"""The grader's wheel as a student kit ships it: what ``check()`` needs in a student's kernel, and nothing more.

The wheel is setuptools' (``pip wheel``, offline, from a clean copy of the package), rewritten:

- its requirements are those of the kit (``KIT_REQUIREMENTS``), not the course server's (no dask, nbconvert,
  nbclient...), so a student installs it beside the torch they already have;
- the report's templates (``templates/``, beside the package in a checkout) go inside the package, where
  ``grader.paths`` looks when there is no checkout around it;
- no ``grader`` command: its commands grade with the instructor's solutions, which a student does not have;
- every entry has a fixed timestamp and mode, so the same sources give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from grader import __version__
from grader.errors import ConfigurationError
from grader.files import atomic_writer
from grader.paths import PACKAGED_TEMPLATES, PROJECT_ROOT, STUDENT_GUIDE, TEMPLATES_DIR

# What `import grader.kit` and a kit check import from outside the standard library (grader/report/notebook.py
# brings bleach, grader/discover brings nbformat and yaml), with pyproject.toml's ranges where it has one. IPython is
# not here: check() uses it only inside a kernel, which has it. tests/test_kit_cli.py fails when this drifts.
KIT_REQUIREMENTS = ("torch>=2.4", "numpy>=1.26", "nbformat>=5.9", "jinja2>=3.1", "markupsafe>=2.1", "bleach>=6.0",
                    "pyyaml>=6.0")
WHEEL_NAME = f"attention_grader-{__version__}-py3-none-any.whl"
_DIST_INFO = f"attention_grader-{__version__}.dist-info"
_SOURCES = ("pyproject.toml", "README.md", "grader")
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold
_MODE = 0o644 << 16


def _built(root: Path, work: Path) -> Path:
    """setuptools' wheel, built from a copy: a build in the checkout reuses build/lib, which keeps deleted modules."""
    source = work / "source"
    for name in _SOURCES:
        if (root / name).is_dir():
            shutil.copytree(root / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / name, source / name)
    built = work / "built"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                           "--no-build-isolation", "--no-index", "-w", str(built), str(source)],
                          capture_output=True, text=True, check=False)
    wheels = sorted(built.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise ConfigurationError(f"pip could not build the grader's wheel: {(done.stderr or done.stdout).strip()}")
    return wheels[0]


def kit_metadata(metadata: str) -> str:
    """METADATA with the kit's requirements in place of the project's (and no extras: they are the course's)."""
    head, _, description = metadata.partition("\n\n")
    lines = [line for line in head.splitlines()
             if not line.startswith(("Requires-Dist:", "Provides-Extra:"))]
    at = next((i for i, line in enumerate(lines) if line.startswith("Requires-Python:")), len(lines) - 1) + 1
    lines[at:at] = [f"Requires-Dist: {requirement}" for requirement in KIT_REQUIREMENTS]
    # The student's guide, not the course's README (which is about grading a class), is what pip show and an index
    # would show a student.
    if STUDENT_GUIDE.is_file():
        description = STUDENT_GUIDE.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + description


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _entries(wheel: Path, templates: Path) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(wheel) as built:
        files = {info.filename: built.read(info) for info in built.infolist() if not info.is_dir()}
    package = sorted((n, d) for n, d in files.items() if not n.startswith(f"{_DIST_INFO}/"))
    package += [(f"grader/{PACKAGED_TEMPLATES}/{p.name}", p.read_bytes())
                for p in sorted(templates.iterdir()) if p.is_file()]
    info = [(f"{_DIST_INFO}/METADATA", kit_metadata(files[f"{_DIST_INFO}/METADATA"].decode()).encode())]
    info += [(n, files[n]) for n in (f"{_DIST_INFO}/WHEEL", f"{_DIST_INFO}/top_level.txt") if n in files]
    return package + info  # the dist-info last, as the wheel format recommends; RECORD is added after them


def build_wheel(dest: Path, *, root: Path = PROJECT_ROOT, templates: Path = TEMPLATES_DIR) -> Path:
    """Write the kit's wheel of the grader into ``dest`` (made if need be); returns its path."""
    with tempfile.TemporaryDirectory(prefix="grader-wheel-") as work:
        entries = _entries(_built(root, Path(work)), templates)
    record = "".join(f"{_record_line(n, d)}\n" for n, d in entries) + f"{_DIST_INFO}/RECORD,,\n"
    entries.append((f"{_DIST_INFO}/RECORD", record.encode()))
    path = dest / WHEEL_NAME
    with (atomic_writer(path) as handle,
          zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as wheel):
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = _MODE
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data, compresslevel=9)
    return path
