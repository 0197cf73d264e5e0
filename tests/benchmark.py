"""`make bench`: this grader against a kernel-per-notebook baseline, on a synthetic attention_scoring class.

    .venv/bin/python -m tests.benchmark [--students 200] [--baseline 20] [--large 1000] [--jobs N]

1. Builds a class of ``--students`` notebooks from the sample class (tests/submissions/attention_scoring: correct
   ones in several styles and one per common mistake, each turned into a notebook of several cells, each copy made
   distinct), and grades it with ``grader grade`` as an instructor would (reports included), in a fresh process.
2. Executes ``--baseline`` of the same notebooks the way kernel-per-notebook graders do (nbgrader, Otter): each in a
   fresh Jupyter kernel through nbclient, one at a time (as nbgrader's autograde does) and ``--jobs`` at a time.
   The baseline only runs the notebooks; it checks nothing and writes no report (and the notebooks' imports of d2l
   and matplotlib fail at once, not installed here), so its figure is a lower bound on what such a grader spends.
3. Grades a class of ``--large`` notebooks the same way, to show that the grader's memory does not grow with the
   class size.

It prints seconds per submission for both, their ratio, where the grader's time went (read, execute, check, record,
report) and the grader's peak memory for each class size. Nothing here is a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "submissions" / "attention_scoring"
# The sample class minus its two unreadable files (graded in no time, they would flatter the figures).
LEFT_OUT = {"broken_notebook.ipynb", "broken_syntax.py"}
TOP_LEVEL = re.compile(r"^(def |class |@|if __name__|[A-Z_]+ = )")


def sample_notebooks() -> list[tuple[str, nbformat.NotebookNode]]:
    """Each sample as a notebook: notebooks as they are, a .py cut into a cell per top-level definition."""
    found = []
    for path in sorted(SAMPLES.rglob("*")):
        if path.name in LEFT_OUT or path.suffix not in (".ipynb", ".py"):
            continue
        if path.suffix == ".ipynb":
            notebook = nbformat.read(path, as_version=4)
        else:
            notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in _cells(path)])
        found.append((path.stem if path.parent == SAMPLES else path.parent.name, notebook))
    return found


def _cells(path: Path) -> list[str]:
    cells: list[list[str]] = [[]]
    for line in path.read_text().splitlines():
        if TOP_LEVEL.match(line) and cells[-1] and not cells[-1][-1].startswith("@"):
            cells.append([])
        cells[-1].append(line)
    return ["\n".join(lines).strip() + "\n" for lines in cells if "".join(lines).strip()]


def build_class(folder: Path, students: int) -> list[Path]:
    """``students`` notebooks, cycling through the samples. Every code cell of every copy is the student's own (a
    comment naming them): no two students share a cell, as no two students' solutions read alike, so nothing a
    grader could cache across students (parsed or highlighted code) flatters it. Markdown stays shared, as a
    template's text is in a real class."""
    folder.mkdir(parents=True, exist_ok=True)
    samples = sample_notebooks()
    paths = []
    for index in range(students):
        name, notebook = samples[index % len(samples)]
        copy = deepcopy(notebook)
        for cell in copy.cells:
            if cell.cell_type == "code":
                cell.source = f"# student {index}\n{cell.source}"
        copy.cells.append(nbformat.v4.new_code_cell(f"student_number = {index}  # {name}"))
        path = folder / f"student{index:04d}_{name}.ipynb"
        nbformat.write(copy, path)
        paths.append(path)
    return paths


@dataclass(frozen=True)
class GraderRun:
    students: int
    wall_s: float
    peak_mib: int
    stages: str
    reports: str

    @property
    def per_submission(self) -> float:
        return self.wall_s / self.students


def run_grader(submissions: Path, out: Path, jobs: int) -> GraderRun:
    """``grader grade`` in a process of its own, as `make grade` runs it, timed from outside."""
    command = [sys.executable, "-m", "grader", "grade", "attention_scoring", str(submissions), "--out", str(out),
               "--jobs", str(jobs), "--force"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"grader grade failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    peak = re.search(r"Peak memory of the grader: (\d+) MiB(?:, and (\d+) job processes of at most (\d+) MiB)?",
                     done.stdout)
    stages = re.search(r"^Time by stage.*$", done.stdout, re.MULTILINE)
    reports = re.search(r"^Reports: .*$", done.stdout, re.MULTILINE)
    count = len([p for p in submissions.iterdir() if p.suffix == ".ipynb"])
    # The run's own process, and its job processes (for a large class) at their largest each.
    total = int(peak.group(1)) + int(peak.group(2) or 0) * int(peak.group(3) or 0) if peak else -1
    return GraderRun(count, wall, total, stages.group(0) if stages else "", reports.group(0) if reports else "")


def run_baseline(notebooks: list[Path], jobs: int) -> float:
    """Seconds to execute ``notebooks``, each in a fresh kernel (nbclient), ``jobs`` at a time."""
    from nbclient import NotebookClient

    def execute(path: Path) -> None:
        notebook = nbformat.read(path, as_version=4)
        client = NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(execute, notebooks))
    return time.perf_counter() - started


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            cpu = next(line.split(":", 1)[1].strip() for line in handle if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200, help="size of the class graded and compared")
    parser.add_argument("--baseline", type=int, default=20, help="notebooks the kernel-per-notebook baseline runs")
    parser.add_argument("--large", type=int, default=1000, help="size of the class for the memory figure (0: skip)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions at a time, both sides")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="grader-bench-"))
    try:
        print(f"Benchmark, {date.today().isoformat()}, {machine()}, {args.jobs} at a time", flush=True)
        notebooks = build_class(work / "class", args.students)
        ours = run_grader(work / "class", work / "out", args.jobs)
        print(f"this grader: {ours.students} notebooks in {ours.wall_s:.1f} s, {ours.per_submission:.3f} s per "
              f"submission (reports included), peak memory {ours.peak_mib} MiB", flush=True)
        print(f"  {ours.stages}\n  {ours.reports}", flush=True)
        if args.baseline:
            chosen = notebooks[:args.baseline]
            # As nbgrader's autograde runs them (one after another), and as many at a time as this grader.
            for jobs in dict.fromkeys((1, args.jobs)):
                baseline = run_baseline(chosen, jobs) / len(chosen)
                print(f"kernel per notebook (nbclient, a fresh kernel each, no checks, no reports), {jobs} at a "
                      f"time: {len(chosen)} notebooks, {baseline:.2f} s per submission; this grader is "
                      f"{baseline / ours.per_submission:.1f} times faster per submission", flush=True)
        if args.large:
            build_class(work / "large", args.large)
            large = run_grader(work / "large", work / "large-out", args.jobs)
            print(f"this grader on {large.students} notebooks: {large.wall_s:.1f} s, {large.per_submission:.3f} s "
                  f"per submission, peak memory {large.peak_mib} MiB (against {ours.peak_mib} MiB for "
                  f"{ours.students})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
