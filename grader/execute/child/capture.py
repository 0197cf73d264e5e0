"""Capped text streams that stand in for sys.stdout and sys.stderr while student code runs."""

from __future__ import annotations

import io


class CappedStream(io.TextIOBase):
    """Keeps the first ``cap`` characters written and counts the rest, so a flood costs nothing."""

    def __init__(self, name: str, cap: int) -> None:
        super().__init__()
        self.name = name
        self.cap = cap
        self._parts: list[str] = []
        self._kept = 0
        self.dropped = 0

    @property
    def encoding(self) -> str:  # some libraries read it before writing
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = self.cap - self._kept
        if room > 0:
            self._parts.append(text[:room])
            self._kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def flush(self) -> None:
        pass

    def getvalue(self) -> str:
        return "".join(self._parts)

    def snapshot(self) -> dict:
        return {"text": self.getvalue(), "dropped": self.dropped}
