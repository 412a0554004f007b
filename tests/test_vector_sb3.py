"""keltis_env.envs.vector_sb3.KeltisSB3VecEnv: learner games on the compiled core under SB3's
VecEnv conventions (same-step reset, terminal observations in the infos, action masks for
MaskablePPO)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("sb3_contrib")

from keltis_env.core.game import get_game
from keltis_env.envs.vector_sb3 import KeltisSB3VecEnv


def random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(masks * rng.random(masks.shape), axis=1)


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_an_ended_game_is_dealt_again_in_the_same_step_with_its_last_observation_in_the_info(game: str) -> None:
    descriptor = get_game(game)
    env = KeltisSB3VecEnv(4, game=game, num_players=2, max_turns=10, turn_cap="truncate")
    encoder = descriptor.make_encoder(2)
    score_at = encoder.index["p0.score"].start
    env.seed(5)
    obs = env.reset()
    rng, ended = np.random.default_rng(0), 0
    for _ in range(60):
        for g in range(4):
            state = env.position(g)
            assert state.current_player == g % 2 and not state.is_over  # the learner is always to move
            assert np.array_equal(obs[g], encoder.encode(descriptor.live_view(state, g % 2)))
        env.step_async(random_legal(env.action_masks(), rng))
        obs, rewards, dones, infos = env.step_wait()
        assert rewards.dtype == np.float32 and dones.dtype == bool
        for g in np.flatnonzero(dones):
            info = infos[g]
            seat = g % 2
            assert info["terminal_observation"][score_at] == np.float32(info["scores"][seat] / encoder.score_scale)
            assert info["TimeLimit.truncated"]  # 10 turns: the cap ends these games
            ended += 1
        assert all(not infos[g] for g in np.flatnonzero(~dones))
    assert ended >= 4


def test_a_seed_makes_the_resets_reproducible_and_masks_reach_maskable_ppo() -> None:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported

    first = KeltisSB3VecEnv(4)
    first.seed(3)
    second = KeltisSB3VecEnv(4)
    second.seed(3)
    assert np.array_equal(first.reset(), second.reset())
    assert is_masking_supported(first)
    assert np.array_equal(get_action_masks(first), first.action_masks())
    model = MaskablePPO("MlpPolicy", first, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=2 * 16 * 4)
    assert model.num_timesteps >= 2 * 16 * 4


def test_unknown_attributes_methods_and_bad_actions_are_refused_by_name() -> None:
    env = KeltisSB3VecEnv(2)
    env.reset()
    assert env.get_attr("num_players") == [2, 2] and env.get_attr("render_mode") == [None, None]
    assert env.env_is_wrapped(object) == [False, False]
    with pytest.raises(AttributeError, match="no attribute 'speed'"):
        env.get_attr("speed")
    with pytest.raises(AttributeError, match="no method 'render_all'"):
        env.env_method("render_all")
    with pytest.raises(AttributeError, match="cannot be set"):
        env.set_attr("max_turns", 3)
    with pytest.raises(ValueError, match="actions must be 2 integer action ids"):
        env.step_async(np.zeros(3, dtype=np.int64))
    with pytest.raises(RuntimeError, match="step_async"):
        env.step_wait()
    with pytest.raises(ValueError, match="has no compiled core"):
        KeltisSB3VecEnv(2, game="toy")
