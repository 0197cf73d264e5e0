"""How long `grader check` takes on each assignment's model solution, as a student runs it: one command, one zygote,
the public checks, the report (docs/performance.md).

    .venv/bin/python -m tests.check_benchmark [--rounds 7] [--assignments attention_scoring practical10]

The assignments are run in turn in every round, so a machine that gets busier or calmer meanwhile affects each
alike; printed: each one's fastest and median wall time, and its median's ratio to the first assignment's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.paths import PROJECT_ROOT


def time_check(name: str, out: Path) -> float:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(PROJECT_ROOT / "solutions" / name /
                           "solution.ipynb"), "--assignment", name, "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"grader check {name} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--assignments", nargs="+", default=["attention_scoring", "practical10"])
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in args.assignments}
    with tempfile.TemporaryDirectory(prefix="check-bench-") as out:
        for _ in range(args.rounds):
            for name in args.assignments:
                times[name].append(time_check(name, Path(out)))
    base = statistics.median(times[args.assignments[0]])
    print(f"grader check on the model solution, {args.rounds} rounds:")
    for name, measured in times.items():
        median = statistics.median(measured)
        print(f"  {name:26} fastest {min(measured):.2f} s, median {median:.2f} s, {median / base:.2f} times "
              f"{args.assignments[0]}'s")


if __name__ == "__main__":
    main()
