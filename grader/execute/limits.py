"""Resource limits for one submission; an assignment may override any of them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    call_seconds: float = 10.0  # one call into student code (a forward pass, a function call)
    unit_seconds: float = 30.0  # one notebook cell or top-level statement while loading
    submission_seconds: float = 300.0  # everything for one submission, restarts included
    memory_bytes: int = 4 << 30
    file_bytes: int = 64 << 20  # largest file the student's process may write (its raw output included)
    stream_cap: int = 64 << 10  # characters of stdout / stderr kept per cell and per question
    max_message_bytes: int = 256 << 20  # largest reply read from the student's process
    max_array_elements: int = 1 << 24

    def rlimits(self) -> dict[str, int]:
        cpu = int(self.submission_seconds) + 5
        return {"memory_bytes": self.memory_bytes, "cpu_seconds": cpu, "file_bytes": self.file_bytes,
                "core_bytes": 0}
