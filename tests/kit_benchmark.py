"""How long the student kit takes to check a correct submission in a running kernel (docs/checking.md).

    .venv/bin/python -m tests.kit_benchmark [--repeat 5] [--out DIR]

For each assignment: its kit is built, a correct sample is run as a kernel would run it (tests/kit_kernel.py), and
``check()`` is timed the first time (reading the kit) and then again, per question and for the whole assignment
(the median of ``--repeat`` runs). A training check (practical10's q4) is timed as it is: it trains a model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from grader.assign import with_solution_source
from grader.check.load import load_assignment
from grader.kit.build import build_kit
from grader.kit.bundle import KIT_FOLDER
from grader.kit.runner import load_kit, run_kit
from grader.paths import PROJECT_ROOT
from tests.kit_kernel import kernel_namespace

# The correct sample each kit is timed on: the model solution as a student writes it, or another correct style.
CORRECT = {"attention_scoring": "einsum_style.py"}


def correct_sample(name: str) -> str:
    return CORRECT.get(name, "reference_style.py")


def measure(name: str, dist: Path, repeat: int) -> list[tuple[str, float]]:
    spec = load_assignment(name)
    started = time.perf_counter()
    kit = load_kit(dist / name / KIT_FOLDER)
    namespace = kernel_namespace(kit, PROJECT_ROOT / "tests" / "submissions" / name / correct_sample(name),
                                 list(spec.stubbed_modules), list(spec.withheld_names))
    first = run_kit(kit, namespace)
    rows = [("first check() (reading the kit)", time.perf_counter() - started)]
    assert all(c.passed or c.status == "not_run" for c in first.checks), name
    for question in [q.id for q in kit.assignment.questions]:
        times = []
        for _ in range(repeat):
            began = time.perf_counter()
            run_kit(kit, namespace, [question])
            times.append(time.perf_counter() - began)
        rows.append((f"check({question!r})", statistics.median(times)))
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run_kit(kit, namespace)
        times.append(time.perf_counter() - began)
    rows.append(("check() (all)", statistics.median(times)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="where to build the kits (default: a temporary folder)")
    args = parser.parse_args()
    dist = args.out or Path(tempfile.mkdtemp(prefix="kit-bench-"))
    print(f"kit check times on {os.cpu_count()} cores, median of {args.repeat} (python {sys.version.split()[0]})")
    for name in with_solution_source():  # every assignment with a kit
        build_kit(name, out_dir=dist)
        read, write = os.pipe()
        pid = os.fork()  # each assignment's submission in a kernel of its own
        if pid == 0:
            os.close(read)
            rows = measure(name, dist, args.repeat)
            with os.fdopen(write, "w") as pipe:
                pipe.write("\n".join(f"{name:<26} {what:<34} {seconds * 1000:8.1f} ms" for what, seconds in rows))
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            print(pipe.read())
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
