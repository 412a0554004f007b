"""How a result names a path: relative to the repository, never as one machine's absolute path
(standard library only).

Scorecards, budget results, run folders' commands and the leaderboard are committed and
read on other machines, where a path under one user's home folder means nothing
and says who made it. Whatever a command writes into such a file (a path, an agent spec
``ppo:PATH``, the command line that made it) goes through :func:`recorded_path` or
:func:`recorded_text` first, which write each absolute path relative to
:func:`repository_root`: ``runs/x/policy.zip`` inside the repository, ``../runs/x`` beside
it. ``/dev/`` paths (``/dev/null``) name the same thing on every machine and stay as they are.

What a command *uses* is never rewritten: only what it records.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

#: absolute paths every machine has, recorded as they are
UNIVERSAL = ("/dev/",)
#: an absolute path inside a recorded text: at its start or after a space, a quote, ``:``
#: (``ppo:/x``) or ``=`` (``--json=/x``), up to the next space, quote, ``,`` (an agent
#: spec's options) or ``:`` (``py:/x.py:Name``); never the ``//`` of an address
_ABSOLUTE = re.compile(r"(?:^|(?<=[\s'\"`:=(]))/(?!/)[^\s'\"`,:;)]+")


def repository_root() -> Path:
    """The folder recorded paths are relative to: the checkout this package runs from (the
    folder the commands are run in), else, for an installed package, the working folder."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "keltis_env").is_dir():
        return checkout
    return Path.cwd()


def recorded_path(path: str | Path) -> str:
    """``path`` (absolute, or relative to the working folder) relative to
    :func:`repository_root`, with ``/`` separators: ``runs/x/policy.zip``,
    ``../runs/budget/seed-0``."""
    given = Path(path)
    if given.as_posix().startswith(UNIVERSAL):
        return given.as_posix()
    absolute = given if given.is_absolute() else Path.cwd() / given
    return Path(os.path.relpath(absolute, repository_root())).as_posix()


def recorded_text(text: str) -> str:
    """``text`` (a command line, an agent spec) with every absolute path in it written as
    :func:`recorded_path` writes it; the rest, relative paths included, as it is."""
    return _ABSOLUTE.sub(lambda m: recorded_path(m.group(0)), text)


__all__ = ["UNIVERSAL", "recorded_path", "recorded_text", "repository_root"]
