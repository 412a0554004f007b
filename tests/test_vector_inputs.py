"""The vector environments take their arguments as the rest of the package does: any
integer type, unknown opponent options refused as the bots refuse them, ``max_turns``
within the compiled rows' range, a seed that is an integer or ``None``, and a sub-
environment index named when it is wrong; each refusal changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from keltis_env.envs.vector import MAX_COMPILED_TURNS, KeltisVectorEnv


def test_num_envs_of_a_numpy_integer_type_is_taken() -> None:
    env = KeltisVectorEnv(np.int64(4))
    assert env.num_envs == 4 and type(env.num_envs) is int
    obs, _info = env.reset(seed=np.uint32(3))
    assert obs.shape[0] == 4


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "4", None])
def test_a_bad_num_envs_is_refused_naming_num_envs(bad: object) -> None:
    with pytest.raises(ValueError, match=r"^num_envs must be an integer >= 1, got "):
        KeltisVectorEnv(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("game", "spec", "option"), [
    ("keltis", "random:x=1", "x"), ("dice", "random:speed=2", "speed"), ("keltis", "heuristic:nope=1", "nope")])
def test_unknown_opponent_options_are_refused_as_the_bots_refuse_them(game: str, spec: str, option: str) -> None:
    with pytest.raises(ValueError, match=f"has no option '{option}'"):
        KeltisVectorEnv(2, game=game, opponents=spec)


def test_opponents_that_are_not_a_spec_string_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^opponents must be an agent spec string"):
        KeltisVectorEnv(2, opponents=["random"])  # type: ignore[arg-type]


def test_a_max_turns_past_the_compiled_rows_is_refused_by_name_without_a_numpy_overflow() -> None:
    with pytest.raises(ValueError, match=rf"^max_turns must be at most {MAX_COMPILED_TURNS} on the compiled core"):
        KeltisVectorEnv(2, max_turns=10**12)
    assert KeltisVectorEnv(2, max_turns=MAX_COMPILED_TURNS).config.max_turns == MAX_COMPILED_TURNS


@pytest.mark.parametrize("bad", [1.7, True, "abc", [1]])
def test_the_sb3_vecenv_seed_takes_an_integer_or_none_and_names_anything_else(bad: object) -> None:
    pytest.importorskip("stable_baselines3")
    from keltis_env.envs.vector_sb3 import KeltisSB3VecEnv

    env = KeltisSB3VecEnv(2)
    with pytest.raises(TypeError, match=r"^seed must be an integer >= 0 or None, got "):
        env.seed(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0 or None, got -1"):
        env.seed(-1)
    env.seed(np.int64(5))
    env.reset()
    assert env.deal_seeds.tolist() == [5, 6]
    env.seed(None)
    env.reset()


@pytest.mark.parametrize("bad", [None, 2, -1, 1.0, "0"])
def test_position_names_the_index_it_takes(bad: object) -> None:
    env = KeltisVectorEnv(2)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"^index must be an integer from 0 to 1 \(a sub-environment\), got "):
        env.position(bad)  # type: ignore[arg-type]
    assert env.position(np.int64(1)).num_players == 2


def test_copy_false_returns_the_environments_own_buffers_rewritten_in_place() -> None:
    env = KeltisVectorEnv(3, copy=False)
    obs, info = env.reset(seed=1)
    obs2, _rewards, _te, _tr, info2 = env.step(np.argmax(info["action_mask"], axis=1))
    assert obs2 is obs and info2["action_mask"] is info["action_mask"]
    copied = KeltisVectorEnv(3)
    obs3, info3 = copied.reset(seed=1)
    obs4, *_rest = copied.step(np.argmax(info3["action_mask"], axis=1))
    assert obs4 is not obs3 and np.array_equal(obs4, obs2)
    with pytest.raises(ValueError, match=r"^copy must be True or False"):
        KeltisVectorEnv(2, copy="no")  # type: ignore[arg-type]
