"""Kits that coexist: every `grader kit` run that writes the wheel is a release of the course's kits
(grader/kit/publish.py), so one student environment serves every kit of a course. Over any history of builds (the
grader's code changing or not, any kits rebuilt with changed checks or not), every kit checked with every release's
wheel: no warning where the kit is the course's current one and the grader serves it; an outdated kit names the kit
to fetch; a kit newer than the grader names its own wheel; and no message ever advises an older wheel than the one
installed. tests/test_kit_install.py does the same with real kits in one real environment.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from grader.errors import ConfigurationError
from grader.kit.bundle import FORMAT, KIT_FILE, KIT_FOLDER, read_json, write_json
from grader.kit.identity import PUBLISHED, KitIdentity, Published, release_of, wheel_note
from grader.kit.publish import IN_WHEEL, Release, previous_release, publish, refuse_partial
from grader.kit.runner import load_kit
from grader.kit.wheel import BuiltPackage

ASSIGNMENTS = ("attention_scoring", "bahdanau_attention", "practical10")
METADATA = "Metadata-Version: 2.1\nName: attention_grader\nVersion: 0.1.0\nRequires-Python: >=3.11\n\nThe grader."
# What a note may name to install: a wheel file, or a grader version to have at least.
NAMED = re.compile(r"attention_grader-(\S+?)-py3-none-any\.whl|needs grader (\S+) or newer")


def package(code: int) -> BuiltPackage:
    """A stand-in for the grader's package: its code is ``code``'s (the real one takes seconds to build)."""
    return BuiltPackage([("grader/__init__.py", f"__version__ = '0.1.0'  # code {code}\n".encode())], METADATA, [])


def kit_digest(name: str, content: int) -> str:
    return hashlib.sha256(f"{name} {content}".encode()).hexdigest()


def built_kit(out: Path, name: str, content: int) -> Path:
    """A kit as build_kit leaves it, of checks ``content``: its identity without a wheel."""
    kit = out / name
    identity = KitIdentity(name, "1", kit_digest(name, content), "sources")
    write_json(kit / KIT_FOLDER / KIT_FILE, {"format": FORMAT, "identity": identity.as_json()})
    return kit


@dataclass(frozen=True)
class Build:
    index: int
    code: int
    contents: dict[str, int]  # the course's kits after it: assignment -> its checks
    version: str  # its wheel's
    table: Published  # what its wheel carries


@dataclass(frozen=True)
class StudentKit:
    build: int  # the build it came from
    name: str
    content: int
    identity: KitIdentity


def run_history(out: Path, history: list[tuple[int, dict[str, int]]]) -> tuple[list[Build], list[StudentKit]]:
    """Each build of ``history`` (grader code, the kits rebuilt with their checks) published into ``out``, as
    `grader kit` does: every release's wheel, and every kit a student may have been handed."""
    builds: list[Build] = []
    kits: list[StudentKit] = []
    contents: dict[str, int] = {}
    for index, (code, rebuilt) in enumerate(history):
        folders = [built_kit(out, name, content) for name, content in sorted(rebuilt.items())]
        published = publish(folders, out, package(code), previous_release(out))
        contents = {**contents, **rebuilt}
        (wheel,) = folders[0].glob("attention_grader-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            table = json.loads(archive.read(IN_WHEEL))
        assert table == read_json(out / PUBLISHED) == published.release.as_json()
        assert wheel.name == f"attention_grader-{table['wheel']}-py3-none-any.whl"
        builds.append(Build(index, code, contents, table["wheel"], Published.from_json(table)))
        for folder, (name, content) in zip(folders, sorted(rebuilt.items()), strict=True):
            identity = KitIdentity.from_json(read_json(folder / KIT_FOLDER / KIT_FILE)["identity"])
            assert identity.wheel == table["wheel"] and identity.digest == kit_digest(name, content)
            kits.append(StudentKit(index, name, content, identity))
    return builds, kits


histories = st.lists(st.tuples(st.integers(0, 2), st.dictionaries(st.sampled_from(ASSIGNMENTS), st.integers(0, 2),
                                                                  min_size=1)), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(histories)
def test_every_kit_with_every_release_says_only_what_is_true_and_never_advises_an_older_wheel(
        history: list[tuple[int, dict[str, int]]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        builds, kits = run_history(Path(folder), history)
    # pip's order is the course's: a build that changed something is a newer wheel, one that changed nothing the same.
    for before, after in itertools.pairwise(builds):
        changed = after.code != before.code or after.contents != before.contents
        assert (Version(after.version) > Version(before.version)) if changed else after.version == before.version
    for kit in kits:
        for installed in builds:
            note = wheel_note(kit.identity, installed.version, installed.table)
            for named in NAMED.finditer(note):  # never a downgrade
                assert Version(named.group(1) or named.group(2)) > Version(installed.version), (note, installed)
            current = installed.contents.get(kit.name) == kit.content
            same_code = len({b.code for b in builds[min(kit.build, installed.index):
                                                      max(kit.build, installed.index) + 1]}) == 1
            if kit.build <= installed.index and current:  # the course's kit, with its grader or a newer one
                assert note == "", (kit, installed)
            elif kit.build <= installed.index:  # the course has published another kit of this assignment since
                assert f"fetch the new {kit.name} kit from your course" in note, (kit, installed)
                assert "install" not in note
            elif same_code:  # a kit newer than the installed grader, built with the same grader code
                assert note == "", (kit, installed)
            elif builds[kit.build].code != installed.code:  # built with another grader's code, newer than installed
                assert note.startswith(f"This kit needs grader {kit.identity.needs} or newer, but grader "
                                       f"{installed.version} is installed: install the wheel from this kit's folder "
                                       f"(python -m pip install attention_grader-{kit.identity.wheel}-py3-none-any"
                                       ".whl)"), (kit, installed, note)


def test_the_issue_s_case_the_untouched_kit_checks_without_a_warning(tmp_path: Path) -> None:
    """Both kits built; then the grader's code changed and one kit rebuilt with new checks. The untouched kit, with
    the new wheel installed, says nothing; the old copy of the rebuilt kit names the kit to fetch."""
    builds, kits = run_history(tmp_path, [(0, {"attention_scoring": 0, "bahdanau_attention": 0}),
                                          (1, {"attention_scoring": 1})])
    old_scoring, bahdanau, new_scoring = kits
    assert bahdanau.name == "bahdanau_attention" and new_scoring.build == 1
    newest = builds[1]
    assert [release_of(b.version) for b in builds] == [1, 2]
    assert wheel_note(bahdanau.identity, newest.version, newest.table) == ""
    assert wheel_note(new_scoring.identity, newest.version, newest.table) == ""
    assert wheel_note(old_scoring.identity, newest.version, newest.table) == (
        f"This kit ({old_scoring.identity.label()}) is older than the attention_scoring kit your course published "
        f"with grader {newest.version}: fetch the new attention_scoring kit from your course and check with it (copy "
        "your notebook into its folder). Its checks or points differ from this one's.")
    # The older wheel installed: the untouched kit and the old one check; the new kit names its own, newer, wheel.
    assert wheel_note(bahdanau.identity, builds[0].version, builds[0].table) == ""
    assert "install the wheel from this kit's folder (python -m pip install attention_grader-0.1.0.post2+k" in \
        wheel_note(new_scoring.identity, builds[0].version, builds[0].table)
    # The same grader code: the new kit needs no newer wheel than the first.
    _, same = run_history(tmp_path / "same", [(0, {"attention_scoring": 0, "bahdanau_attention": 0}),
                                              (0, {"attention_scoring": 1})])
    assert same[2].identity.needs == "0.1.0.post1" and same[2].identity.wheel.startswith("0.1.0.post2+k")


def test_kits_from_before_releases_were_counted_still_check(tmp_path: Path) -> None:
    """A kit.json of the earlier scheme (a wheel 0.1.0+k..., no needs) is served by any wheel, and told to fetch
    the new kit only when the course published another one."""
    builds, _ = run_history(tmp_path, [(0, {"attention_scoring": 0})])
    old = KitIdentity("attention_scoring", "1", kit_digest("attention_scoring", 0), "sources", "0.1.0+ka35a72445a")
    assert wheel_note(old, builds[0].version, builds[0].table) == ""
    other = KitIdentity("attention_scoring", "1", kit_digest("attention_scoring", 9), "sources", "0.1.0+ka35a72445a")
    assert "fetch the new attention_scoring kit" in wheel_note(other, builds[0].version, builds[0].table)
    # An installed wheel of the earlier scheme (no table) never tells a kit of today to install an older one.
    _, kits = run_history(tmp_path / "new", [(0, {"bahdanau_attention": 0})])
    note = wheel_note(kits[0].identity, "0.1.0+kee3bb2ab4a", None)
    assert "install the wheel from this kit's folder" in note and "0.1.0+kee3bb2ab4a is installed" in note
    # A grader run from a checkout, or a kit built without a wheel: nothing to say.
    assert wheel_note(kits[0].identity, "0.1.0", None) == ""
    assert wheel_note(KitIdentity("bahdanau_attention", "1", "d", "s"), builds[0].version, builds[0].table) == ""


def test_a_rebuild_that_changes_nothing_is_the_same_release(tmp_path: Path) -> None:
    builds, _ = run_history(tmp_path, [(0, {"attention_scoring": 0, "bahdanau_attention": 0}),
                                       (0, {"bahdanau_attention": 0}), (0, {"attention_scoring": 0})])
    assert {b.version for b in builds} == {builds[0].version} and release_of(builds[0].version) == 1


def test_the_release_count_goes_on_from_a_kit_s_wheel_when_published_json_is_gone(tmp_path: Path) -> None:
    builds, _ = run_history(tmp_path, [(0, {"attention_scoring": 0}), (1, {"bahdanau_attention": 0})])
    (tmp_path / PUBLISHED).unlink()
    found = previous_release(tmp_path)
    assert found is not None and found.wheel == builds[1].version and found.number == 2
    more, _ = run_history(tmp_path, [(1, {"attention_scoring": 1})])
    assert release_of(more[0].version) == 3 and set(more[0].table.kits) == {"attention_scoring", "bahdanau_attention"}


def test_a_new_kit_format_must_rebuild_every_published_kit(tmp_path: Path) -> None:
    for name in ("attention_scoring", "bahdanau_attention"):
        built_kit(tmp_path, name, 0)
    older = Release(4, "0.1.0.post4+kabc", "0.1.0.post1", "g", FORMAT - 1,
                    {name: {"version": "1", "digest": "d", "wheel": "0.1.0.post4+kabc"}
                     for name in ("attention_scoring", "bahdanau_attention", "gone")})
    with pytest.raises(ConfigurationError) as refused:
        refuse_partial(older, ["attention_scoring"], tmp_path)
    assert f"this grader writes kits of format {FORMAT}" in str(refused.value)
    assert str(refused.value).endswith("Rebuild them in the same run: grader kit attention_scoring bahdanau_attention")
    refuse_partial(older, ["attention_scoring", "bahdanau_attention"], tmp_path)  # every kit still in the folder
    refuse_partial(Release(4, "v", "n", "g", FORMAT, older.kits), ["attention_scoring"], tmp_path)


@pytest.mark.parametrize(("format", "advice"), [(FORMAT - 1, "fetch the new attention_scoring kit from your course"),
                                                (FORMAT + 1, "install the wheel from this kit's folder")])
def test_a_kit_of_another_format_is_never_told_to_install_an_older_grader(tmp_path: Path, format: int,
                                                                          advice: str) -> None:
    write_json(tmp_path / KIT_FILE, {"format": format, "assignment": "attention_scoring"})
    with pytest.raises(ConfigurationError) as refused:
        load_kit(tmp_path)
    assert str(refused.value).endswith(f"is a kit of format {format}, this grader reads format {FORMAT}: {advice}")
