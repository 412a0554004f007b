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
    from keltis_env.core.output_files import OutputPathError, atomic_write_text, check_output_file

    path = Path(args.readme)
    try:
        if str(args.readme) == "":
            raise OutputPathError("--readme: the path is empty; give the README file to update")
        if path.is_dir():
            raise OutputPathError(f"--readme: {path} is a folder; give the README file to update")
        old = path.read_text(encoding="utf-8")
        if not args.check:
            try:
                check_output_file(path, "the README")
            except OutputPathError as exc:
                raise OutputPathError(f"--readme: {exc}") from None
    except FileNotFoundError:
        print(f"keltis docs: error: --readme: {path} not found", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(f"keltis docs: error: --readme: {path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
              file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"keltis docs: error: --readme: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except OutputPathError as exc:
        print(f"keltis docs: error: {exc}", file=sys.stderr)
        return 2
    new = regenerate(old)
    if args.check:
        if new != old:
            print(f"{path}: generated tables are out of date; run `keltis docs`", file=sys.stderr)
            return 1
        print(f"{path}: generated tables are current")
        return 0
    atomic_write_text(path, new)
    print(f"{path}: {'updated' if new != old else 'already current'}")
    return 0
