"""One verdict everywhere: for every assignment, each public check gives the same status and the same likely cause in
the student kit (the student's kernel, tests/kit_kernel.py), in `grader check` (the grader's sandbox, public checks
only) and in the grader, on every sample submission (tests/submissions/<name>/ and real_style/<name>/) and on every
known mistake put into the model solution (the mutants of tests/mutants.py, which the mutation test grades too). The
kit and `grader check` also say the same lines under "How your code was read".

The one difference by design: a check that gives the student's code a memory budget runs in the grader only (the
kit's report says so). A difference fails the test with the file, the check and each verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from grader.check.load import load_assignment
from grader.discover.finder import KINDS, Submission
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.kit.bundle import KIT_FOLDER, KIT_STUDENT, read_json
from grader.paths import PROJECT_ROOT
from grader.pipeline import ClassRun
from grader.pipeline.self_check import public_only
from grader.pipeline.submission_run import grade_submission
from grader.results import INVALID, PASSED

from .conftest import with_templates, with_variants
from .kit_kernel import CHOICES
from .mutants import write_mutants
from .sample_classes import by_student

pytestmark = pytest.mark.usefixtures("warm_class_runs")  # small class runs share warm workers

ASSIGNMENTS = with_templates()  # every assignment with a kit
SUBMISSIONS = PROJECT_ROOT / "tests" / "submissions"
WITH_VARIANTS = set(with_variants())
KERNELS = 2  # the kit's side runs in this many kernels at once


def samples(name: str) -> list[Path]:
    """The assignment's samples, and its real-style files when it has some (a new assignment has none yet)."""
    folders = [SUBMISSIONS / name, SUBMISSIONS / "real_style" / name]
    files = [p for folder in folders if folder.is_dir() for p in folder.iterdir()]
    return sorted(p for p in files if p.is_file() and p.suffix in (".py", ".ipynb"))


def start_kernel(kit: Path, name: str, files: list[Path], out: Path) -> subprocess.Popen:
    """The kit's verdicts on ``files``, written to ``out`` by a stand-in for the student's kernel."""
    spec = load_assignment(name)
    command = [sys.executable, "-m", "tests.kit_kernel", str(kit / name / KIT_FOLDER), str(out)]
    command += [f"--stub={module}" for module in spec.stubbed_modules]
    command += [f"--withhold={n}" for n in spec.withheld_names]
    return subprocess.Popen([*command, *map(str, files)], cwd=PROJECT_ROOT)


def grader_verdicts(name: str, files: list[Path]) -> dict[str, object]:
    """`grader check`'s grading of each file, as a student other than the kit's and the mutants' (each a file's
    stem): a public check's random inputs are everyone's, so all three draw the same."""
    spec = load_assignment(name)
    public = public_only(spec)
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=spec.limits)
    try:
        return {str(path): grade_submission(
            submission=Submission(f"{KIT_STUDENT}-not", path, KINDS[path.suffix], datetime.now(UTC)), assignment=public,
            root=path.parent, limits=spec.limits, worker=worker) for path in files}
    finally:
        worker.close()


def verdicts_of(result: Any) -> dict[str, tuple[str, str | None, str]]:
    return {c.check_id: (c.status, c.diagnosis.variant if c.diagnosis else None, c.message) for c in result.checks}


def differences(name: str, checked: dict, kernel: dict, grader_only: set[str], graded: dict) -> list[str]:
    """Each public check whose status or likely cause differs between `grader check` (``checked``), the kit
    (``kernel``) and, where given, the grader (``graded``), as one line: the file, the check and the verdicts."""
    found = []
    for path, result in checked.items():
        sample = Path(path).name
        if result.status == INVALID:  # no kernel opens it either: the kit is never reached
            assert "InvalidSubmission" in kernel[path].get("kernel error", ""), (sample, kernel[path])
            continue
        assert "kernel error" not in kernel[path], (sample, kernel[path])
        chosen = [c.line for c in result.choices]
        if chosen != kernel[path][CHOICES]:
            found.append(f"{sample} how the code was read: grader check {chosen}; kit {kernel[path][CHOICES]}")
        full = verdicts_of(graded[path]) if path in graded else {}
        for check_id, (status, diagnosis, message) in verdicts_of(result).items():
            if check_id in grader_only:
                assert check_id not in kernel[path], (sample, check_id)
                continue
            kit = kernel[path][check_id]
            seen = {"grader check": (status, diagnosis, message), "kit": (kit["status"], kit["diagnosis"],
                                                                             kit["message"])}
            if check_id in full:
                seen["grader"] = full[check_id]
            if len({verdict[:2] for verdict in seen.values()}) > 1:
                found.append(f"{sample} {check_id}: " + "; ".join(f"{where} {s} {d} ({m[:100]})"
                                                                  for where, (s, d, m) in seen.items()))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_the_kit_grader_check_and_the_grader_give_every_public_check_one_verdict(
        kits: Path, mutants: Callable[[str], ClassRun], name: str, tmp_path: Path) -> None:
    mutant_files = write_mutants(name, tmp_path / "mutants") if name in WITH_VARIANTS else []
    files = samples(name) + mutant_files
    # Two kernels, each with half the files, while the grader grades: practical10's files each train a model in
    # the kernel too, and one kernel alone went on for minutes after the grader's side had finished.
    halves = [tmp_path / f"kernel{half}.json" for half in range(KERNELS)]
    kernel_runs = [start_kernel(kits, name, files[half::KERNELS], out) for half, out in enumerate(halves)]
    checked = grader_verdicts(name, files)
    graded = {}
    if mutant_files:
        by_name = by_student(mutants(name))
        graded = {str(path): by_name[path.stem] for path in mutant_files}
    assert [run.wait(timeout=900) for run in kernel_runs] == [0] * KERNELS
    kernel = {path: found for out in halves for path, found in json.loads(out.read_text()).items()}
    assert set(kernel) == {str(path) for path in files}
    grader_only = {c["id"] for c in read_json(kits / name / KIT_FOLDER / "kit.json")["checks"] if c["grader_only"]}
    found = differences(name, checked, kernel, grader_only, graded)
    assert not found, "\n".join(found)
    failed = [c for result in checked.values() for c in result.checks if c.status != PASSED]
    # The files exercise the comparison: failures, and diagnoses among them, not only passes.
    assert failed and any(c.diagnosis for c in failed), name
