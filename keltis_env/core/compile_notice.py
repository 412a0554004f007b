"""A notice while numba compiles the kernels, so that the first compiled run is not silent.

The compiled core's kernels are compiled on their first use and kept in numba's on-disk
cache: the first run on a machine (or after the kernels change) spends minutes compiling
(``keltis bench --learner``: about :data:`COLD_COMPILE_SECONDS` on a two-core machine), later
runs load them in a moment. :func:`compile_notice` listens to numba's compile events
(which fire on cache misses only): at the first it prints ``compiling kernels (once, about
N s; cached on disk after)``, then the kernels compiled and the time so far (in place on a
terminal, a line every :data:`LINE_SECONDS` otherwise), and a last line when the block
ends, with the seconds from the first compilation's start to the last's end (not the
block's: a training run compiles in its first minutes and goes on for hours). A run
whose kernels all come from the cache prints nothing; without numba the block runs as it
is.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

#: seconds a cold compile took: ``keltis bench --learner --games 4 --repeats 1 --seconds 0.5``
#: on a two-core machine with an empty cache
COLD_COMPILE_SECONDS = 160
#: seconds between progress lines when the stream is not a terminal
LINE_SECONDS = 10.0


class _Notice:
    """numba's compile events as the notice's lines on ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.started: float | None = None
        self.compiled = 0
        self.last_line = 0.0
        self.last_end: float | None = None  # when the last compilation ended

    def on_start(self, event: Any) -> None:
        if self.started is None:
            self.started = self.last_line = time.monotonic()
            self._write(f"compiling kernels (once, about {COLD_COMPILE_SECONDS} s on a two-core machine; cached on "
                        "disk after) ...\n")

    def on_end(self, event: Any) -> None:
        self.compiled += 1
        if self.started is None:
            return
        now = self.last_end = time.monotonic()
        if self.tty:
            self._write(f"\r  {self.compiled} kernels compiled, {now - self.started:.0f} s")
        elif now - self.last_line >= LINE_SECONDS:
            self.last_line = now
            self._write(f"  {self.compiled} kernels compiled, {now - self.started:.0f} s\n")

    def finish(self) -> None:
        if self.started is None:
            return
        took = (self.last_end if self.last_end is not None else time.monotonic()) - self.started
        self._write(f"{chr(13) if self.tty else ''}compiled {self.compiled} kernels in {took:.0f} s; later runs load "
                    "them from the cache\n")

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stream: the work goes on
            self.stream.write(text)
            self.stream.flush()


@contextlib.contextmanager
def compile_notice(stream: TextIO | None = None) -> Iterator[None]:
    """Meanwhile, numba's compilations of this process are announced on ``stream`` (standard
    error by default); nothing without numba or when every kernel comes from the cache."""
    if importlib.util.find_spec("numba") is None:
        yield
        return
    from numba.core import event

    notice = _Notice(stream if stream is not None else sys.stderr)

    class Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            notice.on_start(ev)

        def on_end(self, ev: Any) -> None:
            notice.on_end(ev)

    try:
        with event.install_listener("numba:compile", Listener()):
            yield
    finally:
        notice.finish()


__all__ = ["COLD_COMPILE_SECONDS", "LINE_SECONDS", "compile_notice"]
