"""The Gradescope autograder zip for one assignment: this grader, packaged to run on Gradescope's machines.

Gradescope's autograder format: a zip with ``setup.sh`` (run once, as root, when Gradescope builds the image) and
``run_autograder`` (run per submission) at its root, unpacked into ``/autograder/source``. Besides the two scripts
(``gradescope/`` beside this module), the zip holds what grading one submission needs and nothing else:

- ``grader/`` (the package, caches left out), ``templates/``, ``requirements.txt`` and ``pyproject.toml``;
- ``solutions/<assignment>/``: this assignment's references, checks and variants, and the provided files its checks
  name elsewhere in the project (practical10's harness in ``assignments/``), at the same paths;
- ``solutions/.course-secret``: the course's secret, so that Gradescope draws the hidden cases this machine draws;
- ``autograder.json``: which assignment, and which grader built the zip.

No other assignment's solutions, no tests, no sample submissions. The same sources give the same bytes (entries in
a fixed order with a fixed time), so a rebuilt zip that did not change is recognisably the same upload.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from grader import __version__
from grader.check.load import load_assignment, solutions_files
from grader.check.seeds import SECRET_FILE
from grader.errors import ConfigurationError
from grader.files import atomic_writer
from grader.paths import PROJECT_ROOT, SOLUTIONS_DIR, TEMPLATES_DIR

SCRIPTS = Path(__file__).resolve().parent / "gradescope"
EXECUTABLE = ("setup.sh", "run_autograder")
GRADER_DIR = Path(__file__).resolve().parents[1]
PROJECT_FILES = ("requirements.txt", "pyproject.toml")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold: no build time in the bytes


CONFIG = "autograder.json"  # written into the zip: {"assignment": ..., "grader_version": ...}


@dataclass(frozen=True)
class AutograderZip:
    path: Path
    assignment: str
    names: tuple[str, ...]  # every entry, in the zip's order
    size: int  # bytes

    @property
    def solutions(self) -> tuple[str, ...]:
        return tuple(n for n in self.names if n.startswith("solutions/"))


def _tree(folder: Path, prefix: str) -> dict[str, Path]:
    """Every file under ``folder`` as ``prefix/relative`` (caches, compiled files and hidden files left out)."""
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p for p in solutions_files(folder)}


def zip_members(assignment: str, *, solutions_dir: Path = SOLUTIONS_DIR) -> dict[str, Path]:
    """What the zip holds besides autograder.json: its name inside the zip -> the file it is copied from."""
    spec = load_assignment(assignment, solutions_dir=solutions_dir)
    assert spec.folder is not None  # the loader sets it
    members = {name: SCRIPTS / name for name in EXECUTABLE}
    members |= _tree(GRADER_DIR, "grader")
    members |= _tree(TEMPLATES_DIR, "templates")
    members |= {name: PROJECT_ROOT / name for name in PROJECT_FILES}
    # In the container solutions/ is where the grader looks, whichever folder they came from here.
    members |= _tree(spec.folder, f"solutions/{assignment}")
    # The course's secret: Gradescope's server must draw the hidden cases this machine draws (the zip is the
    # instructor's, uploaded to Gradescope; students never see it).
    members[f"solutions/{SECRET_FILE}"] = spec.folder.parent / SECRET_FILE
    for path in spec.provided_paths:
        if path.is_relative_to(spec.folder):
            continue
        if not path.is_relative_to(PROJECT_ROOT):
            raise ConfigurationError(f"{assignment}: the provided file {path} lies outside the project, so the "
                                     f"autograder could not find it at the same path; move it into {spec.folder}")
        members[path.relative_to(PROJECT_ROOT).as_posix()] = path
    return members


def _config(assignment: str) -> bytes:
    return (json.dumps({"assignment": assignment, "grader_version": __version__}, indent=2) + "\n").encode()


def build_autograder_zip(assignment: str, out: Path, *, solutions_dir: Path = SOLUTIONS_DIR) -> AutograderZip:
    """Write the autograder zip for ``assignment`` to ``out`` (replaced in one rename, never left half-written)."""
    members = zip_members(assignment, solutions_dir=solutions_dir)
    entries = sorted([*members, CONFIG], key=lambda n: (n not in EXECUTABLE, n))  # the two scripts first
    with atomic_writer(out) as handle, zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in entries:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100755 if name in EXECUTABLE else 0o100644) << 16  # regular file, mode
            archive.writestr(info, _config(assignment) if name == CONFIG else members[name].read_bytes())
    return AutograderZip(out, assignment, tuple(entries), out.stat().st_size)
