"""``keltis docs``: regenerate the README's generated tables (or check they are current).

Blocks between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` in README.md
are produced by code, never typed by hand: the observation and action tables come from
the encoders' segment lists and the action codecs' named ranges.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

HELP = "regenerate the README's observation/action tables from the code (--check: fail if stale)"


def generators() -> dict[str, Callable[[], str]]:
    """Block name -> function producing its Markdown: ``<game>-observation`` (2 players) and
    ``<game>-actions`` for every registered game (a README holds the blocks it wants)."""
    from functools import partial

    from keltis_env.core.game import game_names
    from keltis_env.envs import action_table, observation_table

    blocks: dict[str, Callable[[], str]] = {}
    for name in game_names():
        blocks[f"{name}-observation"] = partial(observation_table, name, 2)
        blocks[f"{name}-actions"] = partial(action_table, name)
    return blocks


def regenerate(text: str) -> str:
    """``text`` with every generated block replaced by its current content."""
    for name, make in generators().items():
        tag = re.escape(name)
        pattern = re.compile(rf"(<!-- generated:{tag} -->\n).*?(<!-- /generated:{tag} -->)", re.S)
        text = pattern.sub(lambda m, make=make: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--readme", default="README.md", help="the file to update (default README.md)")
    p.add_argument("--check", action="store_true", help="only check; exit 1 if a block is out of date")


def run(args: argparse.Namespace) -> int:
    path = Path(args.readme)
    if not path.exists():
        print(f"keltis docs: {path} not found", file=sys.stderr)
        return 2
    old = path.read_text()
    new = regenerate(old)
    if args.check:
        if new != old:
            print(f"{path}: generated tables are out of date; run `keltis docs`", file=sys.stderr)
            return 1
        print(f"{path}: generated tables are current")
        return 0
    from keltis_env.core.files import atomic_write_text

    atomic_write_text(path, new)
    print(f"{path}: {'updated' if new != old else 'already current'}")
    return 0
