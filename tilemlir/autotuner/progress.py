"""One status line on a terminal ('compiling matmul: 12/24, 1 failed'); nothing when stderr is not one."""

from __future__ import annotations

import sys
from typing import TextIO


class Progress:
    def __init__(self, what: str, total: int, enabled: bool | None = None, stream: TextIO | None = None):
        self._stream = stream or sys.stderr
        self.enabled = self._stream.isatty() if enabled is None else enabled
        self._what = what
        self._total = total
        self.done = 0
        self.failed = 0

    def step(self, ok: bool) -> None:
        self.done += 1
        self.failed += not ok
        if self.enabled:
            failed = f", {self.failed} failed" if self.failed else ""
            self._stream.write(f"\r{self._what}: {self.done}/{self._total}{failed}")
            self._stream.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            self._stream.write("\n")
            self._stream.flush()
