"""The wrapped AEC environments' out-of-bounds check answers exactly as PettingZoo's
(Gymnasium's ``Discrete.contains``) for every value, while a plain int skips the
``np.iinfo`` that ``contains`` builds on every call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium import spaces

from keltis_env.core.game import game_names, get_game
from keltis_env.envs import make_env

GAMES = game_names()


def values(num_actions: int) -> list[Any]:
    """Values on and around the bounds, of every integer type, and some that are no integers."""
    return [
        0, 1, num_actions - 1, num_actions, num_actions + 1, -1, -num_actions, 2**63 - 1, 2**63, -(2**63) - 1,
        10**30, np.int64(3), np.int8(-1), np.uint8(2), np.int64(num_actions), np.uint64(2**64 - 1),
        np.array(2), np.array(num_actions), 2.0, "1", [1], None,
    ]


def fresh(name: str) -> Any:
    env = make_env(name, illegal_action="terminate")
    env.reset(seed=4)
    return env


@pytest.mark.parametrize("name", GAMES)
def test_the_wrapper_refuses_exactly_what_discrete_contains_refuses(name: str) -> None:
    num_actions = get_game(name).num_actions
    space = spaces.Discrete(num_actions)
    for value in values(num_actions):
        env = fresh(name)
        inside = space.contains(value)
        if inside:
            env.step(value)  # legal or not, it reaches the environment (which ends the game on an illegal one)
        else:
            with pytest.raises(AssertionError, match="action is not in action space"):
                env.step(value)
            assert env.unwrapped.match.decisions == [0] * env.unwrapped.num_players  # nothing changed


@pytest.mark.parametrize("name", GAMES)
def test_a_legal_plain_int_is_played_and_an_out_of_range_one_is_refused_before_the_environment(name: str) -> None:
    env = fresh(name)
    state = env.unwrapped.state_
    legal = state.legal_actions()[0]
    env.step(legal)
    assert sum(env.unwrapped.match.decisions) == 1
    for bad in (-1, get_game(name).num_actions, 2**64):
        with pytest.raises(AssertionError, match="action is not in action space"):
            env.step(bad)
    assert sum(env.unwrapped.match.decisions) == 1


@pytest.mark.parametrize("name", GAMES)
def test_bools_still_reach_the_environment_and_are_refused_there_by_name(name: str) -> None:
    env = make_env(name, illegal_action="terminate")
    env.reset(seed=1)
    env.step(True)
    illegal = env.unwrapped.match.illegal
    assert illegal is not None and "action ids are integers" in illegal.reason and "True" in illegal.reason
