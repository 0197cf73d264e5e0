"""Stress the grader's parsing the way a class run does: ``python -m tests.parse_race [--unguarded] [--seconds S]``.

Threads read the sample submissions (``grader.discover.program``), tell which assignment a file is for, format
students' tracebacks (Python 3.11's ``traceback`` parses each line to place its carets) and read ``.npy`` headers
(``ast.literal_eval``), each from another stack depth, while other threads allocate garbage whose finalisers run
Python code: the collector can then hand the interpreter to another thread in the middle of a parse. Prints one
JSON line (parses done, errors seen, the first error) and stops at the first error or after ``--seconds``.
``--unguarded`` first takes the grader's lock off ``ast.parse`` (grader/thread_safe_ast.py), to show the race.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from grader import thread_safe_ast
from grader.discover.assignment_of import defined_names
from grader.discover.program import read_program
from grader.errors import InvalidSubmission

SAMPLES = Path(__file__).parent / "submissions"


class _Cycle:
    """Garbage only the collector frees, with a finaliser that runs bytecode (a switch point)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        total = 0
        for i in range(50):  # bytecode, not one C call: the interpreter may switch threads between instructions
            total += i


def _at_depth(depth: int, work: Callable[[], object]) -> object:
    return work() if depth == 0 else _at_depth(depth - 1, work)


def _student_error() -> BaseException:
    try:
        scores = {"q": np.ones(3)}
        return scores["q"] @ np.ones(4) + scores["k"]  # type: ignore[return-value]
    except Exception as exc:  # the carets under `scores["q"] @ np.ones(4)` come from ast.parse
        return exc


def _npy_header() -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": "<f8", "fortran_order": False, "shape": (3, 4)})
    return buffer.getvalue()


def _readable(data: bytes, kind: str, name: str) -> bool:
    try:
        read_program(data, kind=kind, name=name, written_ids=())
    except InvalidSubmission:  # the broken files of the sample classes: their message is built without parsing
        return False
    return True


def _read_header(data: bytes) -> object:
    stream = io.BytesIO(data)
    np.lib.format.read_magic(stream)
    return np.lib.format.read_array_header_1_0(stream)


def stress(seconds: float) -> dict[str, object]:
    files = sorted(SAMPLES.glob("*/*.py"))  # notebooks are mostly JSON: Python files are where the parsing is
    programs = [(p.read_bytes(), "notebook" if p.suffix == ".ipynb" else "python", p.name) for p in files]
    programs = [program for program in programs if _readable(*program)]
    sources = [p.read_text() for p in files if p.suffix == ".py"]
    error = _student_error()
    header = _npy_header()
    jobs: list[Callable[[], object]] = [
        lambda: [read_program(data, kind=kind, name=name, written_ids=()) for data, kind, name in programs],
        lambda: defined_names(sources),
        lambda: traceback.format_exception(error),
        lambda: _read_header(header),
    ]
    stop = threading.Event()
    done = [0]
    errors: list[str] = []

    def parse(job: Callable[[], object], depth: int) -> None:
        while not stop.is_set():
            try:
                _at_depth(depth, job)
                done[0] += 1
            except SystemError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                stop.set()

    def allocate() -> None:
        while not stop.is_set():
            for _ in range(1000):
                _Cycle()

    # The class run's mix: mostly submissions read, some tracebacks and headers; each thread at its own depth.
    mix = [jobs[0]] * 4 + [jobs[1]] * 2 + [jobs[2]] * 2 + [jobs[3]]
    threads = [threading.Thread(target=parse, args=(job, 5 * i)) for i, job in enumerate(mix)]
    threads += [threading.Thread(target=allocate) for _ in range(2)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # a switch far more often than every 5 ms, as on a busy machine
    started = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        stop.wait(seconds)
        stop.set()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch)
    return {"guarded": thread_safe_ast.installed(), "seconds": round(time.perf_counter() - started, 2),
            "rounds": done[0], "errors": len(errors), "first_error": errors[0] if errors else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--unguarded", action="store_true", help="show the race: CPython's own ast.parse")
    args = parser.parse_args()
    if args.unguarded:
        thread_safe_ast.uninstall()
    print(json.dumps(stress(args.seconds)))


if __name__ == "__main__":
    main()
