"""Seeds derived from (assignment, student, check): every case can be replayed.

A hidden check's random case is the student's own (classmates get different ones, so a hidden case passed around
is worth nothing), drawn from a seed keyed with the course's secret (``course_secret``): the seed's code ships in
the student kit's wheel, the secret never does, so no student can rebuild a hidden check's inputs. A public check's
case is everyone's and unkeyed: the student kit, `grader check` and the grader draw the same inputs for it whoever
runs it, as the templates promise.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
import tempfile
from pathlib import Path

from grader.errors import ConfigurationError
from grader.results import PUBLIC, Visibility

# Whose random case a public check draws: nobody's in particular.
EVERYONE = ""
# Beside the assignments' folders in the solutions folder: one secret per course, kept with the solutions.
SECRET_FILE = ".course-secret"


def check_seed(assignment: str, student: str, check_id: str, visibility: Visibility, key: bytes = b"") -> int:
    """The seed of ``check_id``'s random case for ``student``; ``key``: the course's secret (hidden checks only)."""
    message = f"{assignment}\0{EVERYONE if visibility == PUBLIC else student}\0{check_id}".encode()
    if visibility == PUBLIC or not key:
        digest = hashlib.sha256(message).digest()
    else:
        digest = hmac.new(key, message, hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big")


def course_secret(solutions_dir: Path) -> bytes:
    """The course's secret in ``solutions_dir/.course-secret``, made (once, 256 random bits) when there is none."""
    path = solutions_dir / SECRET_FILE
    if not path.exists():
        _create(path)
    text = path.read_text(encoding="ascii").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise ConfigurationError(f"{path} does not hold a course secret (64 hex digits): delete it to make a new one, "
                                 "which changes every hidden check's random case")
    return key


def _create(path: Path) -> None:
    """Written whole and linked into place: of graders starting together, one makes it and the others read it."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".secret-", delete=False) as handle:
        handle.write(secrets.token_hex(32) + "\n")
    try:
        os.chmod(handle.name, 0o600)
        os.link(handle.name, path)
    except FileExistsError:
        return
    finally:
        os.unlink(handle.name)
    print(f"grader: made {path}, the course's secret, which keys the hidden checks' random cases: keep it with your "
          "solutions (commit it to their private repository) so that every machine that grades draws the same "
          "cases, and never give it to students", file=sys.stderr)
