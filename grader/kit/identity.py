"""Which build a student kit is: the assignment's version, a digest of what the kit holds, and a digest of the
course files it was recorded from, so that an old kit can be told from a new one.

- ``kit.json`` carries the identity; every ``check()`` result shows it ("kit attention_scoring 1 · 3f2a1b9c").
- Every kit of a course works with one installed grader: the wheel of a ``grader kit`` run is a *release* of the
  course's kits (``0.1.0.post<release>+k<digest>``, grader/kit/publish.py), numbered in order, so pip's order is the
  course's. A kit records the lowest release it works with (``needs``: the first release of the grader code it was
  built with), and the wheel carries the table of the kits published with it (``published.json``). A kit says so
  only when the installed grader is older than it needs (then: install the wheel from this kit's folder, always a
  newer one) or when the installed grader's table holds a newer kit of its assignment (then: fetch that kit). A
  newer grader serves an older kit: the course grades with its newest grader, so a kit checks closer to its grade
  with it, and what a kit holds (its checks, points, recorded answers) is in the kit, which the table compares.
- ``grader assign --check`` compares a kit's ``sources`` with the course's files of today: a kit recorded from older
  checks, references or templates is reported.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

DISTRIBUTION = "attention_grader"
PUBLISHED = "published.json"  # the course's kits as of a release: in the wheel beside this module, and in dist/
_SKIPPED = ("__pycache__", ".ipynb_checkpoints")


@dataclass(frozen=True)
class KitIdentity:
    assignment: str
    version: str  # the assignment's, as its checks.py says (Assignment(version=...))
    digest: str  # of what the kit holds: its checks, recorded answers, provided files
    sources: str  # of the course files it was recorded from (grader assign --check compares it)
    wheel: str = ""  # the version of the grader's wheel built with it; empty when built without one
    needs: str = ""  # the lowest wheel it works with (the first release of its grader code); "": any
    grader: str = ""  # the digest of the grader's code it was built with

    def label(self) -> str:
        return f"kit {self.assignment} {self.version} · {self.digest[:8]}"

    def as_json(self) -> dict[str, str]:
        return {"assignment": self.assignment, "version": self.version, "digest": self.digest,
                "sources": self.sources, "wheel": self.wheel, "needs": self.needs, "grader": self.grader}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KitIdentity:
        return cls(str(data["assignment"]), str(data["version"]), str(data["digest"]), str(data["sources"]),
                   str(data.get("wheel", "")), str(data.get("needs", "")), str(data.get("grader", "")))


def _files(folders: Iterable[Path]) -> list[tuple[str, Path]]:
    found = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not any(part in _SKIPPED for part in path.relative_to(folder).parts):
                found.append((f"{folder.name}/{path.relative_to(folder).as_posix()}", path))
    return found


def digest_entries(entries: Iterable[tuple[str, bytes]], extra: bytes = b"") -> str:
    """sha256 over ``extra`` and each entry's name, length and bytes, in the order given."""
    hasher = hashlib.sha256(extra)
    for name, data in entries:
        hasher.update(f"{name}\0{len(data)}\0".encode())
        hasher.update(data)
    return hasher.hexdigest()


def digest_files(files: Iterable[tuple[str, Path]], extra: bytes = b"") -> str:
    """``digest_entries`` over files, each read as it comes."""
    return digest_entries(((name, path.read_bytes()) for name, path in files), extra)


def sources_digest(solution_folder: Path, student_folder: Path, provided: Iterable[Path] = ()) -> str:
    """The course files a kit is recorded from: the assignment's solutions folder (checks, references, variants,
    solution notebook), its student files, and the files its questions are provided with."""
    files = _files((solution_folder, student_folder))
    files += [(f"provided/{p.name}", p) for p in sorted(provided) if p.is_file()]
    return digest_files(files)


def kit_digest(folder: Path, data: dict[str, Any]) -> str:
    """What a kit's ``grader-kit/`` holds: its files other than kit.json, and kit.json's data (without its identity)."""
    files = [(name, path) for name, path in _files((folder,)) if Path(name).name != "kit.json"]
    return digest_files(files, json.dumps(data, sort_keys=True).encode())


def installed_wheel() -> str:
    """The installed grader's version ("" when it is not an installed distribution, e.g. a checkout on sys.path)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return ""


def release_of(version: str) -> int:
    """The course's release a wheel's version says (``0.1.0.post3+k...``: 3); 0 for one before releases were counted
    (``0.1.0+k...``) or none."""
    found = re.fullmatch(r"[0-9.]+\.post(\d+)(\+.*)?", version)
    return int(found.group(1)) if found else 0


@dataclass(frozen=True)
class Published:
    """The course's kits as of one release: what the installed wheel was published with."""

    release: int
    wheel: str
    kits: dict[str, tuple[str, str]]  # assignment -> (digest of its kit, the wheel that kit was published with)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Published:
        return cls(int(data["release"]), str(data["wheel"]),
                   {name: (str(kit["digest"]), str(kit["wheel"])) for name, kit in data["kits"].items()})


def installed_published() -> Published | None:
    """The table of kits the installed wheel carries (None in a checkout, or a wheel from before the tables)."""
    path = Path(__file__).with_name(PUBLISHED)
    try:
        return Published.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def wheel_note(identity: KitIdentity, installed: str, published: Published | None = None) -> str:
    """What a student reads when the installed grader does not serve this kit as the course means it; empty when it
    does (or either is unknown: a kit built without a wheel, a grader run from a checkout).

    Two cases, each with what to get, and never an older wheel than the installed one:
    - the installed grader is older than the kit needs: install the wheel in this kit's folder (newer: the kit was
      published with it, and it needs no more than that);
    - the installed grader was published with a newer kit of this assignment than this one: fetch that kit."""
    if not identity.wheel or not installed or "+" not in installed:
        return ""
    have = published.release if published else release_of(installed)
    if have < release_of(identity.needs):
        wheel = f"{DISTRIBUTION}-{identity.wheel}-py3-none-any.whl"
        return (f"This kit needs grader {identity.needs} or newer, but grader {installed} is installed: install the "
                f"wheel from this kit's folder (python -m pip install {wheel}), then restart the kernel. Its points "
                "may differ from the grader's until then.")
    current = published.kits.get(identity.assignment) if published else None
    if published and current and current[0] != identity.digest and release_of(identity.wheel) < published.release:
        return (f"This kit ({identity.label()}) is older than the {identity.assignment} kit your course published "
                f"with grader {current[1]}: fetch the new {identity.assignment} kit from your course and check with "
                "it (copy your notebook into its folder). Its checks or points differ from this one's.")
    return ""
