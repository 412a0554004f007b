"""What the environments take from their callers, refused alike everywhere: bools and
arrays as actions, unknown options, seeds that are not integers, and opponents that are
neither specs nor bots. Every registered game's AEC environment (wrapped and raw) and the
learner view."""

from __future__ import annotations

import re
import warnings
from functools import partial
from typing import Any

import numpy as np
import pytest

import keltis_env  # noqa: F401  (registers every game)
from keltis_env import keltis_dice_v0, keltis_v0
from keltis_env.core.errors import ActionError
from keltis_env.core.game import game_names, get_game
from keltis_env.envs import make_env, make_raw_env
from keltis_env.envs.learner import KeltisLearnerEnv

GAMES = [pytest.param(name, id=name) for name in game_names()]
#: values that are not action ids although Python or numpy can read some of them as 0 or 1
BOOLS = [True, False, np.True_, np.bool_(False), np.array(True), np.array([True])]
#: numpy arrays that hold no single integer: an engine's own check cannot read them
ARRAYS = [np.array([3]), np.array([1, 2]), np.array([[0]]), np.array(3.0), np.array([], dtype=np.int64)]
#: seeds that are not integers (what reset must refuse, saying an integer or None is allowed)
BAD_SEEDS = [[1, 2], (3,), 1.0, 2.5, float("nan"), True, False, "1", b"1", np.float64(2.0), np.array([1, 2]),
             np.array([1]), {"seed": 1}]
INTEGER_SEEDS = [0, 7, np.int64(5), np.uint8(3), np.int32(11), np.array(4)]


def acting_mask(env: Any) -> np.ndarray:
    return env.observe(env.agent_selection)["action_mask"]


def refused_by_reason(env: Any, action: Any, num_actions: int) -> None:
    """``action`` ended the game as an illegal action: every agent terminated, the offender
    -1, the reason naming the action and what action ids are."""
    offender = env.agent_selection
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(action)
    assert all(env.terminations.values())
    info = env.infos[offender]
    assert info["offender"] == offender and info["illegal_action"] is action
    assert info["reason"].startswith(f"action ids are integers 0..{num_actions - 1}, got ")
    assert env.rewards[offender] == -1.0


# ---------------------------------------------------------------------------- bools as actions
@pytest.mark.parametrize("action", BOOLS, ids=repr)
@pytest.mark.parametrize("name", GAMES)
def test_the_aec_env_refuses_bools_as_actions_like_the_learner(name: str, action: Any) -> None:
    game = get_game(name)
    env = make_env(name)
    env.reset(seed=3)
    refused_by_reason(env, action, game.num_actions)
    raw = make_raw_env(name)  # "raise": the ActionError names the bool, nothing changes
    raw.reset(seed=3)
    before = raw.state_.to_dict()
    with pytest.raises(ActionError, match=re.escape(f"action ids are integers 0..{game.num_actions - 1}, got")):
        raw.step(action)
    assert raw.state_.to_dict() == before and not any(raw.terminations.values())
    learner = KeltisLearnerEnv(game=name)
    learner.reset(seed=3)
    _, reward, terminated, _, info = learner.step(action)
    assert terminated and reward == -1.0 and info["reason"].startswith("action ids are integers")


@pytest.mark.parametrize("name", GAMES)
def test_the_aec_env_refuses_true_even_where_action_1_is_legal(name: str) -> None:
    env = make_env(name)
    for seed in range(40):  # a position where action 1 is legal, if the game has one early on
        env.reset(seed=seed)
        if acting_mask(env)[1]:
            break
    refused_by_reason(env, True, get_game(name).num_actions)


@pytest.mark.parametrize("action", ARRAYS, ids=repr)
@pytest.mark.parametrize("name", GAMES)
def test_the_raw_aec_env_refuses_arrays_that_hold_no_single_integer_naming_them(name: str, action: Any) -> None:
    raw = make_raw_env(name, illegal_action="terminate")
    raw.reset(seed=3)
    offender = raw.agent_selection
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw.step(action)
    assert all(raw.terminations.values()) and raw.infos[offender]["reason"].startswith("action ids are integers")


# ---------------------------------------------------------------------------- arrays as learner actions
@pytest.mark.parametrize("action", ARRAYS, ids=repr)
@pytest.mark.parametrize("name", GAMES)
def test_learner_step_with_a_non_scalar_array_ends_the_episode_with_a_reason(name: str, action: Any) -> None:
    env = KeltisLearnerEnv(game=name, seat=0)
    env.reset(seed=1)
    _, reward, terminated, truncated, info = env.step(action)
    assert terminated and not truncated and reward == -1.0
    assert info["illegal_action"] is action and info["seat"] == 0
    assert info["reason"].startswith(f"action ids are integers 0..{get_game(name).num_actions - 1}, got array(")
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)
    strict = KeltisLearnerEnv(game=name, illegal_action="raise")
    strict.reset(seed=1)
    before = strict.state.to_dict()
    with pytest.raises(ActionError, match="action ids are integers"):
        strict.step(action)
    assert strict.state.to_dict() == before


@pytest.mark.parametrize("name", GAMES)
def test_learner_step_with_a_0d_integer_array_is_the_action_it_holds(name: str) -> None:
    a, b = KeltisLearnerEnv(game=name, seat=0), KeltisLearnerEnv(game=name, seat=0)
    a.reset(seed=2)
    b.reset(seed=2)
    legal = int(np.flatnonzero(a.action_masks())[0])
    for kind in (np.int64, np.int8, np.uint16):
        step_a, step_b = a.step(np.array(legal, dtype=kind)), b.step(legal)
        assert np.array_equal(step_a[0], step_b[0]) and step_a[1:4] == step_b[1:4] and "reason" not in step_a[4]
        a.reset(seed=2)
        b.reset(seed=2)


# ---------------------------------------------------------------------------- opponents
@pytest.mark.parametrize("opponents", [None, 3, 2.5, {"random": 1}, b"random"], ids=repr)
def test_learner_opponents_none_or_not_a_spec_is_refused_naming_what_they_may_be(opponents: Any) -> None:
    with pytest.raises(TypeError, match=r"opponents must be an agent spec \(str, e.g. 'random'\), a Bot, or a "
                                        r"non-empty list of them, got"):
        KeltisLearnerEnv(opponents=opponents)


@pytest.mark.parametrize("weights", [3, "1", {"random": 1.0}], ids=repr)
def test_learner_opponent_weights_not_a_list_is_refused_naming_what_they_may_be(weights: Any) -> None:
    with pytest.raises(TypeError, match="opponent_weights must be None"):
        KeltisLearnerEnv(opponents=["random"], opponent_weights=weights)


def test_learner_opponents_as_any_iterable_of_specs_still_work() -> None:
    env = KeltisLearnerEnv(opponents=(s for s in ["random", "heuristic"]), opponent_weights=np.array([1.0, 2.0]))
    assert env.opponent_weights() == {"random": 1.0, "heuristic": 2.0}


# ---------------------------------------------------------------------------- unknown options
def _factories() -> list[Any]:
    out = [pytest.param(keltis_v0.env, "keltis_v0", id="keltis_v0.env"),
           pytest.param(keltis_v0.raw_env, "keltis_v0", id="keltis_v0.raw_env"),
           pytest.param(keltis_dice_v0.env, "keltis_dice_v0", id="keltis_dice_v0.env"),
           pytest.param(keltis_dice_v0.raw_env, "keltis_dice_v0", id="keltis_dice_v0.raw_env")]
    for name in game_names():
        env_name = get_game(name).env_name
        out.append(pytest.param(partial(make_env, name), env_name, id=f"make_env-{name}"))
        out.append(pytest.param(partial(make_raw_env, name), env_name, id=f"make_raw_env-{name}"))
    return out


@pytest.mark.parametrize(("factory", "env_name"), _factories())
def test_unknown_env_options_are_named_with_the_allowed_ones(factory: Any, env_name: str) -> None:
    game = next(get_game(n) for n in game_names() if get_game(n).env_name == env_name)
    for options in ({"foo": 1}, {"foo": 1, "max_turn": 3}, {"tile_layout_": "x", "seed": 3}):
        with pytest.raises(TypeError) as raised:
            factory(**options)
        message = str(raised.value)
        assert all(repr(name) in message for name in options), message
        allowed = message.partition("options are ")[2].split(", ")
        assert allowed == ["num_players", "render_mode", "reward", "illegal_action", "backend", *game.option_names()]
        assert env_name in message


@pytest.mark.parametrize("name", GAMES)
def test_unknown_learner_options_are_named_with_the_allowed_ones(name: str) -> None:
    with pytest.raises(TypeError) as raised:
        KeltisLearnerEnv(game=name, foo=1, opponent="random")
    message = str(raised.value)
    assert "'foo'" in message and "'opponent'" in message and f"game {name!r}" in message
    allowed = message.partition("options are ")[2].split(", ")
    assert {"opponents", "opponent_weights", "seat", "features", "mask_in_info", "num_players"} <= set(allowed)
    assert set(get_game(name).option_names()) <= set(allowed)


# ---------------------------------------------------------------------------- seeds
def _resetters() -> list[Any]:
    out = []
    for name in game_names():
        out.append(pytest.param(partial(make_env, name), id=f"env-{name}"))
        out.append(pytest.param(partial(make_raw_env, name), id=f"raw_env-{name}"))
        out.append(pytest.param(partial(KeltisLearnerEnv, game=name), id=f"learner-{name}"))
    return out


@pytest.mark.parametrize("factory", _resetters())
def test_reset_refuses_a_seed_that_is_not_an_integer_saying_what_is_allowed(factory: Any) -> None:
    env = factory()
    for seed in BAD_SEEDS:
        with pytest.raises(TypeError, match=r"seed must be an integer( >= 0)? or None, got "):
            env.reset(seed=seed)


@pytest.mark.parametrize("factory", _resetters())
def test_reset_takes_integer_seeds_of_any_integer_type(factory: Any) -> None:
    a, b = factory(), factory()
    for seed in INTEGER_SEEDS:
        a.reset(seed=seed)
        b.reset(seed=int(seed))
        state_a = a.unwrapped.state_ if hasattr(a.unwrapped, "state_") else a.state
        state_b = b.unwrapped.state_ if hasattr(b.unwrapped, "state_") else b.state
        assert state_a == state_b


def test_learner_reset_refuses_a_negative_seed_saying_what_is_allowed() -> None:
    with pytest.raises(ValueError, match="seed must be an integer >= 0 or None, got -1"):
        KeltisLearnerEnv().reset(seed=-1)
