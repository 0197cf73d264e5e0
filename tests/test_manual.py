"""manual.csv on its own: what a rewrite keeps, what it flags, and what spreadsheets save that it must still read."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from grader.adjust.manual import ManualSheet, answer_hash
from grader.check.spec import WrittenQuestion
from grader.csv_cells import BOM
from grader.results import SubmissionResult, WrittenAnswer

WRITTEN = (WrittenQuestion("why", "Why?", points=3), WrittenQuestion("notes", "Anything else?"))


def result(student: str, why: str = "", notes: str = "") -> SubmissionResult:
    answers = (WrittenAnswer("why", "Why?", why), WrittenAnswer("notes", "Anything else?", notes))
    return SubmissionResult(student, "toy", f"{student}.py", "python", "", "graded", "", (), (), answers, (),
                            "2026-03-01T10:00:00+00:00", "2026-03-01T10:00:00+00:00", 1.0)


def grade(out: Path, results: list[SubmissionResult], missing: tuple[str, ...] = ()) -> tuple[
        list[SubmissionResult], list[str]]:
    """What a run does: read manual.csv, mark every result, write it again."""
    sheet = ManualSheet.load(out, WRITTEN)
    marked = [dataclasses.replace(r, manual=tuple(sheet.mark(r.student, w, _answer(r, w.id)) for w in WRITTEN))
              for r in results]
    return marked, sheet.rewrite(marked, missing)


def _answer(result: SubmissionResult, question: str) -> str:
    return next((a.text for a in result.answers if a.id == question), "")


def rows(out: Path) -> list[dict[str, str]]:
    with open(out / "manual.csv", encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def fill(out: Path, changes: dict[tuple[str, str], dict[str, str]], extra: list[dict[str, str]] = ()) -> None:
    table = rows(out)
    for row in table:
        row.update(changes.get((row["student"], row["question"]), {}))
    with open(out / "manual.csv", "w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*table[0], "ta"], restval="")
        writer.writeheader()
        writer.writerows([*table, *extra])


def marks(result: SubmissionResult) -> dict[str, tuple]:
    return {m.question: (m.points, m.comment, m.state) for m in result.manual}


def test_a_first_run_writes_a_row_per_answer_with_empty_points(tmp_path: Path) -> None:
    graded, problems = grade(tmp_path, [result("ben", "Because\n  it doubles."), result("ana", "x" * 400)])
    assert problems == []
    table = rows(tmp_path)
    assert [(r["student"], r["question"], r["points"], r["max_points"], r["status"]) for r in table] == [
        ("ana", "why", "", "3", "to mark"), ("ana", "notes", "", "0", "comments only (0 points)"),
        ("ben", "why", "", "3", "to mark"), ("ben", "notes", "", "0", "comments only (0 points)")]
    assert table[2]["answer"] == "Because it doubles."
    assert table[2]["answer_sha256"] == answer_hash("Because it doubles.")
    assert len(table[0]["answer"]) == 300 and table[0]["answer"].endswith("…")
    assert (tmp_path / "manual.csv").read_bytes().startswith(BOM.encode())  # Excel then reads it as UTF-8
    assert all(m.state == "unmarked" and m.points is None for r in graded for m in r.manual)


def test_marks_count_and_a_rerun_keeps_every_cell_the_instructor_typed(tmp_path: Path) -> None:
    grade(tmp_path, [result("ana", "Because."), result("ben", "It doubles.")])
    fill(tmp_path, {("ana", "why"): {"points": "2,5", "comment": "Say why — précis", "ta": "JB"},
                    ("ben", "notes"): {"comment": "Thanks"}})
    graded, problems = grade(tmp_path, [result("ana", "Because."), result("ben", "It doubles."), result("cleo", "?")])
    assert problems == []
    assert marks(graded[0])["why"] == (2.5, "Say why — précis", "marked") and graded[0].manual_score == 2.5
    assert marks(graded[1])["notes"] == (None, "Thanks", "unmarked")
    table = {(r["student"], r["question"]): r for r in rows(tmp_path)}
    assert table[("ana", "why")]["points"] == "2,5" and table[("ana", "why")]["ta"] == "JB"  # as typed, kept
    assert table[("ana", "why")]["status"] == "marked"
    assert table[("ben", "notes")]["comment"] == "Thanks"
    assert table[("cleo", "why")]["points"] == "" and table[("cleo", "why")]["status"] == "to mark"  # a new student
    grade(tmp_path, [result("ana", "Because."), result("ben", "It doubles."), result("cleo", "?")])
    assert rows(tmp_path) == list(table.values())  # a rerun with nothing new changes nothing


def test_a_changed_answer_sets_its_marks_aside_until_the_instructor_confirms(tmp_path: Path) -> None:
    grade(tmp_path, [result("ana", "First try.")])
    fill(tmp_path, {("ana", "why"): {"points": "3", "comment": "Good"}})
    graded, problems = grade(tmp_path, [result("ana", "A different answer.")])
    assert marks(graded[0])["why"] == (None, "Good", "changed") and graded[0].manual_score == 0
    assert graded[0].manual[0].for_student().comment == ""  # the student sees "not marked yet"
    assert problems == ["manual.csv row 2 (ana, why): the answer changed since it was marked (3 points in "
                        "manual.csv): not counted until you read the new answer and empty the row's answer_sha256 "
                        "cell (or change the marks)"]
    row = rows(tmp_path)[0]
    assert row["answer"] == "A different answer." and row["answer_sha256"] == answer_hash("First try.")
    assert row["points"] == "3" and row["status"] == "answer changed since marked: not counted"
    fill(tmp_path, {("ana", "why"): {"answer_sha256": ""}})  # read it: the marks stand for the new answer
    graded, problems = grade(tmp_path, [result("ana", "A different answer.")])
    assert problems == [] and marks(graded[0])["why"] == (3.0, "Good", "marked")
    assert rows(tmp_path)[0]["answer_sha256"] == answer_hash("A different answer.")
    # Re-saving the notebook (line endings, spaces) is not a change.
    graded, _ = grade(tmp_path, [result("ana", "A  different\r\nanswer. ")])
    assert marks(graded[0])["why"][2] == "marked"


def test_malformed_rows_are_reported_kept_and_not_counted(tmp_path: Path) -> None:
    grade(tmp_path, [result("ana", "a"), result("ben", "b"), result("cleo", "c")])
    fill(tmp_path, {("ana", "why"): {"points": "lots"}, ("ben", "why"): {"points": "4"},
                    ("cleo", "why"): {"points": "-1"}, ("cleo", "notes"): {"points": "1"}},
         extra=[{"student": "zoe", "question": "why", "points": "2"},
                {"student": "ana", "question": "ex9", "points": "1"},
                {"student": "ana", "question": "why", "points": "3", "comment": "again"},
                {"student": "gone", "question": "why", "points": "1"},
                {"student": "old", "question": "why", "points": "", "comment": ""}])
    graded, problems = grade(tmp_path, [result("ana", "a"), result("ben", "b"), result("cleo", "c")],
                             missing=("gone",))
    assert all(r.manual_score == 0 for r in graded)
    assert {m.state for r in graded for m in r.manual if m.question == "why"} == {"rejected"}
    assert problems == [
        "manual.csv row 2 (ana, why): points 'lots' is not a number: not counted",
        "manual.csv row 4 (ben, why): points 4 is above why's maximum, 3: not counted",
        "manual.csv row 6 (cleo, why): points -1 is below 0: not counted",
        "manual.csv row 7 (cleo, notes): notes is worth 0 points (comments only): set points= in its WrittenQuestion "
        "in checks.py to mark it: not counted",
        "manual.csv row 8 (zoe, why): no student 'zoe' in this class: not counted",
        "manual.csv row 9 (ana, ex9): no written question 'ex9' (they are notes, why): not counted",
        "manual.csv row 10 (ana, why): a second row for this answer: not counted (the first one is)"]
    table = rows(tmp_path)
    assert [(r["student"], r["points"]) for r in table[6:]] == [("zoe", "2"), ("ana", "1"), ("ana", "3"), ("gone", "1")]
    assert table[-1]["status"] == "no submission found now: kept, not counted"  # the student's file has gone
    assert table[0]["points"] == "lots" and table[0]["status"].startswith("error: points 'lots'")


def test_what_spreadsheets_save_is_read(tmp_path: Path) -> None:
    # Excel's plain "CSV" in a locale with decimal commas: Windows-1252 and semicolons.
    text = "student;question;points;comment\r\nana;why;2,5;très bien\r\n"
    (tmp_path / "manual.csv").write_bytes(text.encode("cp1252"))
    graded, problems = grade(tmp_path, [result("ana", "a")])
    assert marks(graded[0])["why"] == (2.5, "très bien", "marked")
    assert len(problems) == 1 and "not UTF-8" in problems[0]
    assert rows(tmp_path)[0]["comment"] == "très bien"  # written back as UTF-8


def test_a_file_that_is_not_a_table_is_left_alone_and_counts_nothing(tmp_path: Path) -> None:
    path = tmp_path / "manual.csv"
    path.write_bytes(b"PK\x03\x04\x00\x00 a workbook saved over the CSV")
    graded, problems = grade(tmp_path, [result("ana", "a")])
    assert graded[0].manual_score == 0
    assert path.read_bytes().startswith(b"PK\x03\x04")
    assert len(problems) == 1 and "could not be read (it is not text" in problems[0] and "left as it is" in problems[0]
    path.write_text("name,score\nana,3\n")
    _, problems = grade(tmp_path, [result("ana", "a")])
    assert "must name the columns student, question, points (missing: student, question, points)" in problems[0]
    assert path.read_text() == "name,score\nana,3\n"
