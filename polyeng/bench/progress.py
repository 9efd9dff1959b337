"""The progress bar of the commands that run long (bench, run, warmup): redrawn in place on a
terminal, and only the final line elsewhere."""
from __future__ import annotations

import shutil
import sys


class Progress:
    """A one-line bar on a terminal; elsewhere (a pipe, a log file) only the final line."""

    def __init__(self, stream=None, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = not quiet and hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.live:
            return
        width = shutil.get_terminal_size((80, 24)).columns - 1
        filled = int(24 * done / max(total, 1))
        line = f"[{'#' * filled}{'.' * (24 - filled)}] {done}/{total} {label}"
        self.stream.write("\r" + line[:width].ljust(width))
        self.stream.flush()

    def finish(self, text: str) -> None:
        if self.live:
            self.stream.write("\r" + " " * (shutil.get_terminal_size((80, 24)).columns - 1) + "\r")
        if not self.quiet:
            print(text, file=self.stream, flush=True)
