"""The "Similar submissions" report (grader/similar): what it flags, what it sets aside, and where it shows."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

import pytest

from grader.discover import Submission, discover
from grader.report.render import render_dashboard
from grader.report.similar_pages import write_similarity
from grader.similar import boilerplate_for, similar_pairs

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

ROOT = Path(__file__).parent
FIXTURES = ROOT / "fixtures" / "similar"
REAL = ROOT / "submissions" / "real_style" / "attention_scoring"
SAMPLES = ROOT / "submissions" / "attention_scoring"
TEMPLATE = ROOT.parent / "assignments" / "attention_scoring" / "attention_scoring.py"
BOILERPLATE = boilerplate_for("attention_scoring")


def _class() -> dict[str, str]:
    sources = {p.stem: p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.py")}
    for name in ("mxnet_port", "capital_w_v", "d2l_module_style", "tensorflow_port"):
        sources[name] = (REAL / f"{name}.py").read_text(encoding="utf-8")
    return sources


def _flagged(pairs) -> set[frozenset[str]]:
    return {frozenset((p.a, p.b)) for p in pairs}


def test_copied_helper_is_flagged_and_marked() -> None:
    sources = _class()
    pairs = similar_pairs(sources, boilerplate=BOILERPLATE, threshold=0.3)
    assert _flagged(pairs) == {frozenset(("helper_author", "helper_copier"))}
    pair = pairs[0]
    assert pair.share_b > 0.5 and pair.share_a > 0.3
    author, copier = sources[pair.a], sources[pair.b]
    helper_a = author.index("def pairwise_scores"), len(author)
    helper_b = copier.index("def compute_scores"), copier.index("class DotProductAttention")
    marked_a = sum(max(0, min(e, helper_a[1]) - max(s, helper_a[0])) for s, e in (r.a for r in pair.regions))
    marked_b = sum(max(0, min(e, helper_b[1]) - max(s, helper_b[0])) for s, e in pair.b_spans)
    # most of the helper's body (its renamed variables included) is marked on both sides
    assert marked_a > 0.6 * (helper_a[1] - helper_a[0])
    assert marked_b > 0.6 * (helper_b[1] - helper_b[0])
    assert "raw.clamp(min=-1e4, max=1e4)" in "".join(copier[s:e] for s, e in pair.b_spans)


def test_textbook_code_is_not_counted() -> None:
    sources = _class()
    pairs = similar_pairs(sources, boilerplate=BOILERPLATE, threshold=0.3)
    assert frozenset(("book_paste_1", "book_paste_2")) not in _flagged(pairs)
    assert not any("capital_w_v" in (p.a, p.b) or "d2l_module_style" in (p.a, p.b) for p in pairs)
    # the same two files are flagged when only the template is set aside: the textbook is what excused them
    template_only = similar_pairs(sources, boilerplate=[TEMPLATE.read_text(encoding="utf-8")], threshold=0.3)
    assert frozenset(("book_paste_1", "book_paste_2")) in _flagged(template_only)


def test_template_is_not_counted() -> None:
    template = TEMPLATE.read_text(encoding="utf-8")
    sources = {"ann": template + "\n\ndef mine(x):\n    return x.sum(dim=0) * 2\n",
               "ben": template + "\n\nclass Other:\n    size = 3\n"}
    assert similar_pairs(sources, boilerplate=BOILERPLATE, threshold=0.0) == []
    assert _flagged(similar_pairs(sources, boilerplate=[], threshold=0.5)) == {frozenset(("ann", "ben"))}


def test_threshold() -> None:
    sources = _class()
    [pair] = similar_pairs(sources, boilerplate=BOILERPLATE, threshold=0.3)
    assert similar_pairs(sources, boilerplate=BOILERPLATE, threshold=pair.share + 0.01) == []
    again = similar_pairs(sources, boilerplate=BOILERPLATE, threshold=pair.share)
    assert [(p.a, p.b, p.share) for p in again] == [(pair.a, pair.b, pair.share)]


def test_sample_submissions_compare_without_error() -> None:
    sources = {}
    for folder in (SAMPLES, REAL):
        subs, _ = discover(folder, layout="auto", assignment="attention_scoring")
        for sub in subs:
            sources[sub.student] = sub.path.read_text(encoding="utf-8", errors="replace")
    pairs = similar_pairs(sources, boilerplate=BOILERPLATE, threshold=0.0)
    assert len(pairs) > 1 and [p.share for p in pairs] == sorted((p.share for p in pairs), reverse=True)
    for p in pairs:
        assert 0.0 <= p.share_b <= 1.0 and 0.0 <= p.share_a <= 1.0 and p.regions
        for r in p.regions:
            assert 0 <= r.a[0] < r.a[1] <= len(sources[p.a]) and 0 <= r.b[0] < r.b[1] <= len(sources[p.b])


def _submissions(folder: Path) -> list[Submission]:
    now = datetime.now(UTC)
    return [Submission(p.stem, p, "python", now) for p in sorted(folder.glob("*.py"))]


@pytest.fixture
def graded_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "submissions"
    folder.mkdir()
    for path in FIXTURES.glob("*.py"):
        shutil.copy(path, folder / path.name)
    shutil.copy(FIXTURES / "helper_copier.py", folder / "odd <name>&.py")  # escaped in ids, names and pages
    return folder


def test_pages_and_dashboard(graded_folder: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "similar").mkdir(parents=True)
    (out / "similar" / "gone--away.html").write_text("stale", encoding="utf-8")
    report = write_similarity(out, "attention_scoring", _submissions(graded_folder), threshold=0.3)
    assert not (out / "similar" / "gone--away.html").exists()
    students = {frozenset((r.pair.a, r.pair.b)) for r in report.rows}
    assert frozenset(("helper_author", "helper_copier")) in students
    assert frozenset(("helper_author", "odd <name>&")) in students
    html = render_dashboard([], title="Attention", max_score=100, similarity=report)
    assert 'id="similar"' in html and "Similar submissions" in html
    assert "odd &lt;name&gt;&amp;" in html and "odd <name>" not in html
    for row in report.rows:
        assert f'href="{row.href}"' in html
        page = (out / unquote(row.href)).read_text(encoding="utf-8")
        assert "<script" not in page and "http" not in page.replace("http-equiv", "")
        assert "<mark>" in page and 'href="../index.html#similar"' in page
        assert "Instructor only" in page
    odd = next(r for r in report.rows if "odd <name>&" in (r.pair.a, r.pair.b))
    assert "odd &lt;name&gt;&amp;" in (out / unquote(odd.href)).read_text("utf-8")
    assert "Similar submissions" not in render_dashboard([], title="Attention", max_score=100)


def test_student_pages_never_mention_it(tmp_path: Path) -> None:
    from grader.pipeline import RunOptions, RunRequest, grade_class

    folder = tmp_path / "submissions"
    folder.mkdir()
    for name in ("helper_author", "helper_copier"):
        shutil.copy(FIXTURES / f"{name}.py", folder / f"{name}.py")
    out = tmp_path / "out"
    run = grade_class(RunRequest(assignment="attention_scoring", submissions_dir=folder, out_dir=out),
                      RunOptions(jobs=2))
    submissions, _ = discover(folder, layout="auto", assignment="attention_scoring")
    report = write_similarity(out, "attention_scoring", submissions, threshold=0.3)
    assert report.rows
    (out / "index.html").write_text(render_dashboard(run.results, title="t", max_score=100, similarity=report))
    for student in ("helper_author", "helper_copier"):
        page = (out / "students" / student / "report.html").read_text(encoding="utf-8").lower()
        assert "similar" not in page and "--helper" not in page
        other = "helper_copier" if student == "helper_author" else "helper_author"
        assert other not in page
