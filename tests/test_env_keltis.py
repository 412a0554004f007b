"""The PettingZoo AEC environment ``keltis_v0``: its own positions, rewards, reset options,
rendering and options; the checks every game shares are in test_conformance.py."""

from __future__ import annotations

import pytest
from conftest import make_state_dict
from pettingzoo.test import api_test

from keltis_env import keltis_v0
from keltis_env.games.keltis import (
    ConfigError,
    GameState,
    StateError,
    string_to_action,
)

AGENTS = ["player_0", "player_1", "player_2", "player_3"]


def finish(env) -> dict[str, tuple[float, bool, bool]]:
    """Step every agent out of a finished game; what each one saw in ``last()``."""
    seen = {}
    for agent in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        assert terminated or truncated, f"{agent} is still playing"
        seen[agent] = (reward, terminated, truncated)
        env.step(None)
    assert env.agents == []
    return seen


# ------------------------------------------------------------- conformance (the rest: test_conformance.py)
def test_api_test_on_the_raw_env_and_other_options():
    api_test(keltis_v0.raw_env(num_players=3, tile_layout="random", reward="score", max_turns=30), num_cycles=200)


def test_an_agent_may_act_several_times_in_a_row():
    position = make_state_dict(
        hands={0: ["red 4"]},
        rows={0: {"red": [1, 2]}},
        figures={0: {"red": 2}},
        tiles={("red", 3): "clover"},
    )
    env = keltis_v0.env()
    env.reset(options={"state": position})
    for text in ("play red 4", "bonus advance red", "draw deck"):
        assert env.agent_selection == "player_0"
        env.step(string_to_action(text))
    assert env.agent_selection == "player_1"


# ---------------------------------------------------------------------------- rewards
def _ending_position(num_players: int, wishing: dict[int, int], **kwargs):
    """Player 0 ends the game by drawing the last card; scores come from wishing stones
    (0 stones -4, 2 stones +2, 3 stones +3; nobody has a figure out)."""
    return make_state_dict(num_players, hands={0: ["yellow 4"]}, deck_size=1, wishing=wishing, **kwargs)


def _play_last_turn(env) -> None:
    env.step(string_to_action("discard yellow 4"))
    env.step(string_to_action("draw deck"))


@pytest.mark.parametrize(
    ("num_players", "wishing", "expected"),
    [
        (2, {0: 2}, [1.0, -1.0]),  # sole winner
        (2, {1: 3}, [-1.0, 1.0]),
        (2, {}, [0.0, 0.0]),  # tied: they share the victory
        (3, {0: 2, 1: 2}, [0.0, 0.0, -1.0]),  # two tied on top, the third loses
        (3, {2: 3, 0: 2}, [-1.0, -1.0, 1.0]),
        (4, {1: 2, 3: 2, 2: 2}, [-1.0, 0.0, 0.0, 0.0]),
    ],
)
def test_win_rewards_are_paid_to_every_agent_at_the_end(num_players, wishing, expected):
    env = keltis_v0.env(num_players=num_players)
    env.reset(options={"state": _ending_position(num_players, wishing)})
    _play_last_turn(env)
    state = env.unwrapped.state_
    assert state.is_over and state.terminated
    seen = finish(env)
    assert [seen[a][0] for a in AGENTS[:num_players]] == expected  # losers get theirs too
    assert all(term and not trunc for _, term, trunc in seen.values())


def test_score_rewards_are_own_score_minus_the_mean_of_the_others_over_50():
    env = keltis_v0.env(num_players=3, reward="score")
    env.reset(options={"state": _ending_position(3, {0: 2, 1: 3})})
    _play_last_turn(env)
    assert env.unwrapped.state_.scores() == [2, 3, -4]
    seen = finish(env)
    expected = [(2 - (3 - 4) / 2) / 50, (3 - (2 - 4) / 2) / 50, (-4 - (2 + 3) / 2) / 50]
    assert [seen[a][0] for a in AGENTS[:3]] == pytest.approx(expected)


def test_infos_hold_the_final_scores():
    env = keltis_v0.env()
    env.reset(options={"state": _ending_position(2, {0: 2})})
    _play_last_turn(env)
    assert env.infos["player_0"] == {"score": 2, "scores": [2, -4]}
    assert env.infos["player_1"] == {"score": -4, "scores": [2, -4]}


def test_truncation_sets_truncations_not_terminations_and_pays_standings():
    env = keltis_v0.env(max_turns=1)
    env.reset(options={"state": make_state_dict(hands={0: ["yellow 4"]}, wishing={1: 2}, max_turns=1)})
    _play_last_turn(env)
    state = env.unwrapped.state_
    assert state.truncated and not state.terminated
    assert all(env.truncations.values()) and not any(env.terminations.values())
    seen = finish(env)
    assert seen == {"player_0": (-1.0, False, True), "player_1": (1.0, False, True)}


# ---------------------------------------------------------------------------- reset options
def test_reset_from_an_explicit_state():
    data = make_state_dict(
        3, hands={1: ["pink 2"]}, figures={1: {"blue": 4}}, rows={1: {"blue": [3]}}, current=1, turn=7
    )
    env = keltis_v0.env(num_players=3)
    env.reset(options={"state": data})
    state = env.unwrapped.state_
    assert state == GameState.from_dict(data)
    assert env.agent_selection == "player_1" and env.agents == AGENTS[:3]
    env.step(string_to_action("play pink 2"))
    assert state.pos[1][4] == 1
    with pytest.raises(StateError, match="card counts"):
        env.reset(options={"state": {**data, "deck": data["deck"][1:]}})


# ---------------------------------------------------------------------------- rendering and options
def test_ansi_render_returns_the_board():
    env = keltis_v0.env(render_mode="ansi")
    env.reset(options={"state": make_state_dict(figures={0: {"green": 3}}, rows={0: {"green": [5]}})})
    text = env.render()
    assert isinstance(text, str)
    assert "Keltis" in text and "player 0 to play" in text
    for colour in ("red", "yellow", "green", "blue", "pink"):
        assert colour in text
    assert "green 5" in text


def test_an_invalid_tile_layout_raises_a_clear_error():
    # the options every game has are checked in test_conformance.py
    with pytest.raises(ConfigError, match="tile_layout"):
        keltis_v0.env(tile_layout="spiral")


