"""What the compiled cores' tests share (tests/test_kernels_keltis.py, tests/test_kernels_dice.py)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from keltis_env.core.kernels import SHAPED
from keltis_env.core.rewards import final_rewards, potentials


def deal_seeds(first: int, count: int) -> np.ndarray:
    """Deal seeds for ``count`` slots of a batch (now, next): slot ``g`` deals from ``first + g``."""
    seeds = np.zeros((count, 2), np.int64)
    seeds[:, 1] = first + np.arange(count)
    return seeds


def check_learner_batch(game: Any, kit: Any, unpack: Callable[..., Any], config: Any, learners: Any, mode: int,
                        rng: random.Random, steps: int) -> int:
    """Step ``learners`` with random legal actions and check every game against the Python
    engine: the learner is to move, its observation and mask; at an episode's end the
    reward paid, the observation returned (``next-step``: the ended game's, and the next
    call deals and pays 0; ``same-step``: the new game's, the ended one's in
    ``final_obs``). Returns the number of episodes that ended."""
    n = config.num_players
    score_at = kit.encoder.index["p0.score"].start
    obs, masks = learners.reset()
    returns, ended = np.zeros(learners.num_games), 0
    for _ in range(steps):
        waiting = learners.pending.copy()
        actions = []
        for g in range(learners.num_games):
            state = unpack(learners.states[g], config)
            seat = int(learners.seats[g])
            assert np.array_equal(obs[g], kit.encoder.encode(game.live_view(state, seat)))
            if waiting[g]:  # next-step: the ended game's last observation, no legal action
                assert not masks[g].any()
                actions.append(0)
                continue
            assert state.current_player == seat and not state.is_over  # the learner is to move
            assert np.flatnonzero(masks[g]).tolist() == state.legal_actions()
            actions.append(rng.choice(state.legal_actions()))
        obs, rewards, terminated, truncated, masks = learners.step(np.array(actions))
        assert not (terminated & truncated).any() and not (waiting & (terminated | truncated)).any()
        assert (rewards[waiting] == 0).all() and not learners.pending[waiting].any()
        returns += rewards
        for g in np.flatnonzero(terminated | truncated):
            scores = learners.final_scores[g, :n].tolist()
            seat = int(learners.seats[g])
            if mode == SHAPED:  # the rewards of a game telescope to its final potential
                assert returns[g] == pytest.approx(potentials(scores)[seat])
            else:
                assert rewards[g] == final_rewards(scores, ("win", "score")[mode])[seat]
            last = obs[g] if learners.next_step else learners.final_obs[g]
            assert last[score_at] == np.float32(scores[seat] / kit.encoder.score_scale)
            assert learners.pending[g] == learners.next_step
            returns[g], ended = 0.0, ended + 1
    return ended
