"""The grading fingerprint: a hash of everything besides the submission that decides its result.

A stored result is reused only when it was graded under the same fingerprint: the same files in the assignment's
solutions folder (checks, references, provided code, limits), the same grader version, the same device, and the same
torch and NumPy releases. Change any of them and the next run regrades everyone.
"""

from __future__ import annotations

import hashlib
import importlib.metadata

from grader import __version__
from grader.check.load import solutions_files
from grader.check.spec import Assignment
from grader.execute.limits import Limits


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def grading_fingerprint(assignment: Assignment, *, device: str, limits: Limits | None = None) -> str:
    digest = hashlib.sha256()

    def add(label: str, value: bytes) -> None:
        digest.update(f"{label}\0{len(value)}\0".encode())
        digest.update(value)

    add("grader", __version__.encode())
    add("assignment", assignment.name.encode())
    add("device", device.encode())
    add("limits", repr(limits or assignment.limits).encode())  # --limit overrides change what can pass
    for package in ("torch", "numpy"):
        add(package, _package_version(package).encode())
    if assignment.folder is not None:
        for path in solutions_files(assignment.folder):
            add(f"file:{path.relative_to(assignment.folder).as_posix()}", path.read_bytes())
    # Another course secret draws other hidden cases; hashed, so that the fingerprint (in the gradebook) cannot
    # be turned back into it.
    add("secret", hashlib.sha256(assignment.seed_key).digest())
    for path in assignment.provided_paths:  # a provided harness may live beside what students get
        if not path.is_relative_to(assignment.folder or path.parent):
            add(f"provided:{path.name}", path.read_bytes())
    return digest.hexdigest()
