"""One conformance suite for every registered game (OpenSpiel's random-simulation test).

Every check here runs for each game of :func:`keltis_env.core.game.game_names` and each
player count of its descriptor (``min_players..max_players``), from the descriptor's
declared facts alone: its PettingZoo environment (``keltis_env.make_env(name)``) passes
PettingZoo's ``api_test`` and ``seed_test``; random playouts through that environment
keep the invariants every game promises (legal set non-empty until the end and equal
to the acting agent's mask, clone and dict round trips at every step, bounded length,
scores within the declared bounds, no hidden information in a player's view or
observation); games are determined by their seed; records replay; the environment's
reset, rewards, truncation and illegal-action handling behave the same for every game.
A game's own rules are tested in its scenario and invariant files.

Every check of an environment runs on both of its backends (``backend="python"`` and
``backend="compiled"``, the compiled core; skipped where numba is not installed or a game
has no compiled core). The compiled backend's ``state_`` is a copy made at every read, so
these checks read it again after every step.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
import re
import warnings
from collections.abc import Callable
from functools import partial
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, seed_test

import keltis_env  # noqa: F401  (registers every game)
from keltis_env.bots import bot_names
from keltis_env.core.errors import ActionError, ConfigError
from keltis_env.core.game import GameDescriptor, game_names, get_game
from keltis_env.core.rewards import final_rewards
from keltis_env.envs import make_env, raw_env_class

#: (game, number of players) for every registered game and every player count it allows
CASES = [
    pytest.param(name, n, id=f"{name}-{n}p")
    for name in game_names()
    for n in range(get_game(name).min_players, get_game(name).max_players + 1)
]
GAMES = [pytest.param(name, id=name) for name in game_names()]
#: the environments' backends: the Python engine, and the compiled core where numba is installed
HAVE_NUMBA = importlib.util.find_spec("numba") is not None
BACKENDS = [
    pytest.param("python", id="python"),
    pytest.param("compiled", id="compiled",
                 marks=pytest.mark.skipif(not HAVE_NUMBA, reason="the compiled backend needs numba (the fast extra)")),
]
with_backends = pytest.mark.parametrize("backend", BACKENDS)

#: few whole games per case keep the suite at seconds on a 2-core machine
PLAYOUTS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: any integer seeds a game, negative or wider than 64 bits
seeds = st.integers(-(2**70), 2**70)
#: the game's own limit (real endings), or a short one (truncation)
max_turns_options = st.one_of(st.none(), st.integers(1, 30))


def env_module(game: GameDescriptor, backend: str = "python") -> SimpleNamespace:
    """The game's environment factories on ``backend``, ``env`` and ``raw_env``, from its
    descriptor alone (a game of another distribution has no entry module of its own); the
    test is skipped for a game without a compiled core."""
    if backend == "compiled":
        from keltis_env.core.compiled_match import compiled_kernels

        if compiled_kernels(game) is None:
            pytest.skip(f"the game {game.name!r} has no compiled core")
    return SimpleNamespace(env=partial(make_env, game, backend=backend),
                           raw_env=partial(raw_env_class(game), backend=backend))


def with_a_backend(backend: str) -> list[str]:
    """The registered games that run on ``backend`` (a compiled backend needs a compiled core)."""
    if backend != "compiled":
        return game_names()
    from keltis_env.core.compiled_match import compiled_kernels

    return [name for name in game_names() if compiled_kernels(get_game(name)) is not None]


def agent(seat: int) -> str:
    return f"player_{seat}"


def env_options(max_turns: int | None) -> dict[str, Any]:
    return {} if max_turns is None else {"max_turns": max_turns}


def finish(env: Any) -> dict[str, tuple[float, bool, bool]]:
    """Step every agent out of a finished game; what each one saw in ``last()``."""
    seen = {}
    for name in env.agent_iter():
        _, reward, terminated, truncated, _ = env.last()
        assert terminated or truncated, f"{name} is still playing"
        seen[name] = (reward, terminated, truncated)
        env.step(None)
    assert env.agents == []
    return seen


def play_randomly(state: Any, play_seed: int, before_each: Callable[[Any], None] | None = None) -> Any:
    """Play ``state`` to its end with random legal actions drawn from ``play_seed``;
    ``before_each(state)`` is called before every action."""
    rng = random.Random(play_seed)
    while not state.is_over:
        if before_each is not None:
            before_each(state)
        state.apply(rng.choice(state.legal_actions()))
    return state


# ---------------------------------------------------------------------------- declared facts
@with_backends
@pytest.mark.parametrize("name", GAMES)
def test_the_descriptor_its_environment_and_its_package_agree(name: str, backend: str) -> None:
    game = get_game(name)
    module = env_module(game, backend)
    raw_env = raw_env_class(game)
    package = importlib.import_module(game.state_cls.__module__.rpartition(".")[0])
    assert raw_env.game is game and package.GAME is game
    assert raw_env.metadata["name"] == game.env_name
    assert game.num_actions == package.NUM_ACTIONS and package.GameRecord is game.record_cls
    assert package.GameConfig is game.config_cls and package.GameState is game.state_cls
    assert 2 <= game.min_players <= game.max_players and game.min_score < game.max_score
    assert game.information in ("perfect", "imperfect")
    assert {"random", "ppo", "rllib"} <= set(bot_names(game.name))
    # the descriptor alone makes the environment, by the game's name or its environment's
    assert type(make_env(game.name).unwrapped) is type(make_env(game.env_name).unwrapped) is raw_env
    # the action ranges cover every id once, and every id reads back from its text
    covered = sorted(i for start, stop in game.action_ranges.values() for i in range(start, stop))
    assert covered == list(range(game.num_actions))
    texts = [game.action_to_string(a) for a in range(game.num_actions)]
    assert len(set(texts)) == game.num_actions
    assert [game.string_to_action(t) for t in texts] == list(range(game.num_actions))
    for n in range(game.min_players, game.max_players + 1):
        env = module.env(num_players=n)
        assert env.unwrapped.backend == backend
        assert env.possible_agents == [agent(s) for s in range(n)]
        assert env.action_space(agent(0)).n == game.num_actions
        space = env.observation_space(agent(n - 1))
        assert space["observation"].shape == (game.make_encoder(n).size,)
        assert space["action_mask"].shape == (game.num_actions,)


# ---------------------------------------------------------------------------- PettingZoo's tests
@with_backends
@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_pettingzoo_api_test(name: str, num_players: int, backend: str) -> None:
    api_test(env_module(get_game(name), backend).env(num_players=num_players), num_cycles=1000)


@with_backends
@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_pettingzoo_seed_test(name: str, num_players: int, backend: str) -> None:
    module = env_module(get_game(name), backend)
    seed_test(lambda: module.env(num_players=num_players), num_cycles=500)


@with_backends
@pytest.mark.parametrize("name", GAMES)
def test_api_test_on_the_raw_env_with_score_rewards_and_short_games(name: str, backend: str) -> None:
    game = get_game(name)
    raw = env_module(game, backend).raw_env(num_players=game.max_players, reward="score", max_turns=30)
    api_test(raw, num_cycles=300)


# ---------------------------------------------------------------------------- random playouts
# The engine-level checks take a game's descriptor and a state, so that a game's own
# invariant tests run them on positions and options of their own as well.
_ENCODERS: dict[tuple[str, int], Any] = {}


def encoder_of(game: GameDescriptor, num_players: int) -> Any:
    key = (game.name, num_players)
    if key not in _ENCODERS:
        _ENCODERS[key] = game.make_encoder(num_players)
    return _ENCODERS[key]


def check_every_step(game: GameDescriptor, state: Any, rng: random.Random, observations: bool = True) -> list[int]:
    """Cheap invariants of a running game, checked before every decision; returns the
    legal set. ``observations``: check the encoder's mask and that every seat's observation
    lies in the declared box (an environment's own check, :func:`check_env_step`, does it
    too)."""
    legal = state.legal_actions()
    assert legal, "no legal action before the end of the game"
    assert legal == sorted(set(legal)) and legal[0] >= 0 and legal[-1] < game.num_actions
    assert all(game.min_score <= s <= game.max_score for s in state.scores())
    if observations:
        encoder = encoder_of(game, state.num_players)
        mask = encoder.mask(legal)
        assert mask.dtype == np.int8 and np.flatnonzero(mask).tolist() == legal
        for seat in range(state.num_players):
            obs = encoder.encode(game.live_view(state, seat))
            assert obs.dtype == np.float32 and obs.shape == (encoder.size,)
            assert game.obs_low <= obs.min() and obs.max() <= game.obs_high
    # Clone and dict round trips: equal, JSON-safe.
    data = state.to_dict()
    assert state.clone() == state
    rebuilt = game.state_from_dict(json.loads(json.dumps(data)))
    assert rebuilt == state and rebuilt.to_dict() == data
    # An illegal action raises the engine's error, naming the action and why, and
    # changes nothing.
    allowed = set(legal)
    illegal = [a for a in range(game.num_actions) if a not in allowed]
    if illegal:
        action = rng.choice(illegal)
        text = re.escape(f"({game.action_to_string(action)})")
        with pytest.raises(ActionError, match=f"{text}.*{re.escape(state.illegal_reason(action))}") as raised:
            state.apply(action)
        assert str(action) in str(raised.value)
        assert state.to_dict() == data
    return legal


def check_sampled_step(game: GameDescriptor, state: Any, rng: random.Random) -> list[Any]:
    """Costly invariants, at a sample of decisions (the game may be over). Returns, per
    seat, a state redrawn from that seat's view: it differs from ``state`` only in what
    the seat cannot know."""
    n = state.num_players
    legal = state.legal_actions()
    assert legal == [a for a in range(game.num_actions) if state.illegal_reason(a) is None]
    encoder = encoder_of(game, n)
    others = []
    for seat in range(n):
        view = state.view(seat)
        obs = encoder.encode(view)
        # The mask is the legal set for the seat to act, all zeros for every other seat.
        acting = seat == state.current_player and not state.is_over
        assert np.flatnonzero(encoder.mask(view.legal_actions)).tolist() == (legal if acting else [])
        # A zero-copy live view encodes like the view (with this encoder's caches and
        # with a fresh encoder).
        assert np.array_equal(encoder.encode(game.live_view(state, seat)), obs)
        assert np.array_equal(game.make_encoder(n).encode(game.live_view(state, seat)), obs)
        # Nothing hidden from the player shows in the view or the observation: a state
        # that differs only in what the player cannot know (redrawn from the view) gives
        # the same view and observation.
        other = game.sample_state(view, rng)
        assert game.state_from_dict(other.to_dict()) == other  # the redraw is a valid state
        assert other.view(seat) == view
        assert np.array_equal(encoder.encode(game.live_view(other, seat)), obs)
        others.append(other)
    if legal:
        # Clones are independent of the original, both ways; a rebuilt state carries
        # on exactly like the original.
        data = state.to_dict()
        original, copy = state.clone(), state.clone()
        action = rng.choice(legal)
        copy.apply(action)
        assert state.to_dict() == data, "changing a clone changed the original"
        rebuilt = game.state_from_dict(data)
        rebuilt.apply(action)
        assert rebuilt == copy
        snapshot = copy.to_dict()
        original.apply(legal[-1] if action == legal[0] else legal[0])
        assert copy.to_dict() == snapshot, "changing the original changed a clone"
    return others


def check_env_step(game: GameDescriptor, env: Any, state: Any, legal: list[int]) -> None:
    """The environment before a decision: the acting agent's mask is the legal set,
    every other mask is zeros, observations lie in the declared space, nothing is paid."""
    acting = agent(state.current_player)
    assert env.agent_selection == acting
    for name in env.agents:
        obs = env.observe(name)
        mask = obs["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (game.num_actions,)
        assert np.flatnonzero(mask).tolist() == (legal if name == acting else [])
        assert obs["observation"].dtype == np.float32
        assert env.observation_space(name).contains(obs)
    assert all(r == 0 for r in env.rewards.values())
    assert not any(env.terminations.values()) and not any(env.truncations.values())


def check_env_sampled(game: GameDescriptor, env: Any, other_env: Any, state: Any, others: list[Any]) -> None:
    """Each agent's observation is the encoding of its view, and an environment reset to
    a state redrawn from that view shows the agent the same observation and mask."""
    encoder = encoder_of(game, state.num_players)
    for seat, other in enumerate(others):
        mine = env.observe(agent(seat))
        assert np.array_equal(mine["observation"], encoder.encode(state.view(seat)))
        other_env.reset(options={"state": other.to_dict()})
        theirs = other_env.observe(agent(seat))
        assert np.array_equal(mine["observation"], theirs["observation"])
        assert np.array_equal(mine["action_mask"], theirs["action_mask"])


def check_end(game: GameDescriptor, state: Any, decisions: int) -> None:
    """A finished game: no legal action, one kind of end, within the declared bounds."""
    config = state.config
    assert state.is_over and state.legal_actions() == []
    assert all(not state.view(p).legal_actions for p in range(state.num_players))
    assert state.terminated != state.truncated
    assert state.turn <= config.max_turns and state.truncated == (state.turn == config.max_turns)
    assert decisions <= game.max_game_length(config)
    assert all(game.min_score <= s <= game.max_score for s in state.scores())
    assert game.state_from_dict(state.to_dict()) == state


def check_env_end(env: Any, state: Any) -> None:
    """Every agent is told the end and the final scores, and collects its final reward."""
    scores = state.scores()
    assert all(env.terminations.values()) == state.terminated
    assert all(env.truncations.values()) == state.truncated
    for seat, name in enumerate(env.agents):
        assert env.infos[name] == {"score": scores[seat], "scores": scores}
    rewards = final_rewards(scores, "win")
    seen = finish(env)
    assert [seen[agent(s)][0] for s in range(state.num_players)] == rewards
    assert sum(rewards) <= 0


def differs(state: Any, others: list[Any]) -> int:
    """How many of the redrawn states differ from ``state``."""
    data = state.to_dict()
    return sum(other.to_dict() != data for other in others)


@with_backends
@pytest.mark.parametrize(("name", "num_players"), CASES)
@PLAYOUTS
@given(seed=seeds, play_seed=seeds, max_turns=max_turns_options)
def test_random_playouts_keep_every_invariant(
    name: str, num_players: int, backend: str, seed: int, play_seed: int, max_turns: int | None
) -> None:
    game = get_game(name)
    module = env_module(game, backend)
    env = module.env(num_players=num_players, illegal_action="raise", **env_options(max_turns))
    other_env = module.env(num_players=num_players, **env_options(max_turns))
    env.reset(seed=seed)
    state = env.unwrapped.state_
    bound = game.max_game_length(state.config)
    rng = random.Random(play_seed)
    check_rng = random.Random(seed)
    decisions = redrawn_differently = 0
    while not state.is_over:
        legal = check_every_step(game, state, check_rng, observations=False)
        check_env_step(game, env, state, legal)
        if decisions % 13 == 0:
            others = check_sampled_step(game, state, check_rng)
            check_env_sampled(game, env, other_env, state, others)
            redrawn_differently += differs(state, others)
        env.step(rng.choice(legal))
        state = env.unwrapped.state_  # the compiled backend's is a copy, made at every read
        decisions += 1
        assert decisions <= bound, f"more decisions than max_game_length ({bound})"
    others = check_sampled_step(game, state, check_rng)
    check_env_sampled(game, env, other_env, state, others)
    redrawn_differently += differs(state, others)
    # sample_state did redraw something, so the checks above compared different states
    assert redrawn_differently, "every state redrawn from a view equals the real one: the test compared nothing"
    check_end(game, state, decisions)
    check_env_end(env, state)


# ---------------------------------------------------------------------------- determinism
@pytest.mark.parametrize(("name", "num_players"), CASES)
@settings(max_examples=4, deadline=None)
@given(seed=seeds, play_seed=seeds, max_turns=max_turns_options)
def test_same_seed_same_game_whatever_the_global_random_generators_do(
    name: str, num_players: int, seed: int, play_seed: int, max_turns: int | None
) -> None:
    game = get_game(name)

    def trajectory(disturb: bool) -> list[dict[str, Any]]:
        states: list[dict[str, Any]] = []

        def note(state: Any) -> None:
            states.append(state.to_dict())
            if disturb:
                random.random()
                random.seed(len(states))
                np.random.random()
                np.random.seed(len(states) % 1000)

        state = game.new_state(game.make_config(num_players=num_players, **env_options(max_turns)), seed)
        final = play_randomly(state, play_seed, note).to_dict()
        return [*states, final]

    random.seed(1)
    first = trajectory(disturb=False)
    random.seed(2)
    np.random.seed(3)
    assert trajectory(disturb=True) == first


@pytest.mark.parametrize(("name", "num_players"), CASES)
@settings(max_examples=3, deadline=None)
@given(seed=seeds, max_turns=max_turns_options, cut=st.integers(0, 400))
def test_clones_and_rebuilt_states_continue_identically(
    name: str, num_players: int, seed: int, max_turns: int | None, cut: int
) -> None:
    game = get_game(name)
    state = game.new_state(game.make_config(num_players=num_players, **env_options(max_turns)), seed)
    rng = random.Random(seed)
    for _ in range(cut):
        if state.is_over:
            break
        state.apply(rng.choice(state.legal_actions()))
    copies = [state.clone(), game.state_from_dict(state.to_dict())]

    def play_on(s: Any) -> list[dict[str, Any]]:
        choices = random.Random(seed + 1)
        out = [s.to_dict()]
        while not s.is_over:
            s.apply(choices.choice(s.legal_actions()))
            out.append(s.to_dict())
        return out

    expected = play_on(state)
    for copy in copies:
        assert play_on(copy) == expected


@with_backends
@pytest.mark.parametrize("name", GAMES)
def test_reset_seeds_make_games_reproducible(name: str, backend: str) -> None:
    module = env_module(get_game(name), backend)
    a, b = module.env(), module.env()
    a.reset(seed=99)
    random.seed(5)
    np.random.seed(5)
    b.reset(seed=99)
    assert a.unwrapped.state_ == b.unwrapped.state_
    a.reset()
    b.reset()  # later resets continue a sequence drawn from the seed
    assert a.unwrapped.state_ == b.unwrapped.state_
    a.reset(seed=100)
    assert a.unwrapped.state_ != b.unwrapped.state_


# ---------------------------------------------------------------------------- records
@pytest.mark.parametrize(("name", "num_players"), CASES)
@settings(max_examples=3, deadline=None)
@given(seed=seeds, play_seed=seeds, max_turns=max_turns_options, cut=st.floats(0, 1))
def test_game_record_replay_reproduces_the_identical_state(
    name: str, num_players: int, seed: int, play_seed: int, max_turns: int | None, cut: float
) -> None:
    game = get_game(name)
    config = game.make_config(num_players=num_players, **env_options(max_turns))
    record, state = game.record_cls.start(config, seed)
    rng = random.Random(play_seed)
    while not state.is_over:
        action = rng.choice(state.legal_actions())
        state.apply(action)
        record.actions.append(action)
    upto = int(cut * len(record.actions))
    middle = game.new_state(config, seed)
    for action in record.actions[:upto]:
        middle.apply(action)
    assert record.replay() == state
    assert record.replay().to_dict() == state.to_dict()
    assert record.replay(upto) == middle
    loaded = game.record_cls.from_dict(json.loads(json.dumps(record.to_dict())))
    assert loaded.replay() == state
    # A record may also start from an explicit position.
    from_middle = game.record_cls(config=config, start_state=middle.to_dict(), actions=record.actions[upto:])
    assert from_middle.replay() == state


@with_backends
@pytest.mark.parametrize("name", GAMES)
def test_reset_from_a_record_upto_k(name: str, backend: str) -> None:
    game = get_game(name)
    record, state = game.record_cls.start(game.make_config(num_players=2), seed=21)
    rng = random.Random(21)
    states = [state.clone()]
    for _ in range(40):  # or to the end of a shorter game
        if state.is_over:
            break
        action = rng.choice(state.legal_actions())
        state.apply(action)
        record.actions.append(action)
        states.append(state.clone())
    env = env_module(game, backend).env()
    for k in sorted({0, 1, 17, len(record.actions)} & set(range(len(states)))):
        env.reset(options={"record": record.to_dict(), "upto": k})
        assert env.unwrapped.state_ == states[k]
        assert env.agent_selection == agent(states[k].current_player)
    env.reset(options={"record": record.to_dict()})  # all of it by default
    assert env.unwrapped.state_ == states[-1]


# ---------------------------------------------------------------------------- reset options
@with_backends
@pytest.mark.parametrize("name", GAMES)
def test_reset_refuses_positions_with_other_options_and_conflicting_options(name: str, backend: str) -> None:
    game = get_game(name)
    env = env_module(game, backend).env(num_players=2)

    def position(**options: Any) -> dict[str, Any]:
        return game.new_state(game.make_config(**options), seed=1).to_dict()

    with pytest.raises(ValueError, match="options"):
        env.reset(options={"state": position(num_players=3)})
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"state": position(num_players=2, max_turns=20)})
    with pytest.raises(ValueError, match="either"):
        env.reset(options={"state": position(num_players=2), "record": {}})
    with pytest.warns(UserWarning, match="unknown reset option"):
        env.reset(seed=1, options={"speed": 3})


@with_backends
@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_reset_from_a_finished_position_pays_every_agent_its_final_reward(name: str, num_players: int,
                                                                         backend: str) -> None:
    game = get_game(name)
    state = play_randomly(game.new_state(game.make_config(num_players=num_players), seed=11), play_seed=0)
    env = env_module(game, backend).env(num_players=num_players)
    env.reset(options={"state": state.to_dict()})
    expected = final_rewards(state.scores(), "win")
    for name_ in env.agent_iter():
        _obs, reward, terminated, truncated, _info = env.last()
        assert terminated and not truncated
        assert reward == expected[int(name_.split("_")[1])]
        env.step(None)
    assert env.agents == []


# ---------------------------------------------------------------------------- truncation
@with_backends
@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_truncation_from_a_seeded_game_pays_the_standings(name: str, num_players: int, backend: str) -> None:
    env = env_module(get_game(name), backend).env(num_players=num_players, max_turns=4)
    env.reset(seed=8)
    rng = random.Random(1)
    state = env.unwrapped.state_
    while not state.is_over:
        env.step(rng.choice(state.legal_actions()))
        state = env.unwrapped.state_
    assert state.truncated and state.turn == 4
    assert all(env.truncations.values()) and not any(env.terminations.values())
    scores = state.scores()
    seen = finish(env)
    best = max(scores)
    for seat in range(num_players):
        reward, terminated, truncated = seen[agent(seat)]
        assert truncated and not terminated
        if scores[seat] < best:
            assert reward == -1.0
        else:
            assert reward == (1.0 if scores.count(best) == 1 else 0.0)


# ---------------------------------------------------------------------------- illegal actions
@with_backends
@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_illegal_action_with_the_default_wrapper_gives_minus_one_to_the_offender(name: str, num_players: int,
                                                                                 backend: str) -> None:
    game = get_game(name)
    env = env_module(game, backend).env(num_players=num_players)
    env.reset(seed=4)
    offender = env.agent_selection
    mask = env.observe(offender)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(illegal)
    assert all(env.terminations.values())
    seen = finish(env)
    assert seen[offender][0] == -1.0 and len(seen) == num_players
    assert all(reward == 0.0 for name_, (reward, _, _) in seen.items() if name_ != offender)


@with_backends
@pytest.mark.parametrize("name", GAMES)
@pytest.mark.parametrize("wrapped", [True, False], ids=["env-raise", "raw_env"])
def test_illegal_actions_raise_naming_the_action_and_change_nothing(name: str, wrapped: bool, backend: str) -> None:
    game = get_game(name)
    module = env_module(game, backend)
    env = module.env(illegal_action="raise") if wrapped else module.raw_env()
    env.reset(seed=4)
    for _ in range(3):  # at several steps of the game
        state = env.unwrapped.state_
        before = state.to_dict()
        acting = env.agent_selection
        legal = state.legal_actions()
        for action in [a for a in range(game.num_actions) if a not in legal][::7]:
            text = re.escape(f"({game.action_to_string(action)})")
            with pytest.raises(ActionError, match=f"{text}.*{re.escape(state.illegal_reason(action))}"):
                env.step(action)
            assert env.unwrapped.state_.to_dict() == before and env.agent_selection == acting
            assert not any(env.terminations.values()) and all(r == 0 for r in env.rewards.values())
        env.step(legal[0])  # the game goes on
        assert env.unwrapped.state_.to_dict() != before


# ---------------------------------------------------------------------------- options
@with_backends
@pytest.mark.parametrize("name", GAMES)
def test_invalid_env_options_raise_clear_errors(name: str, backend: str) -> None:
    game = get_game(name)
    module = env_module(game, backend)
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"num_players": game.max_players + 1}, ConfigError, "num_players"),
        ({"num_players": game.min_players - 1}, ConfigError, "num_players"),
        ({"max_turns": 0}, ConfigError, "max_turns"),
        ({"reward": "points"}, ValueError, "reward must be one of"),
        ({"render_mode": "rgb_array_3d"}, ValueError, "render_mode"),
        ({"illegal_action": "ignore"}, ValueError, "illegal_action"),
        ({"speed": 3}, TypeError, "speed"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            module.env(**kwargs)


# ---------------------------------------------------------------------------- pickling
def observed(env: Any) -> dict[str, Any]:
    """Everything an agent loop reads from an environment, at this moment."""
    seen: dict[str, Any] = {"agents": list(env.agents)}
    if env.agents:
        seen["agent_selection"] = env.agent_selection
        seen["last"] = env.last()
    for field in ("rewards", "terminations", "truncations", "infos", "_cumulative_rewards"):
        seen[field] = dict(getattr(env, field))
    seen["observations"] = {name: env.observe(name) for name in env.possible_agents}
    return seen


def assert_same(a: Any, b: Any) -> None:
    """Equal, numpy arrays compared by dtype and value, at any depth."""
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b, (a, b)


def play_both(original: Any, copy: Any, play_seed: int, steps: int | None = None) -> int:
    """Drive ``original`` and ``copy`` with the same actions (legal ones drawn from the
    original's mask, ``None`` for a finished agent), comparing what each shows before every
    step; ``steps`` at most (to the end of the game when ``None``). Returns the steps made."""
    rng = random.Random(play_seed)
    made = 0
    while original.agents and (steps is None or made < steps):
        seen = observed(original)
        assert_same(seen, observed(copy))
        _, _, terminated, truncated, _ = seen["last"]
        mask = seen["observations"][seen["agent_selection"]]["action_mask"]
        action = None if terminated or truncated else rng.choice(np.flatnonzero(mask).tolist())
        original.step(action)
        copy.step(action)
        made += 1
    assert_same(observed(original), observed(copy))
    return made


def advance(env: Any, play_seed: int, steps: int | None) -> None:
    """``steps`` legal actions (to the end of the game when ``None``, before the agents step
    out of it), every observation taken before each."""
    rng = random.Random(play_seed)
    while not (state := env.unwrapped.state_).is_over and (steps is None or steps > 0):
        observed(env)
        env.step(rng.choice(state.legal_actions()))
        steps = None if steps is None else steps - 1


@with_backends
@pytest.mark.parametrize("when", ["fresh", "mid-game", "at-the-end"])
@pytest.mark.parametrize(("name", "num_players"), CASES)
def test_the_wrapped_environment_pickles_and_the_copy_goes_on_identically(name: str, num_players: int,
                                                                           when: str, backend: str) -> None:
    import pickle

    from pettingzoo.utils import wrappers

    env = env_module(get_game(name), backend).env(num_players=num_players, max_turns=60)
    # the wrappers keep PettingZoo's classes and names, and pickle finds them by name
    assert isinstance(env, wrappers.OrderEnforcingWrapper) and isinstance(env.env, wrappers.AssertOutOfBoundsWrapper)
    assert type(env).__name__ == "OrderEnforcingWrapper" and type(env.env).__name__ == "AssertOutOfBoundsWrapper"
    assert pickle.loads(pickle.dumps(type(env))) is type(env)
    assert pickle.loads(pickle.dumps(type(env.env))) is type(env.env)
    if when != "fresh":
        env.reset(seed=17)
        advance(env, play_seed=3, steps=None if when == "at-the-end" else 3)
        assert env.unwrapped.state_.is_over == (when == "at-the-end")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.unwrapped is not env.unwrapped and str(copy) == str(env)
    assert copy.unwrapped.backend == env.unwrapped.backend == backend
    if when == "fresh":
        for e in (env, copy):
            with pytest.raises(AttributeError, match="before reset"):
                e.agent_selection  # noqa: B018  (the order-enforcing wrapper still refuses it)
            e.reset(seed=17)
    assert copy.unwrapped.state_ == env.unwrapped.state_
    play_both(env, copy, play_seed=4)
    for e in (env, copy):  # the copy's seed sequence is the original's
        e.reset()
    play_both(env, copy, play_seed=5)


@with_backends
def test_environments_pickled_mid_game_go_on_identically_in_a_new_process(tmp_path: Any, backend: str) -> None:
    """What a vectoriser that spawns processes does: the copy is loaded where nothing was
    imported yet (another distribution's game is found again through its entry point)."""
    import pickle
    import subprocess
    import sys

    envs = {}
    for name in with_a_backend(backend):
        env = env_module(get_game(name), backend).env(num_players=2, max_turns=40)
        env.reset(seed=23)
        advance(env, play_seed=1, steps=2)
        envs[name] = env
    (tmp_path / "envs.pkl").write_bytes(pickle.dumps(envs))
    script = (
        "import pickle, random, sys\n"
        "envs = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "out = {}\n"
        "for name, env in envs.items():\n"
        "    rng, seen = random.Random(6), []\n"
        "    for agent in env.agent_iter():\n"
        "        obs, reward, term, trunc, info = env.last()\n"
        "        seen.append((agent, obs['observation'].tolist(), obs['action_mask'].tolist(), reward, term, trunc,"
        " info))\n"
        "        legal = [a for a, m in enumerate(obs['action_mask']) if m]\n"
        "        env.step(None if term or trunc else rng.choice(legal))\n"
        "    out[name] = seen\n"
        "open(sys.argv[2], 'wb').write(pickle.dumps(out))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "envs.pkl"), str(tmp_path / "out.pkl")],
                   check=True, timeout=120)
    theirs = pickle.loads((tmp_path / "out.pkl").read_bytes())
    assert set(theirs) == set(envs) and {"keltis", "dice"} <= set(envs)
    for name, env in envs.items():
        rng, seen = random.Random(6), []
        for agent_name in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            seen.append((agent_name, obs["observation"].tolist(), obs["action_mask"].tolist(), reward, term, trunc,
                         info))
            legal = [a for a, m in enumerate(obs["action_mask"]) if m]
            env.step(None if term or trunc else rng.choice(legal))
        assert theirs[name] == seen and len(seen) > 2, name
