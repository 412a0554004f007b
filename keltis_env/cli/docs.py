"""``keltis docs``: regenerate the environment pages' generated tables (or check they are current).

Blocks between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` are produced by
code, never typed by hand: the observation and action tables come from the encoders'
segment lists and the action codecs' named ranges. They live on the environment pages,
which each game names (``GameDescriptor.docs_page``: ``docs/keltis_v0.md``,
``docs/keltis_dice_v0.md``; :func:`pages`); the environments' module docstrings quote the
same tables (``help(keltis_v0)``).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from keltis_env.cli.arguments import print_error

HELP = "regenerate the environment pages' observation/action tables from the code (--check: fail if stale)"


def pages() -> tuple[str, ...]:
    """The pages ``keltis docs`` updates by default, relative to the repository root: the
    environment page of every registered game that has one."""
    from keltis_env.core.game import game_names, get_game

    return tuple(page for name in game_names() if (page := get_game(name).docs_page))


def generators() -> dict[str, Callable[[], str]]:
    """Block name -> function producing its Markdown: ``<game>-observation`` (2 players) and
    ``<game>-actions`` for every registered game (a page holds the blocks it wants)."""
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


class _Pages(argparse.Action):
    """Collects ``--page PATH`` (or its older name ``--readme PATH``) with the option as
    spelled, so that an error names the option the user typed."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        pages = list(getattr(namespace, self.dest) or [])
        pages.append((option_string or "--page", values))
        setattr(namespace, self.dest, pages)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--page", "--readme", dest="pages", action=_Pages, metavar="PATH", default=None,
                   help="a page to update, repeatable (default: the environment page each registered game "
                        "names, e.g. docs/keltis_v0.md); --readme is the option's older name")
    p.add_argument("--check", action="store_true", help="only check; exit 1 if a block is out of date")


def _read(option: str, name: str, check: bool) -> tuple[Path, str]:
    """The page ``name`` and its text; ``OutputPathError`` naming ``option`` where it
    cannot be read, or, unless ``check``, cannot be written."""
    from keltis_env.core.output_files import OutputPathError, check_output_file

    if name == "":
        raise OutputPathError(f"{option}: the path is empty; give the page to update")
    path = Path(name)
    if path.is_dir():
        raise OutputPathError(f"{option}: {path} is a folder; give the page to update")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OutputPathError(f"{option}: {path} not found") from None
    except UnicodeDecodeError as exc:
        raise OutputPathError(f"{option}: {path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise OutputPathError(f"{option}: cannot read {path}: {exc.strerror or exc}") from None
    if not check:
        try:
            check_output_file(path, "the page")
        except OutputPathError as exc:
            raise OutputPathError(f"{option}: {exc}") from None
    return path, text


def run(args: argparse.Namespace) -> int:
    from keltis_env.core.output_files import OutputPathError, atomic_write_text

    given: Sequence[tuple[str, str]] = args.pages or [("--page", page) for page in pages()]
    read = []
    try:
        for option, name in given:
            read.append(_read(option, name, args.check))
    except OutputPathError as exc:
        print_error("keltis docs", exc)
        return 2
    stale = 0
    for path, old in read:
        new = regenerate(old)
        if args.check:
            if new != old:
                stale += 1
                print(f"{path}: generated tables are out of date; run `keltis docs`", file=sys.stderr)
            else:
                print(f"{path}: generated tables are current")
            continue
        atomic_write_text(path, new)
        print(f"{path}: {'updated' if new != old else 'already current'}")
    return 1 if stale else 0
