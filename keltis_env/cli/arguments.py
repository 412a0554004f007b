"""Argument types of the commands for numbers with bounds (a helper of the commands, not
a command): a value that is not a finite number within the bounds is refused while the
arguments are parsed (exit status 2, ``argument --seconds: ...``), before any work.
``nan``, ``inf`` and numbers too large for a float are never allowed: a timed run that
never ends, or a count that cannot be held, has no use.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

#: the longest timed run and the most runs per figure of ``keltis bench`` (``--peers`` too)
MAX_RUN_SECONDS = 3600.0
MAX_REPEATS = 1000


def seconds(most: float) -> Callable[[str], float]:
    """The type of a duration option: a finite number of seconds > 0 and <= ``most``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not 0 < value <= most:
            raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 and <= {most:g}, got {text!r}")
        return value

    return parse


def count(least: int, most: int) -> Callable[[str], int]:
    """The type of a count option: an integer from ``least`` to ``most``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer from {least} to {most:,}, got {text!r}") from None
        if not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be an integer from {least} to {most:,}, got {text!r}")
        return value

    return parse


__all__ = ["MAX_REPEATS", "MAX_RUN_SECONDS", "count", "seconds"]
