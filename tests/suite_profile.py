"""Where the suite's time goes, per test: wall seconds, the machine's CPU-seconds (all processes: the grader's, its
workers', a browser's) and the warm workers the pytest process started. A pytest plugin, off unless named:

    TEST_WORKERS=0 PYTEST_ADDOPTS="-p tests.suite_profile" make test     # a table by file at the end

and with ``SUITE_PROFILE=profile.jsonl`` before it, one JSON line per test too.

CPU-seconds are read from /proc/stat (Linux), so whatever else runs on the machine counts too: profile a calm one,
with the suite in one process (``TEST_WORKERS=0``), as a test's share of the machine means nothing while another
worker's tests run beside it.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

_starts = {"count": 0, "seconds": 0.0}
_rows: list[dict[str, object]] = []


def _busy_seconds() -> float:
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return 0.0
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def pytest_configure(config: pytest.Config) -> None:
    from grader.execute import workers

    start = workers.Worker.start

    def counted(self: workers.Worker, *args: object, **kwargs: object) -> None:
        began = time.perf_counter()
        try:
            start(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            _starts["count"] += 1
            _starts["seconds"] += time.perf_counter() - began

    workers.Worker.start = counted  # type: ignore[method-assign]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    busy, began, count, seconds = _busy_seconds(), time.perf_counter(), _starts["count"], _starts["seconds"]
    yield
    _rows.append({"id": item.nodeid, "wall": time.perf_counter() - began, "cpu": _busy_seconds() - busy,
                  "workers": _starts["count"] - count, "worker_start_s": _starts["seconds"] - seconds})


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if os.environ.get("SUITE_PROFILE"):
        with open(os.environ["SUITE_PROFILE"], "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in _rows)
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    for row in _rows:
        sums = by_file[str(row["id"]).split("::")[0]]
        for index, key in enumerate(("wall", "cpu", "workers", "worker_start_s")):
            sums[index] += float(row[key])  # type: ignore[arg-type]
    cores = os.cpu_count() or 1
    wall, cpu = sum(s[0] for s in by_file.values()), sum(s[1] for s in by_file.values())
    terminalreporter.section("where the time went")
    busy = cpu / max(wall * cores, 1e-9)
    terminalreporter.write_line(f"{wall:.0f} s of tests, {cpu:.0f} CPU-seconds on {cores} cores ({busy:.0%} busy), "
                                f"{_starts['count']} warm worker(s) started")
    terminalreporter.write_line(f"{'file':48} {'wall s':>7} {'CPU s':>7} {'busy':>5} {'workers':>7}")
    for name, (w, c, n, _) in sorted(by_file.items(), key=lambda item: -item[1][1])[:30]:
        terminalreporter.write_line(f"{name:48} {w:7.0f} {c:7.0f} {c / max(w * cores, 1e-9):5.0%} {n:7.0f}")
