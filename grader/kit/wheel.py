"""The grader's wheel as a student kit ships it: what ``check()`` needs in a student's kernel, and nothing more.

The wheel is setuptools' (``pip wheel``, offline, from a clean copy of the package), rewritten:

- its requirements are those of the kit (``KIT_REQUIREMENTS``), not the course server's (no dask, nbconvert,
  nbclient...), so a student installs it beside the torch they already have;
- the report's templates (``templates/``, beside the package in a checkout) go inside the package, where
  ``grader.paths`` looks when there is no checkout around it;
- no ``grader`` command: its commands grade with the instructor's solutions, which a student does not have;
- only the modules ``grader.kit`` needs when a student checks (``shipped_modules``): not the sandbox's d2l stand-in,
  the similarity report's copy of the textbook, ``grader new``'s scaffold or anything else of the course's side;
- every entry has a fixed timestamp and mode, so the same sources give the same bytes;
- its version is the course's release of its kits (``0.1.0.post<release>+k<digest>``, grader/kit/publish.py), so
  that pip installs a newer kit's wheel over an older one, and pip's order is the course's; it carries the table of
  the kits published with it (``grader/kit/published.json``).
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from grader import __version__
from grader.errors import ConfigurationError
from grader.files import atomic_writer
from grader.kit.identity import digest_entries
from grader.paths import PACKAGED_TEMPLATES, PROJECT_ROOT, STUDENT_GUIDE, TEMPLATES_DIR

# What `import grader.kit` and a kit check import from outside the standard library (grader/report/notebook.py
# brings bleach, grader/discover brings nbformat and yaml), with pyproject.toml's ranges where it has one. IPython is
# not here: check() uses it only inside a kernel, which has it. tests/test_kit_cli.py fails when this drifts.
KIT_REQUIREMENTS = ("torch>=2.4", "numpy>=1.26", "nbformat>=5.9", "jinja2>=3.1", "markupsafe>=2.1", "bleach>=6.0",
                    "pyyaml>=6.0")
WHEEL_NAME = f"attention_grader-{__version__}-py3-none-any.whl"  # as the docs name it; a kit's has its version
_DIST_INFO = f"attention_grader-{__version__}.dist-info"  # as setuptools builds it
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


def wheel_name(version: str) -> str:
    return f"attention_grader-{version}-py3-none-any.whl"


def kit_metadata(metadata: str, version: str = __version__) -> str:
    """METADATA with the kit's requirements in place of the project's (and no extras: they are the course's), and
    the wheel's ``version``."""
    head, _, description = metadata.partition("\n\n")
    lines = [f"Version: {version}" if line.startswith("Version:") else line for line in head.splitlines()
             if not line.startswith(("Requires-Dist:", "Provides-Extra:"))]
    at = next((i for i, line in enumerate(lines) if line.startswith("Requires-Python:")), len(lines) - 1) + 1
    lines[at:at] = [f"Requires-Dist: {requirement}" for requirement in KIT_REQUIREMENTS]
    # The student's guide, not the course's README (which is about grading a class), is what pip show and an index
    # would show a student.
    if STUDENT_GUIDE.is_file():
        description = STUDENT_GUIDE.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + description


# Packages whose modules import what the kit needs, the kit's own code: every import in them is followed, a
# function's too. Elsewhere only the imports a module makes when imported are (a function-level import there is on
# a course-side path: the class dashboard's similarity pages, say).
_KIT_CODE = ("grader.kit", "grader.check")
# How a kit is made, not how it checks:
_NOT_KIT = ("grader.kit.build", "grader.kit.derive", "grader.kit.wheel", "grader.kit.publish")


def _module_file(root: Path, name: str) -> Path | None:
    path = root.joinpath(*name.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _imports(root: Path, name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    followed = list(ast.walk(tree)) if name.startswith(_KIT_CODE) else \
        [n for top in tree.body if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
         for n in ast.walk(top)]
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                   ast.unparse(node.test) for part in node.body for n in ast.walk(part)}
    found: set[str] = set()
    for node in followed:
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "grader"}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module.split(".")[0] == "grader":
                found.add(module)
                found |= {f"{module}.{a.name}" for a in node.names if _module_file(root, f"{module}.{a.name}")}
    return found


def shipped_modules(root: Path = PROJECT_ROOT) -> set[str]:
    """The grader's modules a student's ``from grader.kit import check; check()`` imports, found from the source."""
    seen: set[str] = set()
    waiting = ["grader.kit"]
    while waiting:
        name = waiting.pop()
        path = _module_file(root, name)
        if name in seen or name in _NOT_KIT or path is None:
            continue
        seen.add(name)
        parts = name.split(".")
        waiting += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages' __init__
        waiting += sorted(_imports(root, name, path))
    return seen


def _shipped(entry: str, modules: set[str]) -> bool:
    if not entry.endswith(".py"):
        return False
    name = entry.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    return name in modules


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


@dataclasses.dataclass(frozen=True)
class BuiltPackage:
    """The wheel's contents before its version is chosen: the package's files and setuptools' metadata."""

    package: list[tuple[str, bytes]]
    metadata: str
    info: list[tuple[str, bytes]]  # WHEEL, top_level.txt

    def digest(self) -> str:
        return digest_entries(self.package)


def build_package(*, root: Path = PROJECT_ROOT, templates: Path = TEMPLATES_DIR) -> BuiltPackage:
    """The grader's package as the kit's wheel holds it (pip's build, then the templates added)."""
    with tempfile.TemporaryDirectory(prefix="grader-wheel-") as work:
        wheel = _built(root, Path(work))
        with zipfile.ZipFile(wheel) as built:
            files = {info.filename: built.read(info) for info in built.infolist() if not info.is_dir()}
    modules = shipped_modules(root)
    package = sorted((n, d) for n, d in files.items() if not n.startswith(f"{_DIST_INFO}/") and _shipped(n, modules))
    package += [(f"grader/{PACKAGED_TEMPLATES}/{p.name}", p.read_bytes())
                for p in sorted(templates.iterdir()) if p.is_file()]
    info = [(name, files[f"{_DIST_INFO}/{name}"]) for name in ("WHEEL", "top_level.txt")
            if f"{_DIST_INFO}/{name}" in files]
    return BuiltPackage(package, files[f"{_DIST_INFO}/METADATA"].decode(), info)


def write_wheel(built: BuiltPackage, dest: Path, version: str = __version__,
                extra: Sequence[tuple[str, bytes]] = ()) -> Path:
    """Write the wheel of version ``version`` into ``dest`` (made if need be), with the package's files and
    ``extra`` ones (the course's table of kits); returns its path."""
    dist_info = f"attention_grader-{version}.dist-info"
    entries = [*built.package, *extra]
    entries.append((f"{dist_info}/METADATA", kit_metadata(built.metadata, version).encode()))
    entries += [(f"{dist_info}/{name}", data) for name, data in built.info]
    # the dist-info last, as the wheel format recommends; RECORD is added after them
    record = "".join(f"{_record_line(n, d)}\n" for n, d in entries) + f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))
    path = dest / wheel_name(version)
    with (atomic_writer(path) as handle,
          zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as wheel):
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = _MODE
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data, compresslevel=9)
    return path


def build_wheel(dest: Path, *, root: Path = PROJECT_ROOT, templates: Path = TEMPLATES_DIR,
                version: str = __version__) -> Path:
    """Write the kit's wheel of the grader into ``dest``; returns its path."""
    return write_wheel(build_package(root=root, templates=templates), dest, version)
