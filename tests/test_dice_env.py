"""The PettingZoo AEC environment ``keltis_dice_v0`` (docs/rules.md R11): its own positions,
rewards, truncation, reset options, observation layout, rendering and options; the checks
every game shares are in test_conformance.py."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from dice_helpers import position
from pettingzoo.test import api_test

from keltis_env import keltis_dice_v0
from keltis_env.games.dice import (
    ConfigError,
    GameConfig,
    GameState,
    LiveView,
    StateError,
    string_to_action,
)
from keltis_env.games.dice.constants import COLORS, FACE_NAMES
from keltis_env.games.dice.encoding import DiceObservationEncoder, observation_segments, observation_table

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
    env = keltis_dice_v0.raw_env(num_players=3, bonus_layout="random", reward="score", max_turns=30)
    api_test(env, num_cycles=300)


# ---------------------------------------------------------------------------- observations
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_spaces_and_segments(num_players):
    env = keltis_dice_v0.env(num_players=num_players)
    segments = observation_segments(num_players)
    size = segments[-1].stop
    assert size == {2: 313, 3: 381, 4: 449}[num_players]
    assert all(a.stop == b.start for a, b in pairwise(segments))
    space = env.observation_space("player_0")
    assert space["observation"].shape == (size,) and space["action_mask"].shape == (48,)
    assert env.action_space("player_1").n == 48


def test_the_documentation_quotes_the_generated_tables():
    doc = keltis_dice_v0.__doc__
    assert observation_table(2) in doc and keltis_dice_v0.action_table() in doc
    assert "{observation_table}" not in doc and "| 1..31 | `reroll` | `reroll 1` | `reroll 1,2,3,4,5` |" in doc
    assert "(313,)" in doc and "Discrete(48)" in doc


def test_observation_segments_hold_what_they_say_relative_to_the_observer():
    s = position(
        3,
        markers={0: {"red": 3}, 1: {"blue": 7, "pink": 9}, 2: {"green": 1}},
        stones={0: 0, 1: 12, 2: 4},
        dice=("red", "red", "blue", "stone", "stone"),
        current=1,
        extra_turn=True,
        turn=50,
    )
    enc = DiceObservationEncoder(3)
    ix = enc.index
    obs = enc.encode(LiveView(s, 1))  # observer: seat 1, so p1 = seat 2, p2 = seat 0
    seg = {name: obs[ix[name].slice] for name in ix}
    dice = seg["dice"].reshape(5, 6)
    assert [FACE_NAMES[i] for i in dice.argmax(axis=1)] == ["red", "red", "blue", "stone", "stone"]
    assert dice.sum() == 5
    np.testing.assert_allclose(seg["face_counts"], [0.4, 0, 0, 0.2, 0, 0.4])
    assert seg["phase"].tolist() == [0, 1, 0] and seg["extra_turn"][0] == 1
    marker = seg["p0.marker"].reshape(5, 10)
    assert marker.argmax(axis=1).tolist() == [0, 0, 0, 7, 9]  # seat 1: blue 7, pink 9
    assert seg["p0.markers"].argmax() == 2 and seg["p0.stones"].argmax() == 9  # 12 stones: 9+
    assert seg["p0.upper"][0] == pytest.approx(0.5) and seg["p0.to_act"][0] == 1
    assert seg["p1.marker"].reshape(5, 10)[2].argmax() == 1  # seat 2: green 1
    assert seg["p2.marker"].reshape(5, 10)[0].argmax() == 3 and seg["p2.stones"].argmax() == 0
    assert seg["p1.to_act"][0] == 0 == seg["p2.to_act"][0]
    scores = s.scores()
    assert seg["p0.score"][0] == pytest.approx(scores[1] / 50) and seg["p2.score"][0] == pytest.approx(scores[0] / 50)
    assert seg["upper_count"][0] == pytest.approx(2 / 7) and seg["turn"][0] == pytest.approx(0.1)
    bonus = seg["bonus_squares"].reshape(5, 9, 3)
    assert bonus.sum() == 15 and bonus[0, 1].tolist() == [0, 1, 0]  # red row 2: clover
    # a PlayerView encodes exactly like the zero-copy view
    np.testing.assert_array_equal(enc.encode(s.view(1)), obs)


def test_an_agent_acts_several_times_in_a_turn_and_again_after_an_extra_turn():
    env = keltis_dice_v0.env()
    env.reset(options={"state": position(markers={0: {"red": 5}}, phase="reroll").to_dict()})
    env.step(string_to_action("keep"))
    assert env.agent_selection == "player_0"
    env.step(string_to_action("move red"))  # red 6: extra turn
    assert env.agent_selection == "player_0" and env.unwrapped.state_.extra_turn


# ---------------------------------------------------------------------------- rewards
def _ending(current: int = 0, stones: dict[int, int] | None = None) -> GameState:
    """A 2-player position where ``move pink`` (pink 6 -> 7) brings the fifth marker up.
    Before stones, player 0 then has 7 + 7 + 6 = 20 points and player 1 10 + 6 = 16."""
    markers = {0: {"red": 8, "green": 8, "pink": 6}, 1: {"blue": 9, "yellow": 7}}
    return position(markers=markers, dice=("pink", "red", "red", "stone", "stone"), current=current, stones=stones,
                    turn=20)  # 20 turns give room for the stones held (R11.3, R11.5)


@pytest.mark.parametrize(("stones", "expected"), [({0: 5, 1: 0}, (1.0, -1.0)), ({0: 0, 1: 5}, (-1.0, 1.0))])
def test_win_rewards_are_paid_to_every_agent_at_the_end(stones, expected):
    env = keltis_dice_v0.env()
    env.reset(options={"state": _ending(stones=stones).to_dict()})
    assert all(r == 0 for r in env.rewards.values())
    env.step(string_to_action("move pink"))
    state = env.unwrapped.state_
    assert state.terminated and all(env.terminations.values()) and not any(env.truncations.values())
    seen = finish(env)
    assert (seen["player_0"][0], seen["player_1"][0]) == expected


def test_tied_players_share_the_victory():
    # after the move: player 0 has 20 - 10 (no stone) = 10, player 1 16 - 3 (red 2) - 3 (2 stones) = 10
    markers = {0: {"red": 8, "green": 8, "pink": 6}, 1: {"blue": 9, "yellow": 7, "red": 2}}
    s = position(markers=markers, stones={1: 2}, dice=("pink", "red", "red", "stone", "stone"), turn=20)
    env = keltis_dice_v0.env()
    env.reset(options={"state": s.to_dict()})
    env.step(string_to_action("move pink"))
    assert env.unwrapped.state_.scores() == [10, 10]
    assert {a: r for a, (r, _, _) in finish(env).items()} == {"player_0": 0.0, "player_1": 0.0}


def test_score_rewards_are_own_score_minus_the_mean_of_the_others_over_50():
    env = keltis_dice_v0.env(num_players=2, reward="score")
    env.reset(options={"state": _ending(stones={0: 5, 1: 0}).to_dict()})
    env.step(string_to_action("move pink"))
    a, b = env.unwrapped.state_.scores()
    seen = finish(env)
    assert seen["player_0"][0] == pytest.approx((a - b) / 50) and seen["player_1"][0] == pytest.approx((b - a) / 50)


# ---------------------------------------------------------------------------- truncation
def test_truncation_sets_truncations_not_terminations_and_pays_standings():
    env = keltis_dice_v0.env(max_turns=1)
    s = position(markers={1: {"red": 4}}, dice=("green", "blue", "blue", "stone", "red"), max_turns=1)
    env.reset(options={"state": s.to_dict()})
    env.step(string_to_action("move green"))
    state = env.unwrapped.state_
    assert state.truncated and not state.terminated
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert finish(env) == {"player_0": (-1.0, False, True), "player_1": (1.0, False, True)}


# ---------------------------------------------------------------------------- reset options
def test_reset_from_an_explicit_state_continues_with_its_own_dice():
    s = GameState.new_game(GameConfig(num_players=3), seed=5)
    s.apply(31)
    env = keltis_dice_v0.env(num_players=3)
    env.reset(options={"state": s.to_dict()})
    state = env.unwrapped.state_
    assert state == s and env.agent_selection == AGENTS[s.current_player]
    rolls = s.rolls
    for _ in range(12):  # several turns: the environment's copy rolls the same dice
        action = s.legal_actions()[-1]
        s.apply(action)
        env.step(action)
        assert env.unwrapped.state_ == s
    assert s.rolls > rolls + 3
    with pytest.raises(StateError, match="markers on the board"):
        bad = s.to_dict()
        bad["players"][0]["markers"] = dict.fromkeys(COLORS, 1)
        env.reset(options={"state": bad})


# ---------------------------------------------------------------------------- rendering and options
def test_ansi_render_returns_the_board():
    env = keltis_dice_v0.env(render_mode="ansi")
    s = position(markers={0: {"green": 3}, 1: {"green": 3, "red": 9}}, dice=("red", "red", "blue", "stone", "pink"))
    env.reset(options={"state": s.to_dict()})
    text = env.render()
    assert isinstance(text, str)
    assert "Keltis dice" in text and "player 0 to move" in text
    assert "dice: 1:red  2:red  3:blue  4:pink  5:stone" in text
    for colour in COLORS:
        assert colour in text
    green_row_3 = next(line for line in text.splitlines() if line.startswith("  3"))
    assert "0 1" in green_row_3 and "[X]" in green_row_3  # both markers; green 3 is an extra-turn square


def test_an_invalid_bonus_layout_raises_a_clear_error():
    # the options every game has are checked in test_conformance.py
    with pytest.raises(ConfigError, match="bonus_layout"):
        keltis_dice_v0.env(bonus_layout="spiral")
