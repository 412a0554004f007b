"""A recipe is refused when it does not make what it promises: a game or player count that no
game has, a stage that plays another game or player count than the recipe names, sessions
that do not train on, and ``--install`` of a ``--tiny`` run (which makes nothing to ship)."""

from __future__ import annotations

from pathlib import Path

import pytest

from keltis_env.core.errors import ConfigError
from training.recipe.__main__ import main
from training.recipe.recipe import load_recipe

TRAIN_2P = "  - train: {name: rl, config: {env: {game: keltis, num_players: 2}}}\n"


def _recipe(tmp_path: Path, head: str, stages: str) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(f"output: {tmp_path / 'out.zip'}\n{head}stages:\n{stages}")
    return path


def _refused(tmp_path: Path, head: str, stages: str, *parts: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_recipe(_recipe(tmp_path, head, stages))
    for part in parts:
        assert part in str(info.value), str(info.value)


def test_recipe_of_an_unknown_game_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path, "game: chess\nplayers: 2\n", TRAIN_2P, "game must be one of", "keltis", "got 'chess'")


def test_recipe_of_a_player_count_the_game_does_not_take_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path, "game: keltis\nplayers: 9\n", TRAIN_2P, "players: 9 is not a player count of 'keltis'")
    _refused(tmp_path, "game: keltis\nplayers: two\n", TRAIN_2P, "players must be an integer")


def test_recipe_over_a_stage_of_other_players_is_refused_naming_both(tmp_path: Path) -> None:
    _refused(tmp_path, "game: keltis\nplayers: 3\n", TRAIN_2P,
             "stage 'rl' (train) plays 'keltis' with 2 players", "the recipe says game: keltis, players: 3")


def test_recipe_over_a_stage_of_another_game_is_refused_naming_both(tmp_path: Path) -> None:
    stages = "  - record: {name: demos, imitate: {env: {game: dice}}, set: {record.teacher: heuristic}}\n"
    _refused(tmp_path, "game: keltis\nplayers: 2\n", stages,
             "stage 'demos' (record) plays 'dice' with 2 players", "the recipe says game: keltis, players: 2")


def test_stage_players_set_by_its_overrides_are_checked(tmp_path: Path) -> None:
    stages = "  - train: {name: rl, config: {}, set: {env.num_players: 4}}\n"
    _refused(tmp_path, "game: keltis\nplayers: 2\n", stages, "plays 'keltis' with 4 players")
    assert load_recipe(_recipe(tmp_path, "game: keltis\nplayers: 4\n", stages)).num_players == 4


def test_recipe_whose_sessions_do_not_increase_is_refused(tmp_path: Path) -> None:
    head = "game: keltis\nplayers: 2\n"
    train = "  - train: {{name: rl, config: {{}}, sessions: {}}}\n"
    _refused(tmp_path, head, train.format("[{until: 2000}, {until: 1000}]"),
             "sessions[1].until (1,000) must be larger than the session before's (2,000)")
    _refused(tmp_path, head, train.format("[{until: 1000}, {until: 1000}]"), "must be larger")
    _refused(tmp_path, head, train.format("[{set: {ppo.learning_rate: 1.0e-4}}, {until: 1000}]"),
             "sessions[0] has no until")
    _refused(tmp_path, head, train.format("[{until: 1e400}]"), "must be <=")
    _refused(tmp_path, head, train.format("[{untill: 5}]"), "must be a mapping of until")
    recipe = load_recipe(_recipe(tmp_path, head, train.format("[{until: 1000}, {until: 3e3}, {}]")))
    assert recipe.stages[0].get("sessions")[1] == {"until": "3e3"}


def test_install_with_tiny_is_refused_before_anything_runs(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _recipe(tmp_path, "game: keltis\nplayers: 2\n", TRAIN_2P)
    work = tmp_path / "work"
    assert main([str(path), "--tiny", "--install", "--work", str(work), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--install copies the recipe's policy" in err and "--tiny" in err
    assert not work.exists() and not (tmp_path / "out.zip").exists()
