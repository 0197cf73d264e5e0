"""Student ids and names are data, never paths: the id a student is known by, the one file name made from it, and
how an id is shown on a terminal.

A student id comes from outside (a file's name, a Gradescope SID, a name typed into a platform) and may hold any
character of any script, in any length. ``student_id`` is the id as the grader keeps it: Unicode NFC, so that the
same name written in composed (Linux, Windows) or decomposed (macOS) form is one student. ``file_name`` is the one
place an id becomes a file or folder name (OUT/students/<name>/, similar pages, the self-check's folder):

- only letters, digits and ``. _ - @ +``; never hidden, never a Windows device name, never ending in a dot;
- at most ``MAX_BYTES`` bytes of UTF-8, whatever the script, so that a page name made of two of them, and the
  temporary file an atomic write makes beside it, stay within a file system's 255 bytes per name;
- different for two different ids on any disk, case-insensitive (macOS, Windows, FAT and exFAT drives) or not: a
  lowercase ASCII id is its own name (``ana``); any other id (``Ana``, ``José``, a 300-byte SID) is shown as far as
  it can be, followed by ``-`` and 12 hex digits of the SHA-256 of the id, which tell ``Ana`` from ``ana``. A name
  made of the id alone never ends the way a hashed one does, so the two kinds never meet;
- the same for the same id on every run and every machine (no table decides it; the run still writes the mapping,
  ``OUT/student-folders.json``, for people and scripts looking for a student's folder).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_BYTES = 100
HASH_DIGITS = 12
# A name that is the id itself: lowercase ASCII letters and digits, with . _ @ + and single - inside.
_PLAIN = re.compile(r"[a-z0-9_@+](?:[a-z0-9._@+]|-(?!-))*")
_HASHED_END = re.compile(rf"-[0-9a-f]{{{HASH_DIGITS}}}$")
# Windows refuses these as the part of a name before its first dot, on every drive it mounts.
_DEVICES = {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(10)), *(f"lpt{n}" for n in range(10))}
_KEPT_SYMBOLS = "._-@+"


def readable(raw: str) -> str:
    """A name from the file system as text: the bytes of a name that is not UTF-8 (a zip made on a machine with
    another encoding, unpacked here) are shown as ``\\xNN`` rather than carried as lone surrogates, which no page,
    JSON file or database can hold."""
    if not any("\ud800" <= ch <= "\udfff" for ch in raw):
        return raw
    return "".join(_readable_char(ch) if "\ud800" <= ch <= "\udfff" else ch for ch in raw)


def _readable_char(surrogate: str) -> str:
    # an escaped byte (U+DC80-U+DCFF) as \xNN; any other lone surrogate as \udNNN
    if "\udc80" <= surrogate <= "\udcff":
        return surrogate.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return surrogate.encode("utf-8", "backslashreplace").decode("utf-8")


def student_id(raw: str) -> str:
    """The id a student is graded under: ``raw`` as text (``readable``) in Unicode NFC (the same name typed on macOS
    or Linux is one id)."""
    return unicodedata.normalize("NFC", readable(raw))


def _plain(text: str) -> bool:
    return (bool(_PLAIN.fullmatch(text)) and len(text) <= MAX_BYTES and not text.endswith(".")
            and not _HASHED_END.search(text) and text.split(".", 1)[0] not in _DEVICES)


def _shown_part(text: str, limit: int) -> str:
    """What of ``text`` can be shown in a file name: letters, digits and a few symbols, cut to ``limit`` bytes."""
    kept = "".join(ch if ch.isalnum() or ch in _KEPT_SYMBOLS else "_" for ch in text)
    kept = re.sub(r"_{2,}", "_", re.sub(r"-{2,}", "-", kept)).lstrip("._-")
    kept = kept.encode("utf-8")[:limit].decode("utf-8", "ignore")  # a character cut in two is dropped whole
    return kept.rstrip("._- ")


def file_name(student: str) -> str:
    """The file or folder name for ``student`` (see the module's docstring): safe, bounded, unique under case
    folding and Unicode normalisation, and stable."""
    text = student_id(student)
    if _plain(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_DIGITS]
    shown = _shown_part(text, MAX_BYTES - HASH_DIGITS - 1) or "student"
    return f"{shown}-{digest}"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: control characters (an escape sequence in a file name would recolour or
    rewrite the instructor's terminal) and invisible direction marks shown as escapes."""
    return _CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)
