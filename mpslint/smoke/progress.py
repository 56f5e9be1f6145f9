"""One-line progress on a terminal (stderr); silent when stderr is not a TTY or progress is off."""
from __future__ import annotations

import sys
import threading
import time


class Progress:
    def __init__(self, total_files: int, enabled: bool, label: str = "smoke", stream=None):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total = total_files
        self.done = 0
        self.variants = 0
        self.failed = 0
        self.current = ""
        self._lock = threading.Lock()
        self._last = 0.0
        self._width = 0

    def update(self, *, current: str | None = None, files_done: int = 0, variants: int = 0, failed: int = 0,
               force: bool = False) -> None:
        with self._lock:
            self.done += files_done
            self.variants += variants
            self.failed += failed
            if current is not None:
                self.current = current
            if not self.enabled:
                return
            now = time.monotonic()
            if not force and now - self._last < 0.1:
                return
            self._last = now
            line = (f"smoke ({self.label}): {self.done}/{self.total} files, {self.variants} variants, "
                    f"{self.failed} failed  {self.current}")[:120]
            self.stream.write("\r" + line.ljust(self._width))
            self.stream.flush()
            self._width = len(line)

    def close(self) -> None:
        if self.enabled and self._width:
            with self._lock:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
