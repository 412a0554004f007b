"""The PettingZoo AEC environment ``keltis_v0``: conformance, rewards, options."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from conftest import make_state_dict
from pettingzoo.test import api_test, seed_test

from keltis_env import keltis_v0
from keltis_env.core.rewards import final_rewards
from keltis_env.games.keltis import (
    ActionError,
    ConfigError,
    GameConfig,
    GameRecord,
    GameState,
    StateError,
    string_to_action,
)
from keltis_env.games.keltis.encoding import ObservationEncoder

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


# ---------------------------------------------------------------------------- conformance
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_pettingzoo_api_test(num_players):
    api_test(keltis_v0.env(num_players=num_players), num_cycles=1000)


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_pettingzoo_seed_test(num_players):
    seed_test(lambda: keltis_v0.env(num_players=num_players), num_cycles=500)


def test_api_test_on_the_raw_env_and_other_options():
    api_test(keltis_v0.raw_env(num_players=3, tile_layout="random", reward="score", max_turns=30), num_cycles=200)


@pytest.mark.parametrize("num_players", [2, 4])
def test_masks_are_the_legal_set_for_the_acting_agent_and_zeros_for_the_others(num_players):
    env = keltis_v0.env(num_players=num_players)
    env.reset(seed=11)
    state = env.unwrapped.state_
    rng = random.Random(0)
    for _ in range(60):
        acting = env.agent_selection
        assert acting == AGENTS[state.current_player]
        for agent in env.agents:
            mask = env.observe(agent)["action_mask"]
            assert mask.dtype == np.int8 and mask.shape == (187,)
            if agent == acting:
                assert np.flatnonzero(mask).tolist() == state.legal_actions()
            else:
                assert not mask.any()
        env.step(rng.choice(state.legal_actions()))


def test_observation_is_the_encoding_of_the_agents_view():
    env = keltis_v0.env(num_players=3)
    env.reset(seed=5)
    state = env.unwrapped.state_
    encoder = ObservationEncoder(3)
    for seat, agent in enumerate(env.agents):
        obs = env.observe(agent)["observation"]
        assert obs.dtype == np.float32
        assert np.array_equal(obs, encoder.encode(state.view(seat)))


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


def test_no_reward_before_the_end():
    env = keltis_v0.env()
    env.reset(seed=3)
    rng = random.Random(3)
    for _ in range(40):
        assert all(r == 0 for r in env.rewards.values())
        assert not any(env.terminations.values()) and not any(env.truncations.values())
        env.step(rng.choice(env.unwrapped.state_.legal_actions()))


def test_truncation_sets_truncations_not_terminations_and_pays_standings():
    env = keltis_v0.env(max_turns=1)
    env.reset(options={"state": make_state_dict(hands={0: ["yellow 4"]}, wishing={1: 2}, max_turns=1)})
    _play_last_turn(env)
    state = env.unwrapped.state_
    assert state.truncated and not state.terminated
    assert all(env.truncations.values()) and not any(env.terminations.values())
    seen = finish(env)
    assert seen == {"player_0": (-1.0, False, True), "player_1": (1.0, False, True)}


def test_truncation_from_a_seeded_game():
    env = keltis_v0.env(num_players=3, max_turns=4)
    env.reset(seed=8)
    rng = random.Random(1)
    while not any(env.truncations.values()) and not any(env.terminations.values()):
        env.step(rng.choice(env.unwrapped.state_.legal_actions()))
    assert env.unwrapped.state_.turn == 4 and all(env.truncations.values())
    scores = env.unwrapped.state_.scores()
    seen = finish(env)
    best = max(scores)
    for seat, agent in enumerate(AGENTS[:3]):
        reward = seen[agent][0]
        if scores[seat] < best:
            assert reward == -1.0
        else:
            assert reward == (1.0 if scores.count(best) == 1 else 0.0)


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


def test_reset_from_a_record_upto_k():
    config = GameConfig(num_players=2)
    record, state = GameRecord.start(config, seed=21)
    rng = random.Random(21)
    states = [state.clone()]
    for _ in range(30):
        action = rng.choice(state.legal_actions())
        state.apply(action)
        record.actions.append(action)
        states.append(state.clone())
    env = keltis_v0.env()
    for k in (0, 1, 17, 30):
        env.reset(options={"record": record.to_dict(), "upto": k})
        assert env.unwrapped.state_ == states[k]
        assert env.agent_selection == AGENTS[states[k].current_player]
    env.reset(options={"record": record.to_dict()})  # all of it by default
    assert env.unwrapped.state_ == states[-1]


def test_reset_refuses_positions_with_other_options_and_conflicting_options():
    env = keltis_v0.env(num_players=2)
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"state": make_state_dict(3)})
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"state": make_state_dict(2, max_turns=20)})
    with pytest.raises(ValueError, match="either"):
        env.reset(options={"state": make_state_dict(2), "record": {}})
    with pytest.warns(UserWarning, match="unknown reset option"):
        env.reset(seed=1, options={"speed": 3})


def test_reset_seeds_make_games_reproducible():
    a, b = keltis_v0.env(), keltis_v0.env()
    a.reset(seed=99)
    b.reset(seed=99)
    assert a.unwrapped.state_ == b.unwrapped.state_
    a.reset()
    b.reset()  # later resets continue a sequence drawn from the seed
    assert a.unwrapped.state_ == b.unwrapped.state_
    a.reset(seed=100)
    assert a.unwrapped.state_ != b.unwrapped.state_


# ---------------------------------------------------------------------------- illegal actions
def test_illegal_action_with_the_default_wrapper_gives_minus_one_to_the_offender():
    env = keltis_v0.env(num_players=3)
    env.reset(seed=4)
    offender = env.agent_selection
    mask = env.observe(offender)["action_mask"]
    illegal = string_to_action("pass")
    assert mask[illegal] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(illegal)
    assert all(env.terminations.values())
    seen = finish(env)
    assert seen[offender][0] == -1.0
    assert all(reward == 0.0 for agent, (reward, _, _) in seen.items() if agent != offender)
    assert len(seen) == 3


def test_illegal_action_raise_mode_raises_and_changes_nothing():
    env = keltis_v0.env(illegal_action="raise")
    env.reset(seed=4)
    state = env.unwrapped.state_
    before = state.to_dict()
    agent = env.agent_selection
    for text in ("pass", "draw deck", "bonus advance red"):
        with pytest.raises(ActionError, match=f"{text}.*step"):
            env.step(string_to_action(text))
        assert state.to_dict() == before and env.agent_selection == agent
        assert not any(env.terminations.values()) and all(r == 0 for r in env.rewards.values())
    env.step(state.legal_actions()[0])  # the game goes on
    assert state.phase.name in ("DRAW", "BONUS")


def test_raw_env_raises_on_illegal_actions():
    env = keltis_v0.raw_env()
    env.reset(seed=2)
    with pytest.raises(ActionError, match="draw deck"):
        env.step(string_to_action("draw deck"))


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


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"num_players": 5}, ConfigError, "num_players"),
        ({"num_players": 1}, ConfigError, "num_players"),
        ({"max_turns": 0}, ConfigError, "max_turns"),
        ({"tile_layout": "spiral"}, ConfigError, "tile_layout"),
        ({"reward": "points"}, ValueError, "reward must be one of"),
        ({"render_mode": "rgb_array_3d"}, ValueError, "render_mode"),
        ({"illegal_action": "ignore"}, ValueError, "illegal_action"),
        ({"speed": 3}, TypeError, "speed"),
    ],
)
def test_invalid_env_options_raise_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        keltis_v0.env(**kwargs)


def test_reset_from_a_finished_position_pays_every_agent_its_final_reward():
    state = GameState.new_game(GameConfig(num_players=3), seed=11)
    rng = random.Random(0)
    while not state.is_over:
        legal = state.legal_actions()
        state.apply(legal[rng.randrange(len(legal))])
    env = keltis_v0.env(num_players=3)
    env.reset(options={"state": state.to_dict()})
    expected = final_rewards(state.scores(), "win")
    for agent in env.agent_iter():
        _obs, reward, terminated, truncated, _info = env.last()
        assert terminated and not truncated
        assert reward == expected[int(agent.split("_")[1])]
        env.step(None)
    assert env.agents == []
