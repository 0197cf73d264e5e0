"""A course's kits, published: every ``grader kit`` run that writes the wheel is a *release* of the course's kits, so
that one student environment serves every kit of the course at once.

- Releases are counted in the output folder (``dist/published.json``, or else the newest wheel in its kits): a run
  that changes nothing (the same grader code, the same kits) is the same release, the same bytes; any change is the
  next one. The wheel's version is ``0.1.0.post<release>+k<digest>`` (the digest over the grader's code and the
  course's kits), so pip's order is the course's: the newest kit's wheel serves every older kit.
- The wheel carries the course's table of kits as of its release (``grader/kit/published.json``): each assignment's
  kit digest and the wheel it was published with. An older kit checked with it is told to fetch the new one
  (grader/kit/identity.py).
- Each kit built records the lowest release it works with, ``needs``: the first release of the grader code it was
  built with. A kit the course did not rebuild keeps its wheel and its ``needs``, and a newer wheel serves it.
- A new kit format (``FORMAT``: what a grader reads) would leave the course's other kits unreadable to the new
  wheel: such a build must rebuild every published kit, and is refused before it starts otherwise.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader import __version__
from grader.errors import ConfigurationError
from grader.kit.build import KIT_GUIDE
from grader.kit.bundle import FORMAT, KIT_FILE, KIT_FOLDER, read_json, write_json
from grader.kit.identity import DISTRIBUTION, PUBLISHED, KitIdentity
from grader.kit.wheel import WHEEL_NAME, BuiltPackage, write_wheel

IN_WHEEL = f"grader/kit/{PUBLISHED}"  # beside grader/kit/identity.py, which reads it


@dataclass(frozen=True)
class Release:
    number: int
    wheel: str  # the wheel's version
    needs: str  # the lowest wheel its kits work with: the first release of its grader code
    grader: str  # the digest of the grader's code
    format: int  # of its kits
    kits: dict[str, dict[str, str]] = field(default_factory=dict)  # assignment -> version, digest, wheel

    def as_json(self) -> dict[str, Any]:
        return {"release": self.number, "wheel": self.wheel, "needs": self.needs, "grader": self.grader,
                "format": self.format, "kits": self.kits}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Release:
        kits = {name: {key: str(value) for key, value in kit.items()} for name, kit in data["kits"].items()}
        return cls(int(data["release"]), str(data["wheel"]), str(data["needs"]), str(data["grader"]),
                   int(data["format"]), kits)


def previous_release(out: Path) -> Release | None:
    """The course's latest release in ``out``: its ``published.json``, or the newest wheel of its kits (a folder of
    published kits copied back without it)."""
    found = []
    if (out / PUBLISHED).is_file():
        found.append(Release.from_json(read_json(out / PUBLISHED)))
    for wheel in sorted(out.glob(f"*/{DISTRIBUTION}-*.whl")):
        try:
            with zipfile.ZipFile(wheel) as archive:
                found.append(Release.from_json(json.loads(archive.read(IN_WHEEL))))
        except (KeyError, ValueError, zipfile.BadZipFile):  # a wheel from before releases were counted
            continue
    return max(found, key=lambda release: release.number, default=None)


def refuse_partial(previous: Release | None, names: Iterable[str], out: Path) -> None:
    """A build whose kits another format than the published ones' must rebuild every published kit still in ``out``:
    the new wheel could not read the others."""
    if previous is None or previous.format == FORMAT:
        return
    left = sorted(name for name in previous.kits if name not in set(names) and (out / name / KIT_FOLDER).is_dir())
    if left:
        raise ConfigurationError(
            f"this grader writes kits of format {FORMAT}, and the course's published kits in {out} are of format "
            f"{previous.format}: its wheel could not check {', '.join(left)}. Rebuild them in the same run: "
            f"grader kit {' '.join(sorted({*names, *left}))}")


def next_release(previous: Release | None, grader: str, kits: Sequence[KitIdentity]) -> Release:
    """The release that publishes ``kits`` built with grader code ``grader``: ``previous`` itself when nothing
    changed, else the next one, whose table is ``previous``'s with these kits in their places."""
    table = {name: dict(kit) for name, kit in previous.kits.items()} if previous else {}
    changed = sorted(kit.assignment for kit in kits if table.get(kit.assignment, {}).get("digest") != kit.digest)
    if previous is not None and not changed and previous.grader == grader and previous.format == FORMAT:
        return previous
    number = previous.number + 1 if previous else 1
    for kit in kits:
        if kit.assignment in changed:
            table[kit.assignment] = {"version": kit.version, "digest": kit.digest}
    label = hashlib.sha256(grader.encode())
    for name in sorted(table):
        label.update(f"\0{name}\0{table[name]['digest']}".encode())
    version = f"{__version__}.post{number}+k{label.hexdigest()[:10]}"
    for name in changed:
        table[name]["wheel"] = version
    same_code = previous is not None and previous.grader == grader and previous.format == FORMAT
    needs = previous.needs if same_code and previous else f"{__version__}.post{number}"
    return Release(number, version, needs, grader, FORMAT, table)


@dataclass(frozen=True)
class Published:
    release: Release
    wheel: str  # the wheel's file name
    changed: list[str] = field(default_factory=list)  # the assignments whose kits this release made new
    previous: Release | None = None

    def summary(self, where: str) -> str:
        number = self.release.number
        if self.previous is not None and self.previous.number == number:
            return f"Wheel {self.wheel}: release {number} of the course's kits, unchanged ({where})"
        new = f"; new in it: {', '.join(self.changed)}" if self.changed else ""
        code = ("; the grader's code changed: these kits need this wheel or a newer one"
                if self.previous is not None and self.release.needs != self.previous.needs else "")
        return f"Wheel {self.wheel}: release {number} of the course's kits ({where}){new}{code}"


def publish(kits: Sequence[Path], out: Path, package: BuiltPackage, previous: Release | None = None) -> Published:
    """Write the release's wheel into each of ``kits`` (folders in ``out``, just built), each kit's ``needs`` into its
    identity and the wheel's name into its guide, and ``out/published.json``."""
    identities = [KitIdentity.from_json(read_json(kit / KIT_FOLDER / KIT_FILE)["identity"]) for kit in kits]
    release = next_release(previous, package.digest(), identities)
    table = json.dumps(release.as_json(), indent=1, sort_keys=True).encode()
    name = ""
    for kit in kits:
        for older in kit.glob(f"{DISTRIBUTION}-*.whl"):  # an earlier build's, which would be installed by mistake
            older.unlink()
        name = write_wheel(package, kit, release.wheel, extra=[(IN_WHEEL, table)]).name
        data = read_json(kit / KIT_FOLDER / KIT_FILE)
        identity = replace(KitIdentity.from_json(data["identity"]), wheel=release.wheel, needs=release.needs,
                           grader=release.grader)
        write_json(kit / KIT_FOLDER / KIT_FILE, {**data, "identity": identity.as_json()})
        guide = kit / KIT_GUIDE
        if guide.is_file():
            guide.write_text(guide.read_text(encoding="utf-8").replace(WHEEL_NAME, name), encoding="utf-8")
    write_json(out / PUBLISHED, release.as_json())
    changed = [i.assignment for i in identities
               if previous is None or previous.kits.get(i.assignment, {}).get("digest") != i.digest]
    return Published(release, name, sorted(changed), previous)
