"""Argument types and shared options of the commands (a helper of the commands, not a
command): for numbers with bounds, a value that is not a finite number within the bounds is refused while the
arguments are parsed (exit status 2, ``argument --seconds: ...``), before any work.
``nan``, ``inf`` and numbers too large for a float are never allowed: a timed run that
never ends, or a count that cannot be held, has no use. Also the options and the report of
an agent's failure shared by the commands that play agents (``evaluate``, ``ladder``, ``play``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

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


#: the longest per-move time limit an option takes (a day)
MAX_MOVE_SECONDS = 86400.0


def move_limit(text: str) -> float | None:
    """The type of ``--move-seconds``: seconds > 0 (at most a day), or 0 / ``none`` for no limit."""
    if text.strip().lower() in ("0", "none"):
        return None
    return seconds(MAX_MOVE_SECONDS)(text)


def add_agent_options(p: argparse.ArgumentParser, default: float | None, fixed: str | None = None) -> None:
    """``--move-seconds`` (unless ``fixed`` says where the limit comes from) and ``--traceback``."""
    if fixed is None:
        shown = f"{default:g}" if default is not None else "none"
        p.add_argument("--move-seconds", type=move_limit, default=default, metavar="S",
                       help=f"per-move time limit in seconds; an agent over it loses that game on time "
                            f"(0 or none: no limit; default {shown})")
    p.add_argument("--traceback", action="store_true",
                   help="when an agent fails (raises, exits, dies), print its whole traceback too")


#: the most rollouts per position a whole-game search may be given (--search-iterations)
MAX_SEARCH_ITERATIONS = 100_000


def add_search_iterations(p: argparse.ArgumentParser) -> None:
    """``--search-iterations N``: the rollouts per position of the analysis's search
    (:func:`keltis_env.web.analysis.search_spec`), one knob for ``keltis serve`` and ``keltis replay``."""
    from keltis_env.web.analysis import SEARCH_ITERATIONS

    p.add_argument("--search-iterations", type=count(1, MAX_SEARCH_ITERATIONS), default=None, metavar="N",
                   help=f"rollouts per position of the analysis's search (default {SEARCH_ITERATIONS['compiled']} "
                        f"on the compiled core, {SEARCH_ITERATIONS['python']} in Python; docs/serve.md says what a "
                        "whole game takes)")


def print_error(prog: str, message: object, file: Any = None) -> None:
    """``PROG: error: MESSAGE`` on one line of ``file`` (standard error by default), the
    message's control characters escaped (:func:`~keltis_env.core.text.terminal_text`): an
    error that quotes a file's contents or a path cannot command the terminal."""
    from keltis_env.core.text import terminal_text

    print(f"{prog}: error: {terminal_text(str(message))}", file=sys.stderr if file is None else file)


def disk_full(prog: str, exc: BaseException, folder: str | None) -> int:
    """Report a full disk (:class:`~keltis_env.core.output_files.DiskFullError`) on one line:
    where, what it needed, and how the run goes on; exit status 1."""
    then = (f"; the finished games are kept in {folder}: free some space, then continue with --resume {folder}"
            if folder is not None else "; free some space and run it again")
    print_error(prog, f"{exc}{then}")
    return 1


def agent_failure(prog: str, exc: Any, traceback: bool, folder: str | None = None) -> int:
    """Report an agent's failure (:class:`~keltis_env.evaluation.errors.AgentPlayError`) on
    stderr: one line, its traceback with ``traceback``; exit status 1."""
    from keltis_env.core.text import terminal_text

    print_error(prog, exc)
    if traceback and exc.trace:
        print(terminal_text(exc.trace.rstrip(), multiline=True), file=sys.stderr)
    elif exc.trace:
        print(f"{prog}: --traceback shows the agent's traceback", file=sys.stderr)
    if folder is not None:
        print(terminal_text(f"the finished games are kept in {folder}; continue with --resume {folder} once the "
                            "agent is fixed"), file=sys.stderr)
    return 1


__all__ = ["MAX_MOVE_SECONDS", "MAX_REPEATS", "MAX_RUN_SECONDS", "MAX_SEARCH_ITERATIONS", "add_agent_options",
           "add_search_iterations", "agent_failure", "count", "disk_full", "move_limit", "print_error", "seconds"]
