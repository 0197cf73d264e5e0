"""Resource limits for one submission; an assignment may override any of them, an instructor too (``--limit``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from grader.errors import ConfigurationError


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 10.0  # one call into student code (a forward pass, a function call)
    unit_seconds: float = 30.0  # one notebook cell or top-level statement while loading
    submission_seconds: float = 300.0  # everything for one submission, restarts included
    cpu_seconds: int = 300  # CPU time of each of the submission's processes
    memory_bytes: int = 4 << 30  # address space per process, and all its processes together where cgroups exist
    processes: int = 64  # processes and threads the submission may have at once
    open_files: int = 256
    file_bytes: int = 64 << 20  # largest file the student's code may write (in its private scratch folder)
    scratch_bytes: int = 256 << 20  # its scratch folder in all, where it is a private tmpfs
    stream_cap: int = 64 << 10  # characters of stdout / stderr kept per cell and per question
    output_bytes: int = 1 << 20  # characters of output kept per submission, all cells and questions together
    raw_output_bytes: int = 16 << 10  # bytes kept of what bypasses sys.stdout (C code, os.write)
    max_message_bytes: int = 256 << 20  # largest reply read from the student's process
    max_array_elements: int = 1 << 24  # larger returned arrays are refused before their data is read
    restarts: int = 8  # times a submission is started again after it crashed or hung

    def rlimits(self) -> dict[str, int]:
        """What the child applies to itself with setrlimit (inherited by everything it starts)."""
        return {"memory_bytes": self.memory_bytes, "cpu_seconds": int(self.cpu_seconds),
                "file_bytes": self.file_bytes, "open_files": self.open_files, "core_bytes": 0}

    def with_overrides(self, pairs: Iterable[str]) -> Limits:
        """Apply ``name=value`` pairs from the command line, e.g. ``call_seconds=2`` or ``memory_bytes=2G``."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        changes: dict[str, float | int] = {}
        for pair in pairs:
            name, sep, text = pair.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in fields:
                known = ", ".join(sorted(fields))
                raise ConfigurationError(f"--limit takes NAME=VALUE with NAME one of: {known} (got {pair!r})")
            try:
                number = _parse_number(text.strip())
            except ValueError:
                raise ConfigurationError(f"--limit {name}: {text!r} is not a number") from None
            if number <= 0:
                raise ConfigurationError(f"--limit {name} must be positive")
            changes[name] = int(number) if fields[name].type == "int" else float(number)
        return dataclasses.replace(self, **changes)


_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _parse_number(text: str) -> float:
    lowered = text.lower().removesuffix("ib").removesuffix("b")
    if lowered and lowered[-1] in _SUFFIXES:
        return float(lowered[:-1]) * _SUFFIXES[lowered[-1]]
    return float(lowered)
