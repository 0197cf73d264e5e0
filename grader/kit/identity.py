"""Which build a student kit is: the assignment's version, a digest of what the kit holds, and a digest of the
course files it was recorded from, so that an old kit can be told from a new one.

- ``kit.json`` carries the identity; every ``check()`` result shows it ("kit attention_scoring 1 · 3f2a1b9c").
- The grader's wheel of a ``grader kit`` run has a version of its own (``0.1.0+k<digest>``, over the grader's code
  and the kits built with it): pip replaces an installed wheel by a newer one (a version it has not got), and a kit
  whose ``kit.json`` names another wheel than the installed one says so.
- ``grader assign --check`` compares a kit's ``sources`` with the course's files of today: a kit recorded from older
  checks, references or templates is reported.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

DISTRIBUTION = "attention_grader"
_SKIPPED = ("__pycache__", ".ipynb_checkpoints")


@dataclass(frozen=True)
class KitIdentity:
    assignment: str
    version: str  # the assignment's, as its checks.py says (Assignment(version=...))
    digest: str  # of what the kit holds: its checks, recorded answers, provided files
    sources: str  # of the course files it was recorded from (grader assign --check compares it)
    wheel: str = ""  # the version of the grader's wheel built with it; empty when built without one

    def label(self) -> str:
        return f"kit {self.assignment} {self.version} · {self.digest[:8]}"

    def as_json(self) -> dict[str, str]:
        return {"assignment": self.assignment, "version": self.version, "digest": self.digest,
                "sources": self.sources, "wheel": self.wheel}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KitIdentity:
        return cls(str(data["assignment"]), str(data["version"]), str(data["digest"]), str(data["sources"]),
                   str(data.get("wheel", "")))


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


def wheel_note(identity: KitIdentity, installed: str) -> str:
    """What a student reads when the kit came with another wheel than the one installed; empty when they agree (or
    either is unknown: a kit built without a wheel, a grader run from a checkout)."""
    if not identity.wheel or not installed or installed == identity.wheel or "+" not in installed:
        return ""
    return (f"This kit came with grader {identity.wheel}, but grader {installed} is installed: install the wheel in "
            f"the kit folder (python -m pip install {DISTRIBUTION}-{identity.wheel}-py3-none-any.whl), then restart "
            "the kernel. Its points may differ from the grader's until then.")
