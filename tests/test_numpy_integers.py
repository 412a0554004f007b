"""Numpy integers are integers everywhere the engines and environments take an int (an
action id, a player count, a turn limit, a seed), in every game; bools, floats and
strings are still refused with the same messages."""

from __future__ import annotations

import re

import numpy as np
import pytest

from keltis_env import make_env
from keltis_env.core.errors import ActionError, ConfigError
from keltis_env.core.game import game_names, get_game

GAMES = tuple(game_names())
NUMPY_INTS = (np.int64, np.int32, np.uint8, np.intp)


def _state(game: str, seed: int = 3):
    spec = get_game(game)
    return spec, spec.new_state(spec.make_config(num_players=3), seed)


@pytest.mark.parametrize("kind", NUMPY_INTS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("game", GAMES)
def test_engines_play_numpy_integer_actions_as_the_same_ints(game: str, kind: type) -> None:
    _, plain = _state(game)
    _, numpy_played = _state(game)
    for _ in range(40):
        if plain.is_over:
            break
        action = plain.legal_actions()[-1]
        assert plain.illegal_reason(action) is None
        assert numpy_played.illegal_reason(kind(action)) is None
        plain.apply(action)
        numpy_played.apply(kind(action))
        assert numpy_played.to_dict() == plain.to_dict()


@pytest.mark.parametrize("game", GAMES)
def test_an_illegal_numpy_action_is_named_as_a_plain_int(game: str) -> None:
    spec, state = _state(game)
    illegal = next(a for a in range(spec.num_actions) if a not in state.legal_actions())
    with pytest.raises(ActionError, match=rf"^illegal action {illegal} \("):
        state.apply(np.int64(illegal))


@pytest.mark.parametrize("bad", [True, 1.0, np.float64(1.0), "1", None], ids=repr)
@pytest.mark.parametrize("game", GAMES)
def test_engines_still_refuse_bools_floats_and_strings_as_actions(game: str, bad: object) -> None:
    spec, state = _state(game)
    before = state.to_dict()
    with pytest.raises(ActionError, match=rf"action ids are integers 0\.\.{spec.num_actions - 1}"):
        state.apply(bad)  # type: ignore[arg-type]
    assert state.illegal_reason(bad) is not None  # type: ignore[arg-type]
    assert state.to_dict() == before


@pytest.mark.parametrize("game", GAMES)
def test_action_names_accept_numpy_integers(game: str) -> None:
    spec, state = _state(game)
    for action in state.legal_actions():
        assert spec.action_to_string(np.int64(action)) == spec.action_to_string(action)


@pytest.mark.parametrize("game", GAMES)
def test_configs_take_numpy_player_counts_and_turn_limits_and_keep_plain_ints(game: str) -> None:
    spec = get_game(game)
    config = spec.make_config(num_players=np.int64(4), max_turns=np.int32(77))
    assert config == spec.make_config(num_players=4, max_turns=77)
    assert type(config.num_players) is int and type(config.max_turns) is int
    assert config.to_dict() == spec.make_config(num_players=4, max_turns=77).to_dict()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_players": True}, "is for 2 to 4 players, got num_players=True"),
        ({"num_players": 3.0}, "is for 2 to 4 players, got num_players=3.0"),
        ({"num_players": np.int64(5)}, "is for 2 to 4 players, got num_players=np.int64(5)"),
        ({"max_turns": True}, "max_turns must be a positive integer, got True"),
        ({"max_turns": np.float64(5.0)}, "max_turns must be a positive integer, got np.float64(5.0)"),
        ({"max_turns": np.int64(0)}, "max_turns must be a positive integer, got np.int64(0)"),
    ],
    ids=repr,
)
@pytest.mark.parametrize("game", GAMES)
def test_configs_still_refuse_bools_floats_and_out_of_range_numbers(game: str, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        get_game(game).make_config(**options)


@pytest.mark.parametrize("game", GAMES)
def test_new_games_take_numpy_seeds_and_deal_the_same_game(game: str) -> None:
    spec = get_game(game)
    config = spec.make_config(num_players=2)
    state = spec.new_state(config, np.int64(12345))
    assert state.to_dict() == spec.new_state(config, 12345).to_dict()
    for bad in (True, 1.5, "7"):
        with pytest.raises(TypeError, match=re.escape(f"seed must be an integer or None, got {bad!r}")):
            spec.new_state(config, bad)


@pytest.mark.parametrize("game", GAMES)
def test_env_constructors_take_numpy_player_counts_and_turn_limits(game: str) -> None:
    spec = get_game(game)
    env = make_env(game, num_players=np.int64(3), max_turns=np.int64(40))
    env.reset(seed=7)
    assert len(env.agents) == 3
    assert env.unwrapped.config == spec.make_config(num_players=3, max_turns=40)
    env.close()


@pytest.mark.parametrize("game", GAMES)
def test_an_env_resets_with_a_numpy_seed_like_the_same_int(game):
    plain, numpyish = make_env(game, num_players=np.int64(2)), make_env(game, num_players=2)
    plain.reset(seed=5)
    numpyish.reset(seed=np.int64(5))
    assert type(numpyish.unwrapped.num_players) is int and type(plain.unwrapped.num_players) is int
    for agent in plain.possible_agents:
        assert (plain.observe(agent)["observation"] == numpyish.observe(agent)["observation"]).all()
