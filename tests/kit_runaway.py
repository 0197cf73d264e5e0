"""How long runaway code costs a student: a `while True` (or, with --sleep, a `time.sleep(25)`, blocked in C) put in
attention_scoring's masked_softmax of a correct sample, checked by the student kit (`check()`, in this process, as in
a kernel), by `grader check` (the public checks, in the sandbox) and by the grader (every check), each timed, with
the points each gives (CHANGELOG.md, docs/checking.md).

    .venv/bin/python -m tests.kit_runaway [--sleep] [--only kit|check|grade]

With the grader's own limit (10 s a call). Before one runaway function cost one limit in all (grader/check/runner.py),
each check that called it waited its own: the kit 130 s, `grader check` 62 s, the grader 91 s.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from grader.check.load import load_assignment
from grader.discover.finder import KINDS, Submission
from grader.execute import isolation
from grader.execute.workers import Worker
from grader.kit import run
from grader.kit.build import build_kit
from grader.kit.bundle import KIT_FOLDER
from grader.paths import PROJECT_ROOT
from grader.pipeline.self_check import public_only
from grader.pipeline.submission_run import grade_submission

NAME = "attention_scoring"
SAMPLE = PROJECT_ROOT / "tests" / "submissions" / NAME / "einsum_style.py"
HEAD = "def masked_softmax(X, valid_lens):\n"
RUNAWAY = {"spins": "    while True:\n        pass\n", "sleeps": "    import time\n    time.sleep(25)\n"}


def runaway_source(kind: str) -> str:
    """The sample with ``kind``'s body first in masked_softmax, without its examples (they would call it)."""
    text = SAMPLE.read_text(encoding="utf-8")
    text = text[:text.index('if __name__ == "__main__":')]
    assert HEAD in text
    return text.replace(HEAD, HEAD + RUNAWAY[kind], 1)


def graded(path: Path, *, public: bool) -> tuple[float, float, float]:
    """(seconds, points, out of) of the grader's run on ``path``: its public checks (`grader check`) or all."""
    spec = load_assignment(NAME)
    worker = Worker(sandbox=isolation.detect(), device="cpu", limits=spec.limits)
    worker.start()  # a warm worker, as a class run has: what is timed is the grading
    try:
        started = time.perf_counter()
        result = grade_submission(submission=Submission("runaway", path, KINDS[".py"], datetime.now(UTC)),
                                  assignment=public_only(spec) if public else spec, root=path.parent,
                                  limits=spec.limits, worker=worker)
        return time.perf_counter() - started, result.score, result.max_score
    finally:
        worker.close()


def _loaded(source: str, path: Path) -> dict[str, object]:
    """The names a kernel holds once it ran ``source``."""
    namespace: dict[str, object] = {"__name__": "student"}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleep", action="store_true", help="time.sleep(25) in place of while True")
    parser.add_argument("--only", choices=("kit", "check", "grade"))
    args = parser.parse_args()
    kind = "sleeps" if args.sleep else "spins"
    source = runaway_source(kind)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{kind}.py"
        path.write_text(source, encoding="utf-8")
        if args.only in (None, "kit"):
            kit = build_kit(NAME, out_dir=Path(folder) / "dist") / KIT_FOLDER
            run(namespace=_loaded(SAMPLE.read_text(encoding="utf-8"), SAMPLE), kit=kit)  # the kit read, torch warm
            started = time.perf_counter()
            report = run(namespace=_loaded(source, path), kit=kit)
            seconds = time.perf_counter() - started
            points = sum(c.score for c in report.result.checks)
            print(f"kit check():   {seconds:6.1f} s, {points:g} points of the public checks", flush=True)
        if args.only in (None, "check"):
            seconds, points, _ = graded(path, public=True)
            print(f"grader check:  {seconds:6.1f} s, {points:g} points of the public checks", flush=True)
        if args.only in (None, "grade"):
            seconds, points, out_of = graded(path, public=False)
            print(f"the grader:    {seconds:6.1f} s, {points:g} / {out_of:g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
