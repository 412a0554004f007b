"""keltis_env.envs.vector.KeltisVectorEnv: learner games on the compiled core as a Gymnasium
vector environment (next-step auto-reset), checked game by game against the Python engine."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

pytest.importorskip("numba")

from keltis_env.core.game import get_game
from keltis_env.envs.vector import KeltisVectorEnv


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A legal action per game (0 where a game has none: its action is ignored)."""
    return np.argmax(masks * rng.random(masks.shape), axis=1)


@pytest.mark.parametrize(("game", "num_players"), [("keltis", 2), ("keltis", 4), ("dice", 3)])
def test_every_games_observation_and_mask_are_the_python_engines_and_an_ended_game_restarts_next_step(
        game: str, num_players: int) -> None:
    descriptor = get_game(game)
    env = KeltisVectorEnv(6, game=game, num_players=num_players, max_turns=12)
    encoder = descriptor.make_encoder(num_players)
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = env.reset(seed=3)
    rng, ended, restarted = np.random.default_rng(0), np.zeros(6, bool), 0
    for _ in range(80):
        assert obs in env.observation_space
        for g in range(6):
            state = env.position(g)
            seat = g % num_players
            assert np.array_equal(obs[g], encoder.encode(descriptor.live_view(state, seat)))
            if ended[g]:  # the step that ended the episode: its last observation, no legal action
                assert not info["action_mask"][g].any()
            else:
                assert state.current_player == seat and not state.is_over
                assert np.flatnonzero(info["action_mask"][g]).tolist() == state.legal_actions()
        before = ended.copy()
        obs, rewards, terminated, truncated, info = env.step(random_legal(info["action_mask"], rng))
        # the step after an ended episode deals again: reward 0, not done, the learner to move
        assert (rewards[before] == 0).all() and not (terminated | truncated)[before].any()
        restarted += int(before.sum())
        ended = terminated | truncated
        assert (info["final_scores"][~ended] == 0).all()
    assert restarted >= 6


def test_the_same_seed_and_actions_give_the_same_games_and_unseeded_resets_continue_the_sequence() -> None:
    runs = []
    for _ in range(2):
        env = KeltisVectorEnv(4, num_players=3)
        obs, info = env.reset(seed=9)
        trace = [obs]
        rng = np.random.default_rng(1)
        for _ in range(30):
            obs, *_rest, info = env.step(random_legal(info["action_mask"], rng))
            trace.append(obs)
        trace.append(env.reset()[0])  # no seed: the next games of seed 9's sequence
        runs.append(np.stack(trace))
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0][-1], runs[0][0])


def test_an_illegal_action_ends_that_games_episode_with_minus_one() -> None:
    env = KeltisVectorEnv(3)
    _obs, info = env.reset(seed=1)
    actions = np.argmax(info["action_mask"], axis=1)
    actions[1] = np.flatnonzero(~info["action_mask"][1])[0]
    _obs, rewards, terminated, truncated, _info = env.step(actions)
    assert rewards[1] == -1 and terminated[1] and not truncated[1]
    assert not terminated[[0, 2]].any()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"opponents": "ismcts"}, "opponents must be one of 'random', 'heuristic'"),
    ({"game": "toy"}, "the game 'toy' has no compiled core"),
    ({"reward": "points"}, "reward must be one of 'win', 'score', 'shaped'"),
    ({"turn_cap": "stop"}, "turn_cap must be one of 'truncate', 'end'"),
    ({"num_players": 5}, "num_players"),
])
def test_bad_options_are_refused_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KeltisVectorEnv(2, **kwargs)


def test_bad_actions_seeds_and_options_are_refused_by_name_and_change_nothing() -> None:
    env = KeltisVectorEnv(2)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset(seed=2)
    before = [env.position(g).to_dict() for g in range(2)]
    for bad in (np.zeros(3, dtype=np.int64), np.zeros(2, dtype=np.float32), [[0, 1]], "0"):
        with pytest.raises(ValueError, match="actions must be 2 integer action ids"):
            env.step(bad)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        env.reset(seed=-1)
    with pytest.raises(ValueError, match="reset options are not supported"):
        env.reset(options={"state": {}})
    assert [env.position(g).to_dict() for g in range(2)] == before  # nothing was stepped or dealt
