"""A learner view (:class:`keltis_env.envs.learner.KeltisLearnerEnv`) pickles in the middle of an
episode whatever its opponents, the shipped PPO policies included (a policy with the card
game's ``plan`` feature among them), and so does an encoder with features: a copy made
mid-episode goes on exactly as the original when driven by the same actions (observations,
rewards, ends and masks). Pickling is how vectorised environments are sent to worker
processes and how a game is saved."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from keltis_env.core.game import get_game
from keltis_env.envs.learner import KeltisLearnerEnv


def _play(env: KeltisLearnerEnv, actions: list[int] | None, rng: np.random.Generator, steps: int) -> list[tuple]:
    """``steps`` moves (or to the end of the episode): ``actions`` when given, else legal
    moves drawn from ``rng`` (appended to a new list); each move's result."""
    record = []
    for i in range(steps):
        mask = env.action_masks()
        action = actions[i] if actions is not None else int(rng.choice(np.flatnonzero(mask)))
        obs, reward, terminated, truncated, _ = env.step(action)
        record.append((action, obs.copy(), float(reward), terminated, truncated, env.action_masks().copy()))
        if terminated or truncated:
            break
    return record


def _same(a: list[tuple], b: list[tuple]) -> None:
    assert len(a) == len(b)
    for step_a, step_b in zip(a, b, strict=True):
        assert step_a[0] == step_b[0] and step_a[2:5] == step_b[2:5]  # action, reward, terminated, truncated
        np.testing.assert_array_equal(step_a[1], step_b[1])  # observation
        np.testing.assert_array_equal(step_a[5], step_b[5])  # mask


@pytest.mark.parametrize(("game", "opponent", "features"), [
    ("keltis", "ppo:policies/keltis_2p.zip", ()),
    ("keltis", "ppo:policies/keltis_2p.zip", ("plan",)),
    ("dice", "ppo:policies/dice_2p.zip", ()),
    ("dice", "ismcts:net=policies/dice_2p.zip,iterations=8", ()),  # a network-guided search opponent
])
def test_a_learner_with_a_ppo_opponent_pickles_mid_episode_and_the_copy_plays_on_identically(game, opponent,
                                                                                             features):
    env = KeltisLearnerEnv(num_players=2, opponents=opponent, game=game, features=features)
    env.reset(seed=7)
    rng = np.random.default_rng(0)
    assert _play(env, None, rng, 6)  # mid-episode: the opponent has moved
    copy = pickle.loads(pickle.dumps(env))
    rest = _play(env, None, rng, 1000)
    assert rest and (rest[-1][3] or rest[-1][4]), "the episode ran to its end"
    _same(_play(copy, [step[0] for step in rest], rng, len(rest)), rest)


def test_an_encoder_with_the_plan_feature_pickles_and_encodes_the_same():
    encoder = get_game("keltis").make_encoder(2, features=("plan",))
    copy = pickle.loads(pickle.dumps(encoder))
    env = KeltisLearnerEnv(num_players=2, opponents="random", features=("plan",))
    obs, _ = env.reset(seed=1)
    view = env.episode.view()
    np.testing.assert_array_equal(copy.encode(view), encoder.encode(view))
    np.testing.assert_array_equal(copy.encode(view), obs)
    assert copy.encode(view)[encoder.base.size:].any(), "the plan feature has values where the learner is to act"
