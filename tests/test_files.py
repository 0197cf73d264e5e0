"""Files written whole or not at all (grader/files.py): what a reader sees when a write fails half-way."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import pytest

from grader.files import atomic_writer, remove_partial_writes, write_bytes_atomic, write_text_atomic


def test_a_write_replaces_the_file_whole_readable_by_all_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "new" / "feedback.zip"
    write_bytes_atomic(target, b"old")
    write_bytes_atomic(target, b"\x00new bytes\r\n")
    assert target.read_bytes() == b"\x00new bytes\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    write_text_atomic(target, "día\r\n")  # UTF-8, line ends as given
    assert target.read_bytes() == "día\r\n".encode()
    assert [p.name for p in target.parent.iterdir()] == ["feedback.zip"]


def test_a_write_that_fails_half_way_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "feedback.zip"
    write_bytes_atomic(target, b"the old zip")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle, zipfile.ZipFile(handle, "w") as archive:
        archive.writestr("ana.html", "<p>half")
        raise RuntimeError("killed")
    assert target.read_bytes() == b"the old zip"
    assert [p.name for p in tmp_path.iterdir()] == ["feedback.zip"]


def test_a_zip_written_piece_by_piece_is_a_whole_zip(tmp_path: Path) -> None:
    target = tmp_path / "feedback.zip"
    with atomic_writer(target) as handle, zipfile.ZipFile(handle, "w") as archive:
        for name in ("ana.html", "bob.html"):
            archive.writestr(name, f"<p>{name}")
    with zipfile.ZipFile(target) as archive:
        assert archive.namelist() == ["ana.html", "bob.html"]
        assert archive.read("bob.html") == b"<p>bob.html"


def test_only_the_temporaries_of_cut_writes_are_removed(tmp_path: Path) -> None:
    (tmp_path / "students").mkdir()
    cut = tmp_path / "students" / ".report.html.a1b2.tmp"
    cut.write_text("<p>half")
    kept = [tmp_path / "students" / "report.html", tmp_path / ".hidden", tmp_path / "notes.tmp"]
    for path in kept:
        path.write_text("keep")
    assert remove_partial_writes(tmp_path) == [cut]
    assert all(p.exists() for p in kept) and not cut.exists()
