"""The documentation is kept current: the environment pages' tables are generated from the
code, every Python example of README.md runs, and every new import path CHANGELOG.md names
exists. (Every repository path the docs name exists: ``tests/test_doc_paths.py``.)"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from keltis_env import keltis_v0
from keltis_env.cli import docs
from keltis_env.games.keltis import ACTION_RANGES, NUM_ACTIONS
from keltis_env.games.keltis.encoding import observation_segments, observation_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def python_blocks(markdown: str) -> list[tuple[int, str]]:
    """Every fenced ```python block of ``markdown``: (line of its fence, code)."""
    return [
        (markdown.count("\n", 0, m.start()) + 1, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```[ \t]*$", markdown, re.MULTILINE | re.DOTALL)
    ]


README_BLOCKS = python_blocks(README)
#: the pages the README sends a reader to for its longer examples, run with the README's
GAMES_PAGE = (ROOT / "docs" / "games.md").read_text()
PAGE_BLOCKS = [("README.md", line, code) for line, code in README_BLOCKS] + \
    [("docs/games.md", line, code) for line, code in python_blocks(GAMES_PAGE)]


#: The page of each of the package's own games, holding its generated tables.
ENV_PAGES = {"keltis": ROOT / "docs" / "keltis_v0.md", "dice": ROOT / "docs" / "keltis_dice_v0.md"}


def test_keltis_docs_updates_the_environment_pages_the_games_name() -> None:
    from keltis_env.core.game import get_game

    assert {name: ROOT / str(get_game(name).docs_page) for name in ENV_PAGES} == ENV_PAGES
    assert {str(ROOT / page) for page in docs.pages()} == {str(page) for page in ENV_PAGES.values()}


def test_a_game_without_a_page_adds_none_and_a_new_games_page_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    from keltis_env.core import game as registry

    real = registry.get_game
    games = {"keltis": dataclasses.replace(real("keltis"), docs_page=None),
             "dice": dataclasses.replace(real("dice"), docs_page="docs/elsewhere.md")}
    monkeypatch.setattr(registry, "get_game", lambda name: games[name])
    monkeypatch.setattr(registry, "game_names", lambda: sorted(games))
    assert docs.pages() == ("docs/elsewhere.md",)


@pytest.mark.parametrize("game", sorted(ENV_PAGES))
def test_environment_page_generated_blocks_are_current(game: str, builtin_games_only: None) -> None:
    text = ENV_PAGES[game].read_text()
    assert docs.regenerate(text) == text, f"{ENV_PAGES[game].name}'s tables are stale: run `keltis docs`"


@pytest.mark.parametrize("game", sorted(ENV_PAGES))
def test_environment_page_holds_its_games_generated_blocks(game: str, builtin_games_only: None) -> None:
    text = ENV_PAGES[game].read_text()
    for block in (f"{game}-observation", f"{game}-actions"):
        assert f"<!-- generated:{block} -->" in text and f"<!-- /generated:{block} -->" in text, block
    assert "<!-- generated:" not in README, "generated tables belong on the environment pages"


@pytest.mark.parametrize("game", sorted(ENV_PAGES))
def test_environment_page_states_the_games_facts(game: str) -> None:
    """The page's facts table: its environment, action count and observation sizes."""
    from keltis_env.core.game import get_game
    from keltis_env.envs import make_raw_env

    descriptor = get_game(game)
    text = ENV_PAGES[game].read_text()
    assert f"# The environment `{descriptor.env_name}`" in text
    assert f"Discrete({descriptor.num_actions})" in text and f"(int8, ({descriptor.num_actions},))" in text
    sizes = [make_raw_env(game, num_players=n).observation_space("player_0")["observation"].shape[0]
             for n in (2, 3, 4)]
    assert f"Box(float32, ({sizes[0]},))" in text and f"{sizes[1]} values with 3, {sizes[2]} with 4" in text


def test_keltis_docs_check_fails_on_a_stale_page(tmp_path: Path, builtin_games_only: None,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from keltis_env.cli import main

    page = tmp_path / "page.md"
    good = ENV_PAGES["dice"].read_text()
    page.write_text(good.replace("| 0..0 | `keep` |", "| 0..0 | `kept` |"))
    assert main(["docs", "--check", "--page", str(page)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["docs", "--page", str(page)]) == 0
    assert page.read_text() == good
    assert main(["docs", "--check", "--page", str(page)]) == 0


def test_env_docstring_quotes_the_generated_tables() -> None:
    assert observation_table(2) in keltis_v0.__doc__
    assert keltis_v0.action_table() in keltis_v0.__doc__


def test_observation_table_lists_every_segment_contiguously() -> None:
    for n in (2, 3, 4):
        segments = observation_segments(n)
        assert segments[0].start == 0
        for before, after in pairwise(segments):
            assert before.stop == after.start
        assert len(observation_table(n).splitlines()) == len(segments) + 2
        assert keltis_v0.raw_env(n).observation_space("player_0")["observation"].shape == (segments[-1].stop,)


def test_action_table_covers_every_id_once() -> None:
    covered = [i for start, stop in ACTION_RANGES.values() for i in range(start, stop)]
    assert covered == list(range(NUM_ACTIONS))
    assert len(keltis_v0.action_table().splitlines()) == len(ACTION_RANGES) + 2


def test_the_readme_command_table_names_every_command() -> None:
    from keltis_env.cli import _commands

    table = README[README.index("| command | what it does |"):]
    table = table[:table.index("\n\n")]
    listed = [line.split("`")[1].removeprefix("keltis ") for line in table.splitlines()[2:]]
    assert sorted(listed) == sorted(_commands()), "README's command table and `keltis --help` disagree"


# ---------------------------------------------------------------------- README examples
def test_every_python_block_of_the_readme_is_found() -> None:
    assert len(README_BLOCKS) == README.count("```python") >= 3
    sample = "text\n```python\nx = 1\n```\nmore\n```python\ny = 2\n```\n"
    assert python_blocks(sample) == [(2, "x = 1\n"), (6, "y = 2\n")]


@pytest.mark.parametrize(("page", "line", "code"), PAGE_BLOCKS, ids=[f"{page}:{line}" for page, line, _ in PAGE_BLOCKS])
def test_readme_python_example_runs(page: str, line: int, code: str, tmp_path: Path) -> None:
    """Each example runs on its own, as a reader would paste it, in a fresh interpreter
    (in an empty folder, so that nothing it writes lands in the repository)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"the example at {page} line {line} fails:\n{done.stderr[-3000:]}"


# ---------------------------------------------------------------------- CHANGELOG imports
def resolve(path: str) -> Any:
    """The object a dotted path names: its longest importable module, then attributes."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            found = getattr(found, name)
        return found
    raise ImportError(f"no module in {path}")


def changelog_new_paths(header: str = "| 0.1.0 | 0.2.0 |") -> list[str]:
    """Every dotted ``keltis_env...`` or ``training...`` path in the new column of the
    import table under ``header``."""
    table = CHANGELOG[CHANGELOG.index(header) :].split("\n\n")[0].splitlines()[2:]
    paths = []
    for row in table:
        new = row.split("|")[2]
        paths += [code for code in re.findall(r"`([^`]+)`", new)
                  if re.fullmatch(r"(keltis_env|training)(\.\w+)+", code)]
    return paths


@pytest.mark.parametrize(("header", "at_least"),
                         [("| 0.1.0 | 0.2.0 |", 60), ("| 0.2.0 | Unreleased |", 60), ("| Before | Now |", 5),
                          ("| Moved from | Now |", 20)])
def test_every_new_import_path_of_the_changelog_exists(header: str, at_least: int) -> None:
    paths = changelog_new_paths(header)
    assert len(paths) > at_least
    missing = []
    for path in paths:
        try:
            resolve(path)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{path}: {exc}")
    assert not missing, "CHANGELOG.md names imports that do not exist:\n" + "\n".join(missing)


def test_the_resolver_refuses_what_does_not_exist() -> None:
    assert resolve("keltis_env.games.keltis.GameState") is importlib.import_module("keltis_env.games.keltis").GameState
    with pytest.raises(AttributeError):
        resolve("keltis_env.games.keltis.NoSuchThing")
    with pytest.raises(ImportError):
        resolve("no_such_package.anything")


def test_every_relative_link_of_the_docs_resolves() -> None:
    pages = [ROOT / "README.md", ROOT / "LEADERBOARD.md", *sorted((ROOT / "docs").rglob("*.md")),
             ROOT / "policies" / "README.md", ROOT / "training" / "README.md"]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, "links to missing files: " + ", ".join(broken)


def test_the_speed_page_holds_todays_figures_each_table_after_the_command_that_measures_it() -> None:
    """docs/speed.md keeps the latest figure of each command (its history lives in docs/log/):
    at most 250 lines, and every section shows its command (an indented block) before its
    first table."""
    text = (ROOT / "docs" / "speed.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, "docs/speed.md is for today's figures; move the history to docs/log/"
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert len(sections) >= 5
    for section in sections:
        title = section.splitlines()[0]
        table = section.find("\n|")
        if table < 0:
            continue
        commands = re.findall(r"^    \S.*$", section[:table], re.M)
        assert commands, f"docs/speed.md, section {title!r}: no command before its table"
