"""The suite on several cores (tests/parallel.py): an inner suite run by pytest-xdist with this suite's scheduler, two
workers, files that read a grouped shared run, a folder every worker shares, and measured costs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import suppress
from pathlib import Path

import pytest

from .conftest import ROOT
from .processes import _under

pytest_plugins = ["pytester"]

INNER_CONFTEST = '''
import json, os, time
from pathlib import Path

import pytest

from tests import parallel
from tests.processes import _other_workers

parallel.FILE_SECONDS = Path(os.environ["INNER_SECONDS"])
LOG = Path(os.environ["INNER_LOG"])


def log(**entry):
    entry.update(worker=os.environ["PYTEST_XDIST_WORKER"], pid=os.getpid(), at=time.monotonic())
    with LOG.open("a") as out:
        out.write(json.dumps(entry) + "\\n")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    return parallel.make_scheduler(config, log)


def pytest_collection_modifyitems(config, items):
    parallel.record_groups(config, items)


@pytest.fixture(scope="session")
def mutants():
    log(made="mutants")
    return "graded"


@pytest.fixture(scope="session")
def kits(tmp_path_factory):
    with parallel.shared_folder(tmp_path_factory, "kits") as (folder, made):
        if not made:
            log(made="kits")
            time.sleep(0.5)  # the other worker asks meanwhile
            (folder / "kit.json").write_text("{}")
    return folder


@pytest.fixture(autouse=True)
def started(request):
    log(test=request.node.nodeid, others=sorted(_other_workers()))
'''


def module(*, fixture: str | None = None, tests: int = 2, sleep: float = 0.2) -> str:
    argument = fixture or ""
    body = f"assert {fixture}" if fixture else "pass"
    return "\n".join(textwrap.dedent(f"""
        import time
        def test_{n}({argument}):
            time.sleep({sleep})
            {body}
        """) for n in range(tests))


def test_the_shared_runs_readers_share_a_worker_and_the_costliest_files_go_first(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytester.makeconftest(INNER_CONFTEST)
    # Named so that collection order (test_a_ first) is the opposite of cost order (test_z_ costliest).
    # Apart, the mutants' two readers would go to both workers, one each, right after the two costliest files.
    # The two costliest read the kits: starting first, one in each worker, they ask for them at once.
    pytester.makepyfile(**{"test_a_reads_mutants": module(fixture="mutants"),
                           "test_b_reads_mutants": module(fixture="mutants"),
                           **{f"test_{letter}_plain": module() for letter in "cdef"},
                           "test_y_costly_reads_kits": module(fixture="kits", sleep=0.5),
                           "test_z_costliest_reads_kits": module(fixture="kits", sleep=0.5)})
    seconds = tmp_path / "seconds.json"
    seconds.write_text(json.dumps({"test_z_costliest_reads_kits.py": 200, "test_y_costly_reads_kits.py": 190,
                                    "test_a_reads_mutants.py": 50, "test_b_reads_mutants.py": 50}))
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("INNER_SECONDS", str(seconds))
    monkeypatch.setenv("INNER_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    outcome = pytester.runpytest_subprocess("-n", "2", "--dist", "loadfile", "-p", "no:cacheprovider")
    outcome.assert_outcomes(passed=16)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    tests = [e for e in entries if "test" in e]

    # Each shared run was made once: the mutants in the one worker that ran every file reading them, the kits once
    # for both workers.
    assert [e["made"] for e in entries if "made" in e].count("mutants") == 1
    assert len({e["worker"] for e in tests if "reads_mutants" in e["test"]}) == 1
    assert [e["made"] for e in entries if "made" in e].count("kits") == 1
    assert len({e["worker"] for e in tests if "reads_kits" in e["test"]}) == 2

    # The two costliest files started first, one in each worker, though collected last.
    first = {}
    for e in sorted(tests, key=lambda e: e["at"]):
        first.setdefault(e["worker"], e["test"].split("::")[0])
    assert sorted(first.values()) == ["test_y_costly_reads_kits.py", "test_z_costliest_reads_kits.py"]

    # Each worker sees the other as the session's other worker, and only it.
    pids = {e["worker"]: e["pid"] for e in tests}
    assert len(pids) == 2
    for e in tests:
        assert e["others"] == [pid for worker, pid in pids.items() if worker != e["worker"]]


def test_a_process_is_under_the_workers_it_descends_from(tmp_path: Path) -> None:
    """Where there are no cgroups, a run's leftovers are told from another worker's processes by descent."""
    started = tmp_path / "grandchild"
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, pathlib; p = subprocess.Popen(['sleep', "
                              f"'30']); pathlib.Path({str(started)!r}).write_text(str(p.pid)); p.wait()"])
    grandchild = 0
    try:
        deadline = time.monotonic() + 30
        while (not started.exists() or not started.read_text()) and time.monotonic() < deadline:
            time.sleep(0.01)
        grandchild = int(started.read_text())
        assert _under(grandchild, {child.pid})
        assert _under(grandchild, {9_999_999, child.pid})
        assert not _under(grandchild, {9_999_999})
        assert not _under(child.pid, {grandchild})
    finally:
        child.kill()
        if grandchild:
            with suppress(ProcessLookupError):
                os.kill(grandchild, signal.SIGKILL)
