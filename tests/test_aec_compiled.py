"""The AEC environments' compiled backend (``backend="compiled"``) against the Python one.

A differential test plays random games of every registered game with a compiled core, at
every player count, under every environment option (rewards, illegal-action handling,
turn caps, layouts), with the same actions on both backends (illegal ones, numpy integers
and bools among them), and compares after every step everything an agent loop can read:
each agent's observation and mask, rewards, cumulative rewards, terminations,
truncations, infos, the agent to act and the game's state. The rest checks the option
itself: refused values, ``"auto"``, a game without a compiled core, numba missing.
"""

from __future__ import annotations

import random
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from subprocess_helpers import WITHOUT_NUMBA

import keltis_env  # noqa: F401  (registers every game)
from keltis_env.core.compiled_match import BACKENDS, compiled_kernels, resolve_backend
from keltis_env.core.errors import ActionError
from keltis_env.core.game import game_names, get_game
from keltis_env.envs import make_env, make_raw_env

ROOT = Path(__file__).resolve().parents[1]
#: every registered game with a compiled core for its environment
COMPILED = [name for name in game_names() if compiled_kernels(get_game(name)) is not None]
CASES = [
    pytest.param(name, n, id=f"{name}-{n}p")
    for name in COMPILED
    for n in range(get_game(name).min_players, get_game(name).max_players + 1)
]
#: the layout options of the package's games and the values drawn for them
LAYOUTS: dict[str, tuple[str, tuple[str, ...]]] = {"keltis": ("tile_layout", ("default", "random")),
                                                  "dice": ("bonus_layout", ("default", "random"))}


def draw_options(name: str, rng: random.Random) -> dict[str, Any]:
    """Environment options drawn at random: reward, illegal-action handling, a turn cap or
    the game's own, a layout."""
    options: dict[str, Any] = {"reward": rng.choice(["win", "score", "shaped"]),
                               "illegal_action": rng.choice(["terminate", "raise"])}
    if rng.random() < 0.5:
        options["max_turns"] = rng.randint(1, 40)
    if name in LAYOUTS and LAYOUTS[name][0] in get_game(name).option_names():
        option, values = LAYOUTS[name]
        options[option] = rng.choice(values)
    return options


def seen(env: Any) -> dict[str, Any]:
    """Everything an agent loop reads from ``env`` now, the state as its JSON form."""
    out: dict[str, Any] = {"agents": list(env.agents)}
    for field in ("rewards", "_cumulative_rewards", "terminations", "truncations", "infos"):
        out[field] = dict(getattr(env, field))
    if env.agents:
        out["agent_selection"] = env.agent_selection
        out["last"] = env.last()
    out["observations"] = {agent: env.observe(agent) for agent in env.possible_agents}
    out["state"] = env.unwrapped.state_.to_dict()
    return out


def assert_same(a: Any, b: Any, where: str) -> None:
    """Equal at any depth; numpy arrays by dtype and every bit; floats exactly."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, where
        assert a.tobytes() == b.tobytes(), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b) and a == b, (where, a, b)


def draw_action(env: Any, rng: random.Random, num_actions: int) -> Any:
    """A legal action mostly (sometimes as a numpy integer); now and then an illegal one,
    an id out of range or a bool; ``None`` for an agent that is done."""
    _obs, _reward, terminated, truncated, _info = env.last(observe=False)
    if terminated or truncated:
        return None
    legal = np.flatnonzero(env.observe(env.agent_selection)["action_mask"]).tolist()
    roll = rng.random()
    if roll < 0.01:
        return rng.choice([True, np.bool_(False), num_actions, -1, 2**70])
    if roll < 0.03:
        illegal = [a for a in range(num_actions) if a not in legal]
        return rng.choice(illegal) if illegal else legal[0]
    action = rng.choice(legal)
    return np.int64(action) if roll < 0.1 else action


def step_both(envs: tuple[Any, Any], action: Any, where: str) -> None:
    """``action`` on both environments: the same outcome, or the same error (same type and
    message) on both, after which nothing has changed on either."""
    errors: list[str | None] = []
    for env in envs:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                env.step(action)
            errors.append(None)
        except (ActionError, AssertionError) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    assert errors[0] == errors[1], (where, errors)


def play_both(name: str, num_players: int, seed: int, options: dict[str, Any]) -> int:
    """A random game on both backends from ``seed``, compared after every step; returns the
    steps made."""
    game = get_game(name)
    envs = (make_env(name, num_players=num_players, backend="python", **options),
            make_env(name, num_players=num_players, backend="compiled", **options))
    assert [env.unwrapped.backend for env in envs] == ["python", "compiled"]
    for env in envs:
        env.reset(seed=seed)
    rng = random.Random(seed)
    steps = 0
    while envs[0].agents:
        where = f"{name} {num_players}p seed {seed} {options} step {steps}"
        assert_same(seen(envs[0]), seen(envs[1]), where)
        step_both(envs, draw_action(envs[0], rng, game.num_actions), where)
        steps += 1
    assert_same(seen(envs[0]), seen(envs[1]), f"{name} {num_players}p seed {seed} at the end")
    return steps


@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_both_backends_show_every_agent_the_same_game_at_every_step(name: str, num_players: int) -> None:
    rng = random.Random(f"{name}-{num_players}")
    steps = 0
    for game_index in range(3):
        seed = rng.choice([rng.randrange(2**31), -rng.randrange(2**40), 2**70 + game_index])
        steps += play_both(name, num_players, seed, draw_options(name, rng))
    assert steps > 30


@pytest.mark.parametrize("name", COMPILED)
def test_both_backends_pay_shaped_rewards_alike_through_a_whole_game(name: str) -> None:
    assert play_both(name, 3, seed=12, options={"reward": "shaped", "illegal_action": "raise"}) > 30


@pytest.mark.parametrize("name", COMPILED)
def test_both_backends_start_alike_from_a_position_and_from_a_record(name: str) -> None:
    game = get_game(name)
    record, state = game.record_cls.start(game.make_config(num_players=3), seed=5)
    rng = random.Random(5)
    for _ in range(25):
        if state.is_over:
            break
        action = rng.choice(state.legal_actions())
        state.apply(action)
        record.actions.append(action)
    for options in ({"state": state.to_dict()}, {"record": record.to_dict(), "upto": 11}):
        envs = [make_env(name, num_players=3, backend=backend) for backend in ("python", "compiled")]
        for env in envs:
            env.reset(options=options)
        assert_same(seen(envs[0]), seen(envs[1]), str(list(options)))
        step_both(envs, int(np.flatnonzero(envs[0].observe(envs[0].agent_selection)["action_mask"])[0]), "")
        assert_same(seen(envs[0]), seen(envs[1]), str(list(options)))


@pytest.mark.parametrize("name", COMPILED)
def test_the_compiled_backends_state_is_a_copy_that_does_not_change_the_game(name: str) -> None:
    env = make_raw_env(name, backend="compiled")
    env.reset(seed=3)
    state = env.state_
    before = state.to_dict()
    state.apply(state.legal_actions()[0])
    assert env.state_.to_dict() == before and env.state_ is not env.state_


@pytest.mark.parametrize("name", COMPILED)
def test_the_compiled_backend_renders_the_same_board(name: str) -> None:
    boards = []
    for backend in ("python", "compiled"):
        env = make_raw_env(name, render_mode="ansi", backend=backend)
        env.reset(seed=9)
        for _ in range(5):
            env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))
        boards.append(env.render())
    assert boards[0] == boards[1] and boards[0]


@pytest.mark.parametrize("name", COMPILED)
def test_a_bad_backend_is_refused_in_one_line_naming_the_allowed_ones(name: str) -> None:
    for bad in ("numba", "", None, 1):
        with pytest.raises(ValueError, match=r"^backend must be one of 'python', 'compiled', 'auto', got ") as raised:
            make_env(name, backend=bad)
        assert "\n" not in str(raised.value)


@pytest.mark.parametrize("name", COMPILED)
def test_auto_runs_on_the_compiled_core_where_numba_is_installed(name: str) -> None:
    assert make_env(name, backend="auto").unwrapped.backend == "compiled"
    assert make_env(name).unwrapped.backend == "python"  # the default
    assert set(BACKENDS) == {"python", "compiled", "auto"}


def test_a_game_without_a_compiled_core_is_refused_by_name_and_auto_runs_it_in_python() -> None:
    class OtherState:
        TRUNCATED = 3

    game = replace(get_game("dice"), name="other", state_cls=OtherState, compiled=None)  # it declares none
    assert compiled_kernels(game) is None
    with pytest.raises(ValueError, match=r"^the game 'other' has no compiled core for its environment .*"
                                         r"use backend='python'$"):
        resolve_backend(game, "compiled")
    assert resolve_backend(game, "auto") == "python"
    assert resolve_backend(game, "python") == "python"


def test_without_numba_compiled_is_refused_naming_the_extra_and_auto_runs_in_python() -> None:
    code = WITHOUT_NUMBA + (
        "from keltis_env.envs import make_env\n"
        "print(make_env('dice', backend='auto').unwrapped.backend)\n"
        "make_env('dice', backend='compiled')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode != 0 and out.stdout.strip() == "python"
    last = out.stderr.strip().splitlines()[-1]
    assert last == "ImportError: the compiled kernels need numba (the 'fast' extra): pip install 'keltis-rl[fast]'"
