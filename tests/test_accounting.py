"""Every grade reaches the course: what real class lists, platform files and disks bring never breaks a run or loses
a grade, and a run accounts for everything it found, graded and wrote (OUT/accounting.json, the dashboard, the
terminal). Each test grades a small class of the toy assignment for real, through the command line."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.names import file_name
from grader.paths import PROJECT_ROOT

from . import class_folders
from .conftest import FIXTURE_SOLUTIONS, TOY_CORRECT

WRONG = TOY_CORRECT.replace("return x * 2", "return x * 3")
assert WRONG != TOY_CORRECT


def grade(submissions: Path, out: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "toy", str(submissions), "--out", str(out),
                           "--solutions", str(FIXTURE_SOLUTIONS), "--jobs", "1", *args],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == expect, done.stdout + done.stderr
    return done


def table(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline="")))


def accounting(out: Path) -> dict:
    return json.loads((out / "accounting.json").read_text(encoding="utf-8"))


def test_everything_found_is_accounted_for_by_name(tmp_path: Path) -> None:
    """Hidden files, a zip's clutter, a stray file and a student's second file: each listed with what became of it,
    on the terminal, in accounting.json and on the dashboard; none passed over."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "ana.py").write_text(TOY_CORRECT, encoding="utf-8")
    (folder / "bo.ipynb").write_text("{}", encoding="utf-8")
    (folder / "bo.py").write_text(WRONG, encoding="utf-8")
    os.utime(folder / "bo.ipynb", (1_700_000_000, 1_700_000_000))  # older: bo.py is graded
    (folder / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (folder / "__MACOSX").mkdir()
    (folder / "._ana.py").write_bytes(b"\0\5\26\7")
    (folder / ".cy.py").write_text(TOY_CORRECT, encoding="utf-8")
    (folder / "notes.txt").write_text("grade these", encoding="utf-8")
    out = tmp_path / "out"
    said = grade(folder, out).stdout
    fates = {e["path"]: e["fate"] for e in accounting(out)["entries"]}
    assert fates == {"ana.py": "graded", "bo.py": "graded", "bo.ipynb": "other file", ".DS_Store": "ignored",
                     "__MACOSX": "ignored", "._ana.py": "ignored", ".cy.py": "skipped", "notes.txt": "skipped"}
    assert "8 entries found" in said and "2 graded, 1 other file(s) of graded students, 2 skipped, 3 ignored" in said
    for name in (".cy.py", "notes.txt", ".DS_Store", "__MACOSX", "._ana.py"):
        assert name in said
    dashboard = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="accounting"' in dashboard and ".cy.py" in dashboard and "._ana.py" in dashboard
    assert json.loads((out / "student-folders.json").read_text(encoding="utf-8")) == {"ana": "ana", "bo": "bo"}


def test_a_graded_student_missing_from_the_moodle_worksheet_is_an_error_naming_them(tmp_path: Path) -> None:
    download = class_folders.moodle(tmp_path / "download", [".Ana Díaz", "Bo Chen", "Cy Diaz"], TOY_CORRECT).folder
    worksheet = tmp_path / "Grades.csv"
    worksheet.write_text("Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
                         "Last modified (submission),Last modified (grade),Feedback comments\n"
                         "Participant 101,.Ana Díaz,ana@x.edu,Submitted,,4.00,Yes,-,-,\n"
                         "Participant 102,Bo Chen,bo@x.edu,Submitted,,4.00,Yes,-,-,\n", encoding="utf-8")
    out = tmp_path / "out"
    done = grade(download, out, "--moodle-worksheet", str(worksheet), expect=4)
    assert "Participant 103 (Cy Diaz)" in done.stderr and "not in the worksheet" in done.stderr
    assert "NOT PLACED Participant 103 (Cy Diaz)" in done.stdout
    # everything else is written: the two other grades, every page, the dashboard; the participant whose name
    # begins with a dot is graded like anyone
    sheet = {r["Identifier"]: r["Grade"] for r in table(out / "moodle" / "grading-worksheet.csv")}
    assert sheet == {"Participant 101": "4", "Participant 102": "4"}
    assert {r["student"] for r in table(out / "grades.csv")} == {"101", "102", "103"}
    assert (out / "index.html").is_file()
    files = {f["file"]: f for f in accounting(out)["files"]}
    assert [n["student"] for n in files["moodle/grading-worksheet.csv"]["not_placed"]] == ["103"]
    assert sorted(files["moodle/feedback.zip"]["placed"]) == ["101", "102", "103"]


def test_a_canvas_gradebook_a_spreadsheet_re_saved_still_takes_every_grade(tmp_path: Path) -> None:
    download = class_folders.canvas(tmp_path / "download", ["lovelaceada", "hoppergrace", "díazjosé"],
                                    TOY_CORRECT).folder
    gradebook = tmp_path / "gradebook.csv"
    rows = ["Student,ID,SIS User ID,SIS Login ID,Section,Toy assignment (77)",
            "    Points Possible,,,,,4.00"]
    rows += [f'"{name}",{user}.0,S{user},s{user}@x.edu,A,' for name, user in
             (("Lovelace, Ada", 3001), ("Hopper, Grace", 3002), ("Díaz, José", 3003), ("Noether, Emmy", 3004))]
    gradebook.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    done = grade(download, out, "--canvas-gradebook", str(gradebook), "--no-similarity")
    assert "re-saved" in done.stdout and "3001.0" in done.stdout
    imported = {r["ID"]: r["Toy assignment (77)"] for r in table(out / "canvas" / "gradebook-import.csv")[1:]}
    assert imported == {"3001": "5", "3002": "5", "3003": "5", "3004": ""}  # ids as Canvas's, every grade in
    files = {f["file"]: f for f in accounting(out)["files"]}
    assert sorted(files["canvas/gradebook-import.csv"]["placed"]) == ["3001", "3002", "3003"]
    assert files["canvas/gradebook-import.csv"]["other_rows"] == 1


def test_a_canvas_student_missing_from_the_gradebook_is_an_error(tmp_path: Path) -> None:
    """Hopper is not in the export; Turing's id a spreadsheet wrote in scientific notation, which holds no id: both
    are named, and the run says what happened to the ID column."""
    download = class_folders.canvas(tmp_path / "download", ["lovelaceada", "hoppergrace", "turingalan"],
                                    TOY_CORRECT).folder
    gradebook = tmp_path / "gradebook.csv"
    gradebook.write_text('Student,ID,SIS User ID,SIS Login ID,Section,Toy assignment (77)\n'
                         '"Lovelace, Ada",3001,S1,a@x.edu,A,\n"Turing, Alan",3.003E+03,S3,t@x.edu,A,\n',
                         encoding="utf-8")
    done = grade(download, tmp_path / "out", "--canvas-gradebook", str(gradebook), "--no-similarity", expect=4)
    assert "user 3002 (hoppergrace)" in done.stderr and "user 3003 (turingalan)" in done.stderr
    assert "scientific notation (3.003E+03)" in done.stdout


def test_a_platform_file_for_another_platform_is_refused_before_grading(tmp_path: Path) -> None:
    folder = class_folders.flat(tmp_path / "class", ["ana"], TOY_CORRECT).folder
    worksheet = tmp_path / "Grades.csv"
    worksheet.write_text("Identifier,Grade,Last modified (grade)\n", encoding="utf-8")
    done = grade(folder, tmp_path / "out", "--moodle-worksheet", str(worksheet), expect=2)
    assert "not" in done.stderr and "Moodle download" in done.stderr
    assert not (tmp_path / "out" / "students").exists()


def test_one_long_gradescope_sid_and_long_non_ascii_names_grade_the_whole_class(tmp_path: Path) -> None:
    """A 300-character SID and two long non-ASCII full names whose code is the same: every page, the similar pair's
    page, grades.csv and the dashboard are written (each name bounded as a file name); the ids stay whole."""
    sid = "Ü" * 300
    export = class_folders.gradescope(tmp_path / "export", [("Ana", sid), ("Bo", "1002")], TOY_CORRECT).folder
    out = tmp_path / "gs"
    grade(export, out)
    assert {r["student"] for r in table(out / "grades.csv")} == {sid, "1002"}
    assert (out / "students" / file_name(sid) / "report.html").is_file()

    names = ["Maria da Conceição Gonçalves Vasconcelos de Albuquerque Magalhães " * 2,
             "Aleksandr Konstantinovich Rozhdestvenskiy-Shcherbatskoy " * 2 + "Ωμέγα"]
    folder = tmp_path / "class"
    folder.mkdir()
    for name in names:
        (folder / f"{name}.py").write_text(TOY_CORRECT + "\n\ndef extra(a, b):\n    total = 0\n    for i in range(a):"
                                           "\n        total += i * b\n    return total\n", encoding="utf-8")
    out = tmp_path / "flat"
    grade(folder, out, "--similarity-threshold", "0.1")
    assert len(list((out / "similar").glob("*.html"))) == 1
    assert {r["student"] for r in table(out / "grades.csv")} == set(names)
    for name in names:
        assert (out / "students" / file_name(name) / "report.html").is_file()


def exfat_disk(tmp_path: Path) -> Path:
    """A real exFAT file system (as USB drives and SD cards come formatted), case-insensitive, mounted through FUSE
    from an image; skip, saying why, where that cannot be done here."""
    tools = [shutil.which(t) for t in ("mkfs.exfat", "mount.exfat-fuse", "losetup")]
    if not all(tools):
        pytest.skip("needs mkfs.exfat (exfatprogs), mount.exfat-fuse (exfat-fuse) and losetup: `make test-tools`")
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    mount.mkdir()
    with image.open("wb") as handle:
        handle.truncate(96 << 20)
    subprocess.run(["mkfs.exfat", str(image)], check=True, capture_output=True)
    loop = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True)
    if loop.returncode != 0:
        pytest.skip(f"cannot attach a loop device here: {loop.stderr.strip()}")
    device = loop.stdout.strip()
    mounted = subprocess.run(["mount.exfat-fuse", device, str(mount)], capture_output=True, text=True)
    if mounted.returncode != 0:
        subprocess.run(["losetup", "-d", device], check=False)
        pytest.skip(f"cannot mount an exFAT image through FUSE here: {mounted.stderr.strip()}")
    return mount


@pytest.fixture
def case_insensitive_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    mount = exfat_disk(tmp_path)
    (mount / "Probe").touch()
    assert (mount / "probe").exists(), "the exFAT disk should be case-insensitive"
    (mount / "Probe").unlink()
    yield mount
    device = next((line.split()[0] for line in Path("/proc/mounts").read_text().splitlines()
                   if line.split()[1] == str(mount)), None)
    subprocess.run(["umount", str(mount)], check=False)
    if device and device.startswith("/dev/loop"):
        subprocess.run(["losetup", "-d", device], check=False)


def test_ids_differing_only_in_case_get_their_own_pages_on_a_case_insensitive_disk(
        tmp_path: Path, case_insensitive_disk: Path) -> None:
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "Ana.py").write_text(TOY_CORRECT, encoding="utf-8")  # full marks
    (folder / "ana.py").write_text(WRONG, encoding="utf-8")  # another student, another score
    out = case_insensitive_disk / "out"
    grade(folder, out)
    scores = {r["student"]: r["score"] for r in table(out / "grades.csv")}
    assert scores["Ana"] != scores["ana"]
    folders = {p.name for p in (out / "students").iterdir()}
    assert folders == {file_name("Ana"), file_name("ana")}
    for student in ("Ana", "ana"):
        results = json.loads((out / "students" / file_name(student) / "results.json").read_text(encoding="utf-8"))
        assert float(results["score"]) == float(scores[student])  # each folder holds its own student's result


def test_a_page_that_cannot_be_drawn_costs_that_student_a_plain_page_and_is_listed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One student's page failing to draw (injected here: no real result is known to break the templates) leaves
    them a plain page with their score, listed in the accounting; the next student's pages are drawn as usual."""
    from grader.pipeline import student_files
    from grader.pipeline.accounting import pages_placed
    from grader.record.output import OutputFolder

    from .test_names import result_for

    drawn = student_files.render_student_report

    def fails_for_ana(result, **kwargs):  # type: ignore[no-untyped-def]
        if result.student == "ana":
            raise ValueError("a name the templates did not expect")
        return drawn(result, **kwargs)

    monkeypatch.setattr(student_files, "render_student_report", fails_for_ana)
    for student in ("ana", "bo"):
        student_files.write_student_files(tmp_path, result_for(student, 1.0), "Toy", None)
    out = OutputFolder(tmp_path)
    page = out.student("ana").report.read_text(encoding="utf-8")
    assert "Score: 2 / 3" in page and "a name the templates did not expect" in page
    assert "Score: 2 / 3" not in out.student("bo").report.read_text(encoding="utf-8")
    placed = pages_placed(out, ["ana", "bo"])
    assert placed.placed == ("bo",) and len(placed.warnings) == 1
    assert placed.warnings[0].startswith("ana: report.html") and "could not be drawn" in placed.warnings[0]
