"""The student kit says what `grader check` says: for every sample submission of every assignment, each public check
passes or not, with the same diagnosis, in the student's kernel (tests/kit_kernel.py) and in the grader's sandbox.

Two differences are by design and asserted as such. A question the grader grades with the reference of another
question's answer (q2 with the reference masked_softmax) runs, in the kit, with the student's own: the kit must not
hold an answer. Its verdict is then compared with what the grader's own comparison with the student's code found
(the "With your own ..." note it adds when the owner lost points), and the diagnosis only where the two coincide.
And a check that gives the student's code a memory budget runs in the grader only (the kit's report says so).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from grader.check.load import load_assignment
from grader.discover.finder import KINDS, Submission
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.kit.bundle import KIT_FOLDER, KIT_STUDENT, read_json
from grader.paths import PROJECT_ROOT
from grader.pipeline.self_check import public_only
from grader.pipeline.submission_run import grade_submission
from grader.results import INVALID, PASSED

from .conftest import with_templates

ASSIGNMENTS = with_templates()  # every assignment with a kit
SUBMISSIONS = PROJECT_ROOT / "tests" / "submissions"
OWN_NOTE = "With your own "


def samples(name: str) -> list[Path]:
    files = [*(SUBMISSIONS / name).iterdir(), *(SUBMISSIONS / "real_style" / name).iterdir()]
    return sorted(p for p in files if p.is_file() and p.suffix in (".py", ".ipynb"))



def start_kernel(kit: Path, name: str, files: list[Path], out: Path) -> subprocess.Popen:
    """The kit's verdicts on ``files``, written to ``out`` by a stand-in for the student's kernel."""
    spec = load_assignment(name)
    command = [sys.executable, "-m", "tests.kit_kernel", str(kit / name / KIT_FOLDER), str(out)]
    command += [f"--stub={module}" for module in spec.stubbed_modules]
    command += [f"--withhold={n}" for n in spec.withheld_names]
    return subprocess.Popen([*command, *map(str, files)], cwd=PROJECT_ROOT)


def grader_verdicts(name: str, files: list[Path]) -> dict[str, object]:
    """`grader check`'s grading of each file, as the kit's student (the same seeds as the kit's)."""
    spec = load_assignment(name)
    public = public_only(spec)
    worker = Worker(sandbox=isolation.detect("auto"), device="cpu", limits=spec.limits)
    try:
        return {str(path): grade_submission(
            submission=Submission(KIT_STUDENT, path, KINDS[path.suffix], datetime.now(UTC)), assignment=public,
            root=path.parent, limits=spec.limits, worker=worker) for path in files}
    finally:
        worker.close()


def differences(name: str, graded: dict, kernel: dict, grader_only: set[str]) -> list[str]:
    spec = load_assignment(name)
    by_reference = {q.id for q in spec.questions if q.graded_with_reference}
    found = []
    for path, result in graded.items():
        sample = Path(path).name
        if result.status == INVALID:  # no kernel opens it either: the kit is never reached
            assert "InvalidSubmission" in kernel[path].get("kernel error", ""), (sample, kernel[path])
            continue
        assert "kernel error" not in kernel[path], (sample, kernel[path])
        for check in result.checks:
            if check.check_id in grader_only:
                assert check.check_id not in kernel[path], (sample, check.check_id)
                continue
            kit = kernel[path][check.check_id]
            own = check.question in by_reference and any(n.startswith(OWN_NOTE) for n in check.notes)
            passed = check.status == PASSED and not own
            if passed != (kit["status"] == PASSED):
                found.append(f"{sample} {check.check_id}: grader {'passed' if passed else check.status} "
                             f"({check.message[:80]}), kit {kit['status']} ({kit['message'][:80]})")
                continue
            if own:
                continue
            grader_diagnosis = check.diagnosis.variant if check.diagnosis else None
            if grader_diagnosis != kit["diagnosis"] or (not passed and check.status != kit["status"]):
                found.append(f"{sample} {check.check_id}: grader {check.status} {grader_diagnosis}, kit "
                             f"{kit['status']} {kit['diagnosis']}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_kit_gives_every_sample_the_verdicts_of_grader_check(kits: Path, name: str, tmp_path: Path) -> None:
    files = samples(name)
    kernel_run = start_kernel(kits, name, files, tmp_path / "kernel.json")  # meanwhile, the grader grades
    graded = grader_verdicts(name, files)
    assert kernel_run.wait(timeout=900) == 0
    kernel = json.loads((tmp_path / "kernel.json").read_text())
    grader_only = {c["id"] for c in read_json(kits / name / KIT_FOLDER / "kit.json")["checks"] if c["grader_only"]}
    assert not differences(name, graded, kernel, grader_only)
    checked = [c for result in graded.values() for c in result.checks]
    failed = [c for c in checked if c.status != PASSED]
    # The samples exercise the comparison: failures, and diagnoses among them, not only passes.
    assert failed and any(c.diagnosis for c in failed), name
