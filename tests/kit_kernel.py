"""A student's kernel, for the kit's parity test: each submission's code run in a fresh namespace, then the kit.

    python -m tests.kit_kernel KIT_FOLDER OUT.json [--stub MODULE ...] [--withhold NAME ...] SUBMISSION ...

Each submission is read as the grader reads it (one unit per cell or top-level statement) and run in a process
forked for it, as a notebook's cells run in a kernel: a unit that raises does not stop the next. Around it, what a
student's kernel has that this machine lacks is the grader's stand-in: d2l (with the assignment's answers withheld,
as a student's copy of the textbook's package does not define them under the student's names), matplotlib, IPython's
shell, and the modules the assignment stubs (a training harness that would train while the notebook loads). The
kit then checks the namespace and each check's verdict is written to OUT.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import linecache
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch  # noqa: F401  (imported once, before the forks)

from grader.discover.finder import KINDS, Submission
from grader.discover.program import read_submission
from grader.execute.child import stubs
from grader.kit.runner import Kit, load_kit, run_kit

CHOICES = "choices"  # beside the checks' ids: the lines of "How your code was read"


def kernel_namespace(kit: Kit, path: Path, stubbed: list[str], withheld: list[str]) -> dict[str, Any]:
    """The names a kernel holds once it has run the submission's cells (in this process: fork first)."""
    submission = Submission(student=kit.student, path=path, kind=KINDS[path.suffix.lower()],
                            submitted_at=datetime.now(UTC))
    program = read_submission(submission, written_ids=[])
    grader_modules = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "grader"}
    namespace: dict[str, Any] = {"__name__": program.module_name, "__builtins__": __builtins__}
    stubs.STUBBED_TOP_LEVEL = tuple(t for t in stubs.STUBBED_TOP_LEVEL if t != "grader")
    stubs.install(namespace, withheld, {name: "" for name in stubbed})
    sys.modules.update(grader_modules)
    os.chdir(path.parent)
    for unit in program.units:
        text = "\n" * (unit.first_line - 1) + unit.source
        # As IPython does: each cell's text in the line cache, for tracebacks (and the kit's reading of the code a
        # failing call ran through). A .py's statements are its one file's lines.
        before = linecache.cache.get(unit.filename, (0, None, [], ""))[2][:unit.first_line - 1]
        before += ["\n"] * (unit.first_line - 1 - len(before))
        lines = [*before, *io.StringIO(unit.source, newline="").readlines()]
        linecache.cache[unit.filename] = (len(text), None, lines, unit.filename)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                contextlib.suppress(BaseException):  # a cell that raises does not stop the next
            exec(compile(text, unit.filename, "exec"), namespace)
    return namespace


def verdicts(kit_folder: Path, path: Path, stubbed: list[str], withheld: list[str]) -> dict[str, Any]:
    kit = load_kit(kit_folder)
    result = run_kit(kit, kernel_namespace(kit, path, stubbed, withheld))
    found: dict[str, Any] = {c.check_id: {"status": c.status, "diagnosis": c.diagnosis.variant if c.diagnosis else None,
                                          "message": c.message} for c in result.checks}
    found[CHOICES] = [c.line for c in result.choices]
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kit", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("submissions", nargs="+", type=Path)
    parser.add_argument("--stub", action="append", default=[])
    parser.add_argument("--withhold", action="append", default=[])
    args = parser.parse_args()
    found: dict[str, Any] = {}
    for path in args.submissions:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                data = json.dumps(verdicts(args.kit.resolve(), path.resolve(), args.stub, args.withhold))
            except BaseException as exc:
                data = json.dumps({"kernel error": f"{type(exc).__name__}: {exc}"})
            with os.fdopen(write, "w") as pipe:
                pipe.write(data)
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            found[str(path)] = json.loads(pipe.read() or '{"kernel error": "no answer"}')
        os.waitpid(pid, 0)
    args.out.write_text(json.dumps(found, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
