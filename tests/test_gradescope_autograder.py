"""The Gradescope autograder zip: what it holds, and its real run_autograder run against a fake /autograder tree.

The zip is built by `grader gradescope`, unpacked into <tmp>/autograder/source as Gradescope unpacks it, and its
run_autograder runs with AUTOGRADER_ROOT pointing at the tree; this checkout's venv stands in for the one setup.sh
installs (GRADER_PYTHON), so the test installs nothing. setup.sh itself needs Gradescope's image (apt-get, the PyTorch
index) and is not run here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from grader.record.output import OutputFolder

from .conftest import ROOT, SAMPLES

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

ASSIGNMENT = "attention_scoring"


def grader_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    built = grader_cli("gradescope", ASSIGNMENT, "--out", str(out))
    assert built.returncode == 0, built.stderr
    assert f"Wrote {out}" in built.stdout
    return out


def fake_autograder(tmp_path: Path, autograder_zip: Path, uploads: dict[str, Path | bytes],
                    metadata: dict[str, Any] | None = None) -> Path:
    """/autograder as Gradescope sets it up: source/ (the zip), run_autograder copied beside it, the submission."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    for name in ("run_autograder", "setup.sh"):  # extractall drops the modes the zip carries
        (root / "source" / name).chmod(0o755)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    for name, content in uploads.items():
        target = root / "submission" / name
        target.write_bytes(content if isinstance(content, bytes) else content.read_bytes())
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    return root


def run_autograder(root: Path, python: str = sys.executable) -> tuple[subprocess.CompletedProcess[str], dict]:
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": python}
    done = subprocess.run([str(root / "run_autograder")], capture_output=True, text=True, timeout=300, env=env,
                          cwd=root)
    return done, json.loads((root / "results" / "results.json").read_text())


METADATA = {
    "id": 123456, "created_at": "2024-03-01T14:22:32.365935-07:00", "submission_method": "upload",
    "assignment": {"id": 25828, "title": "Attention scoring", "due_date": "2024-03-08T23:00:00.000000-07:00",
                   "total_points": "100.0"},
    "users": [{"email": "ada@example.edu", "id": 1234, "name": "Ada Lovelace"}],
    "previous_submissions": [],
}


def test_zip_holds_the_grader_and_this_assignment_only(autograder_zip: Path) -> None:
    with zipfile.ZipFile(autograder_zip) as archive:
        infos = {i.filename: i for i in archive.infolist()}
        config = json.loads(archive.read("autograder.json"))
        requirements = archive.read("requirements.txt").decode()
    names = set(infos)
    # Gradescope's format: the two scripts at the root of the zip, executable
    for script in ("setup.sh", "run_autograder"):
        assert (infos[script].external_attr >> 16) & 0o777 == 0o755
    assert config["assignment"] == ASSIGNMENT
    assert {"grader/pipeline/gradescope_run.py", "grader/execute/child/main.py", "templates/report.html.j2",
            "requirements.txt", "pyproject.toml", f"solutions/{ASSIGNMENT}/checks.py",
            f"solutions/{ASSIGNMENT}/reference_numpy.py", f"solutions/{ASSIGNMENT}/provided.py"} <= names
    assert "torch==" in requirements
    # No other assignment's solutions, no tests or samples, no caches
    assert {n.split("/")[1] for n in names if n.startswith("solutions/")} == {ASSIGNMENT, ".course-secret"}
    assert not [n for n in names if n.startswith(("tests/", "assignments/", "docs/", ".venv/", "out/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # The same sources give the same bytes
    again = autograder_zip.parent / "again.zip"
    assert grader_cli("gradescope", ASSIGNMENT, "--out", str(again)).returncode == 0
    assert again.read_bytes() == autograder_zip.read_bytes()


def test_zip_carries_provided_files_from_outside_the_solutions(tmp_path: Path) -> None:
    """practical10's checks train with the harness students get (assignments/practical10/reversal.py)."""
    out = tmp_path / "p10.zip"
    assert grader_cli("gradescope", "practical10", "--out", str(out)).returncode == 0
    names = set(zipfile.ZipFile(out).namelist())
    assert "assignments/practical10/reversal.py" in names
    assert not [n for n in names if n.startswith("assignments/") and n != "assignments/practical10/reversal.py"]
    assert {n.split("/")[1] for n in names if n.startswith("solutions/")} == {"practical10", ".course-secret"}


@pytest.mark.parametrize(("upload", "sample", "score"), [
    ("My Homework (final).ipynb", "textbook.ipynb", 100),  # any file name the student chose
    ("attention.py", "mistake_softmax_axis.py", None),
])
def test_run_autograder_writes_gradescope_results(tmp_path: Path, autograder_zip: Path, upload: str, sample: str,
                                                  score: int | None) -> None:
    root = fake_autograder(tmp_path, autograder_zip, {upload: SAMPLES / sample}, METADATA)
    done, results = run_autograder(root)
    assert done.returncode == 0, done.stderr
    # The grader ran from the zip's copy, not from this checkout
    assert f"from {root / 'source' / 'grader'}" in done.stdout
    tests = results["tests"]
    public = [t for t in tests if "public" in t["tags"]]
    hidden = [t for t in tests if "hidden" in t["tags"]]
    assert public and hidden and len(public) + len(hidden) == len(tests)
    assert {t["visibility"] for t in public} == {"visible"}
    assert {t["visibility"] for t in hidden} == {"after_published"}
    assert {t["tags"][0] for t in tests} == {"q1", "q2", "q3", "q4"}
    assert results["score"] == sum(t["score"] for t in tests)
    # created_at (14:22:32 at -07:00), not the file's time
    assert datetime.fromisoformat(results["extra_data"]["submitted_at"]) == datetime(2024, 3, 1, 21, 22, 32,
                                                                                       tzinfo=UTC)
    assert results["extra_data"]["student"] == "ada@example.edu"
    assert results["extra_data"]["source"] == upload
    # What students see at once: public checks counted, no hidden check's title or message
    assert f"Public checks: {sum(t['status'] == 'passed' for t in public)} of {len(public)} passed." \
        in results["output"]
    assert not [t["name"] for t in hidden if t["name"].split(": ", 1)[1] in results["output"]]
    assert results["stdout_visibility"] == "hidden"
    if score is not None:
        assert results["score"] == score
    else:  # softmax over the wrong axis: a public q1 check fails, with its message, and points go in q1 only
        failed = [t for t in tests if t["status"] == "failed"]
        assert failed and {t["tags"][0] for t in failed} == {"q1"}
        assert any(t["visibility"] == "visible" and "differs" in t["output"] for t in failed)
        # with its likely cause, hidden checks' too as on the student's page: Gradescope is all the student sees
        cause = "\nLikely cause: softmax over the queries axis. Your masked_softmax normalises over dim=1, the queries"
        assert {t["visibility"] for t in failed if cause in t["output"]} == {"visible", "after_published"}
        assert all(cause in t["output"] for t in failed)
        assert 0 < results["score"] < 100


def test_a_broken_submission_still_gets_results(tmp_path: Path, autograder_zip: Path) -> None:
    root = fake_autograder(tmp_path / "pdf", autograder_zip, {"report.pdf": b"%PDF-1.4"})  # no metadata either
    done, results = run_autograder(root)
    assert done.returncode == 0, done.stderr
    assert results["score"] == 0 and results["extra_data"]["status"] == "invalid"
    assert "holds no notebook (.ipynb) or Python file (.py) (found: report.pdf)" in results["output"]
    assert {t["status"] for t in results["tests"]} == {"failed"}

    root = fake_autograder(tmp_path / "broken", autograder_zip, {"hw.ipynb": SAMPLES / "broken_notebook.ipynb"},
                           METADATA)
    done, results = run_autograder(root)
    assert results["score"] == 0 and "is not a valid notebook" in results["output"]


def test_run_autograder_writes_results_when_the_grader_cannot_start(tmp_path: Path, autograder_zip: Path) -> None:
    root = fake_autograder(tmp_path, autograder_zip, {"hw.py": SAMPLES / "einsum_style.py"}, METADATA)
    done, results = run_autograder(root, python=str(tmp_path / "no-such-python"))
    assert done.returncode == 0
    assert results["score"] == 0 and results["tests"] == []
    assert "failed before it could grade your submission (exit status 127)" in results["output"]


def test_the_grader_failing_still_writes_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The grader's own failures, which no real submission provokes on purpose: stood in for by a raising stage."""
    from grader.pipeline import gradescope_run

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(SAMPLES / "einsum_style.py", root / "submission" / "hw.py")
    unknown = gradescope_run.grade_gradescope_submission(root=root, assignment="no_such_assignment")
    assert unknown["score"] == 0 and "its assignment 'no_such_assignment' does not load" in unknown["output"]

    def broken(**_: object) -> None:
        raise RuntimeError("a bug in the grader")

    monkeypatch.setattr(gradescope_run, "grade_submission", broken)
    # again=False: the failure as recorded when the run's second attempt (tests/test_regrade.py) fails too
    written = gradescope_run.grade_gradescope_submission(root=root, assignment=ASSIGNMENT, again=False)
    assert json.loads((root / "results" / "results.json").read_text()) == written
    assert written["score"] == 0 and written["extra_data"]["status"] == "internal_error"
    assert "The grader itself failed on your submission; this is not your fault." in written["output"]
    assert "Traceback" not in written["output"]
    assert {t["extra_data"]["outcome"] for t in written["tests"]} == {"not_run"}


@pytest.mark.parametrize("submitter", [
    {"name": "Ada Lovelace", "sid": "1815", "email": "ada@example.edu"},
    # No SID, no e-mail: where the export's rule (name) and the autograder's (Gradescope's user id) used to part.
    {"name": "Ada Lovelace"},
], ids=["sid", "name-only"])
def test_a_student_draws_the_same_cases_from_an_export_and_from_the_autograder(
        tmp_path: Path, autograder_zip: Path, submitter: dict[str, str]) -> None:
    from grader.pipeline import RunRequest, grade_class

    upload = SAMPLES / "mistake_softmax_axis.py"
    # The instructor's "Download Submissions" export, graded as a class (grader.discover, the gradescope layout)
    export = tmp_path / "export"
    (export / "submission_101").mkdir(parents=True)
    shutil.copy(upload, export / "submission_101" / "attention.py")
    lines = ["submission_101:", "  :submitters:"]
    for number, (key, value) in enumerate(submitter.items()):
        lines.append(f"  {'- ' if number == 0 else '  '}:{key}: '{value}'")
    lines.append("  :created_at: 2024-03-01 14:22:32.365935000 -07:00")
    (export / "submission_metadata.yml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (from_export,) = grade_class(RunRequest(assignment=ASSIGNMENT, submissions_dir=export,
                                            out_dir=tmp_path / "out")).results
    exported = json.loads(OutputFolder(tmp_path / "out").student(from_export.student).results_json.read_text())
    # The same upload in Gradescope's autograder, whose metadata also carries Gradescope's own user id
    root = fake_autograder(tmp_path, autograder_zip, {"attention.py": upload},
                           {**METADATA, "users": [{**submitter, "id": 1234}]})
    done, autograded = run_autograder(root)
    assert done.returncode == 0, done.stderr

    expected = submitter.get("sid", "Ada_Lovelace")
    assert from_export.student == autograded["extra_data"]["student"] == expected

    def cases(data: dict[str, Any]) -> dict[str, tuple[int, str, float]]:
        return {t["extra_data"]["check_id"]: (t["extra_data"]["seed"], t["status"], t["score"]) for t in data["tests"]}

    assert cases(autograded) == cases(exported)
    assert len({seed for seed, _, _ in cases(exported).values()}) > 1  # seeds drawn per check, not one constant
    assert {status for _, status, _ in cases(exported).values()} == {"passed", "failed"}
