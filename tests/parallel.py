"""How the suite runs on several cores (pytest-xdist; `make test` passes ``-n logical --maxprocesses 4 --dist
loadfile``).

A test file runs whole in one worker process, so that its module's fixtures (warm workers, a browser) start once.
On top of pytest-xdist's ``loadfile``, this suite's scheduler (``FileScheduling``):

- sends the files that read one of the session's costly shared runs (``GROUPED_FIXTURES``: the mutants, the bundled
  classes) to the same worker, so that each run is computed once, in the process whose tests read it; which files
  those are, each worker finds while collecting (a file's tests name the fixture) and writes to the session's folder,
  where the scheduler reads it once every worker has collected;
- hands out the costliest files first (``FILE_SECONDS``: seconds per file, measured in one process), so that no
  worker is left with a long file when the others are done. To measure them again:

      TEST_WORKERS=0 PYTEST_ADDOPTS=--durations=0 make test | tee durations.log
      .venv/bin/python -m tests.parallel durations.log

What the workers share without grouping (the kits) is made once under a lock: ``shared_folder``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from filelock import FileLock

FILE_SECONDS = Path(__file__).with_name("file_seconds.json")
# A fixture whose value is costly and cannot be shared between processes -> its group: files whose tests use it run
# in one worker. The bundled classes record their comparisons' margins in the process that grades them. A file that
# read from two groups would join the last: the other's run would then be computed twice, slower but not wrong.
GROUPED_FIXTURES = {"mutants": "mutants", "bundled": "bundled", "sample_run": "bundled"}
GROUPS_FILE = "file-groups-{worker}.json"
UNMEASURED_SECONDS = 1.0  # a file not in FILE_SECONDS: a new one, or one whose every test took under 5 ms


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every process of this test session sees: the workers' base folders lie in the controller's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[Path, bool]]:
    """``(folder, made)``: a folder of this session that every worker process shares, and whether an earlier holder
    made it already. The caller fills it when ``made`` is false; it holds a lock meanwhile, and the folder counts as
    made only when the caller's block ends without an error."""
    root = session_folder(tmp_path_factory)
    folder, done = root / name, root / f"{name}.made"
    with FileLock(root / f"{name}.lock"):
        folder.mkdir(exist_ok=True)
        yield folder, done.exists()
        done.touch()


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def record_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker: which files go together (``GROUPED_FIXTURES``), written where the scheduler reads them."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    groups = {file_of(item.nodeid): GROUPED_FIXTURES[name] for item in items
              for name in getattr(item, "fixturenames", ()) if name in GROUPED_FIXTURES}
    folder = session_folder(config._tmp_path_factory)  # type: ignore[attr-defined]
    written = folder / f".{GROUPS_FILE.format(worker=worker)}"
    written.write_text(json.dumps(groups), encoding="utf-8")
    written.replace(folder / GROUPS_FILE.format(worker=worker))


def make_scheduler(config: pytest.Config, log: object) -> object:
    from xdist.scheduler import LoadFileScheduling

    class FileScheduling(LoadFileScheduling):
        """loadfile, with grouped files together and the costliest scope handed out first."""

        def __init__(self, config: pytest.Config, log: object = None) -> None:
            super().__init__(config, log)  # type: ignore[arg-type]
            self._groups: dict[str, str] | None = None
            self._seconds = json.loads(FILE_SECONDS.read_text(encoding="utf-8")) if FILE_SECONDS.is_file() else {}

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:  # asked first when every worker has collected: their files are written
                folder = self.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
                self._groups = {}
                for written in folder.glob(GROUPS_FILE.format(worker="*")):
                    self._groups.update(json.loads(written.read_text(encoding="utf-8")))
            path = file_of(nodeid)
            return f"group:{self._groups[path]}" if path in self._groups else path

        def _cost(self, scope: str) -> float:
            files = {file_of(nodeid) for nodeid in self.workqueue[scope]}
            return sum(self._seconds.get(Path(path).name, UNMEASURED_SECONDS) for path in files)

        def _assign_work_unit(self, node: object) -> None:
            self.workqueue.move_to_end(max(self.workqueue, key=self._cost), last=False)
            super()._assign_work_unit(node)  # type: ignore[arg-type]

    return FileScheduling(config, log)


def file_seconds(durations: str) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown summed) from pytest's ``--durations=0`` report."""
    seconds: Counter[str] = Counter()
    for line in durations.splitlines():
        found = re.match(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+)", line)
        if found:
            seconds[Path(file_of(found[2])).name] += float(found[1])
    return {name: round(value, 1) for name, value in seconds.most_common()}


if __name__ == "__main__":
    measured = file_seconds(Path(sys.argv[1]).read_text(encoding="utf-8"))
    FILE_SECONDS.write_text(json.dumps(measured, indent=1) + "\n", encoding="utf-8")
    print(f"{FILE_SECONDS}: {len(measured)} files, {sum(measured.values()):.0f} s")
