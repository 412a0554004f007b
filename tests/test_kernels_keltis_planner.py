"""The card game's compiled plan model and planner (keltis_env.games.keltis.kernels_plan and
kernels_planner) against the Python model and bot, the reference: the same plan (turn
price, time left, colour values, the large figure's worth) for every player, the same
value for every legal action, bit for bit, and the same decision, in games of 2, 3 and 4
players (planner and random play mixed, so that the positions vary), at the default
weights and at others; inside the batched learner step and the vector environment, the
planner opponents move exactly as the Python bot in their seats would. One run with
numba's bounds checking on.

A cold run compiles the kernels (about 20-60 s on a busy 2-core machine); numba's cache
(``cache=True``) makes later runs load them in about a second.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from keltis_env.bots import make_bot
from keltis_env.compiled.batch import learner_batch
from keltis_env.core.game import get_game
from keltis_env.core.kernels import mt_scratch
from keltis_env.envs.vector import KeltisVectorEnv
from keltis_env.games.keltis import kernels as kern
from keltis_env.games.keltis import kernels_batch as batch
from keltis_env.games.keltis import kernels_plan as plan
from keltis_env.games.keltis import kernels_planner as compiled
from keltis_env.games.keltis.actions import NUM_ACTIONS
from keltis_env.games.keltis.bots.plan import Planner, Weights
from keltis_env.games.keltis.bots.planner import action_values
from keltis_env.games.keltis.constants import GOAL_FIGURES_TO_END, NUM_COLORS, Phase
from keltis_env.games.keltis.encoding import PLAN_SCALE, fill_plan

ROOT = Path(__file__).resolve().parents[1]
GAME = get_game("keltis")
EXPLICIT = ((1, 2, 3, 4), (5, 6, 7, 8), (1, 3, 5, 7), (2, 4, 6, 8), (1, 4, 5, 8))
#: the bot's weights, and others that change decisions (see the weights test)
WEIGHTS = (Weights(), Weights(min_price=1.5, feed=0.2, draw_fit=0.5, goal_pace=1.6),
           Weights(clover=4.0, bonus=0.5, open_fit=0.9, large_keep=0.2, min_price=0.3))


def planner_bot(weights: Weights) -> Any:
    """The ``planner`` bot playing with ``weights``."""
    bot = make_bot("planner", game="keltis")
    bot.weights = weights
    return bot


def python_action(bot: Any, state: Any) -> int:
    """The Python bot's decision for the player to move."""
    return int(bot.act(GAME.live_view(state, state.current_player)))


def compare_plans(state: Any, weights: Weights) -> None:
    """Every player's compiled plan of ``state`` equals the Python model's."""
    w, row = plan.weights(weights), kern.pack(state)
    for p in range(state.num_players):
        ref = Planner(GAME.live_view(state, p), p, weights)
        pi, pf = plan.new_plan(row, p, w)
        assert (pi[plan.I_PLAYS], pf[plan.F_LAM], pf[plan.F_RATE], pf[plan.F_GOAL_TURN]) == (
            ref.plays, ref.lam, ref.draw_rate, ref.goal_turn), f"turn {state.turn}, player {p}"
        for c in range(NUM_COLORS):
            assert plan.base_value(pi, pf, w, c) == ref.colour_value(c)
        for exclude in range(-1, NUM_COLORS):
            assert plan.large_option(pi, pf, w, exclude) == ref.large_option(exclude)


def compare_game(bot: Any, state: Any, rng: random.Random, keep: float, plans: bool = False) -> set[str]:
    """Play ``state`` to its end, comparing the compiled planner with ``bot`` at every
    decision (every legal action's value, bit for bit, and the choice; with ``plans``
    every player's plan too); the bot's choice is played with probability ``keep``, else a
    random legal action. Returns the kinds of decision met (phases, and the two
    game-ending ones)."""
    w, mask, met = compiled.options(bot), np.zeros(NUM_ACTIONS, np.int8), set()
    while not state.is_over:
        view = GAME.live_view(state, state.current_player)
        want, values = python_action(bot, state), np.full(NUM_ACTIONS, np.nan)
        row = kern.pack(state)
        compiled.action_values(row, mask, w, values)
        expected = dict(action_values(view, bot.weights))
        assert {a: values[a] for a in np.flatnonzero(mask)} == expected, f"turn {state.turn}, {state.phase.name}"
        got = compiled.planner_action(row, mask, w)
        assert got == want, f"turn {state.turn}, phase {state.phase.name}: compiled {got}, Python {want}"
        if plans:
            compare_plans(state, bot.weights)
        if len(expected) > 1:
            met.add(state.phase.name)
            if state.phase == Phase.DRAW and len(state.deck) == 1:
                met.add("last card")
            if state.phase != Phase.DRAW and state.goal_count == GOAL_FIGURES_TO_END - 1:
                met.add("goal nearly full")
        state.apply(want if rng.random() < keep else rng.choice(state.legal_actions()))
    return met


# ---------------------------------------------------------------------- the plan model
@pytest.mark.parametrize("weights", WEIGHTS[:2])
def test_every_players_compiled_plan_equals_the_python_models(weights: Weights) -> None:
    """Turn price, plays left, draw rate, goal-area end, colour values and the large
    figure's worth, for the player to move and for the others."""
    for seed, num_players in ((5, 2), (6, 4)):
        state = GAME.new_state(GAME.make_config(num_players=num_players, tile_layout="random"), seed)
        rng = random.Random(seed)
        while not state.is_over:
            if state.turn % 3 == 0:
                compare_plans(state, weights)
            state.apply(rng.choice(state.legal_actions()))


# ---------------------------------------------------------------------- decisions
@pytest.mark.parametrize("weights", range(len(WEIGHTS)))
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_compiled_planner_values_and_decides_as_the_python_bot_at_every_decision(weights: int,
                                                                                   num_players: int) -> None:
    bot, met = planner_bot(WEIGHTS[weights]), set()
    for seed, layout, keep in ((1, "default", 0.8), (2, "random", 0.5), (3, EXPLICIT, 0.9)):
        state = GAME.new_state(GAME.make_config(num_players=num_players, tile_layout=layout), seed + 10 * weights)
        met |= compare_game(bot, state, random.Random(seed), keep)
    assert {"PLAY", "DRAW", "BONUS"} <= met


def test_the_decisions_that_end_the_game_agree_with_the_python_bot() -> None:
    """The last card of the draw pile, and a fifth figure into the goal area (decisive:
    worth +/-1000 by whether it wins)."""
    bot, met = make_bot("planner", game="keltis"), set()
    for seed in range(20):
        state = GAME.new_state(GAME.make_config(num_players=2 + seed % 3), 100 + seed)
        met |= compare_game(bot, state, random.Random(seed), 0.95)
        if {"last card", "goal nearly full"} <= met:
            return
    pytest.fail(f"only {sorted(met)} met in 20 games")


@pytest.mark.parametrize("weights", WEIGHTS[1:])
def test_every_weight_reaches_the_compiled_planner(weights: Weights) -> None:
    """Positions where other weights change the Python bot's decision: the compiled planner
    follows the weights it is given, not the defaults."""
    bot, default = planner_bot(weights), make_bot("planner", game="keltis")
    w, defaults, mask = compiled.options(bot), compiled.options(), np.zeros(NUM_ACTIONS, np.int8)
    assert w.tolist() == [getattr(weights, name) for name in plan.WEIGHT_NAMES] != defaults.tolist()
    differ = 0
    state = GAME.new_state(GAME.make_config(num_players=3), 7)
    while not state.is_over:
        want, usual = python_action(bot, state), python_action(default, state)
        row = kern.pack(state)
        assert compiled.planner_action(row, mask, w) == want
        assert compiled.planner_action(row, mask, defaults) == usual
        differ += want != usual
        state.apply(want)
    assert differ > 0


def test_the_compiled_values_give_the_plan_features_values_and_choice() -> None:
    """The ``plan`` observation feature, computed from the compiled values as
    ``fill_plan`` computes it from the Python ones, is the same vector."""
    state, rng, w = GAME.new_state(GAME.make_config(num_players=3), 9), random.Random(9), plan.weights()
    mask = np.zeros(NUM_ACTIONS, np.int8)
    while not state.is_over:
        want = np.zeros(2 * NUM_ACTIONS, np.float32)
        fill_plan(GAME.live_view(state, state.current_player), want)
        values = np.zeros(NUM_ACTIONS)
        compiled.action_values(kern.pack(state), mask, w, values)
        legal = mask.astype(bool)
        got = np.zeros(2 * NUM_ACTIONS, np.float32)
        got[:NUM_ACTIONS][legal] = np.maximum(0.0, 1.0 + (values[legal] - values[legal].max()) / PLAN_SCALE)
        got[NUM_ACTIONS + compiled.best_action(mask, values)] = 1.0
        assert np.array_equal(got, want), f"turn {state.turn}"
        state.apply(rng.choice(state.legal_actions()))


def test_the_compiled_planner_returns_minus_one_when_the_game_is_over() -> None:
    state = GAME.new_state(GAME.make_config(num_players=2, max_turns=1), 0)
    while not state.is_over:
        state.apply(state.legal_actions()[0])
    mask = np.zeros(NUM_ACTIONS, np.int8)
    assert compiled.planner_action(kern.pack(state), mask, compiled.options()) == -1
    assert compiled.action_values(kern.pack(state), mask, compiled.options(), np.zeros(NUM_ACTIONS)) == 0


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_players=st.sampled_from([2, 3, 4]), layout=st.sampled_from(("default", "random", EXPLICIT)),
       seed=st.integers(0, 2**32), play_seed=st.integers(0, 2**32), keep=st.sampled_from([0.0, 0.5, 0.8, 1.0]),
       clover=st.floats(0, 6), bonus=st.floats(0, 4), draw_fit=st.floats(0, 1), open_fit=st.floats(0, 1),
       feed=st.floats(0, 2), large_keep=st.floats(0, 1), goal_pace=st.floats(0.2, 3), min_price=st.floats(0, 4))
def test_many_games_with_any_weights_agree_with_the_python_model(num_players: int, layout: Any, seed: int,
                                                                 play_seed: int, keep: float, clover: float,
                                                                 bonus: float, draw_fit: float, open_fit: float,
                                                                 feed: float, large_keep: float, goal_pace: float,
                                                                 min_price: float) -> None:
    bot = planner_bot(Weights(clover=clover, bonus=bonus, draw_fit=draw_fit, open_fit=open_fit, feed=feed,
                              large_keep=large_keep, goal_pace=goal_pace, min_price=min_price))
    state = GAME.new_state(GAME.make_config(num_players=num_players, tile_layout=layout), seed)
    compare_game(bot, state, random.Random(play_seed), keep, plans=True)


# ---------------------------------------------------------------------- the learner step
def replay_opponents(state: Any, seat: int, bots: list[Any]) -> Any:
    """The Python bots move every seat but ``seat`` until ``seat`` is to move or the game
    is over; returns ``state``."""
    while state.current_player != seat and not state.is_over:
        state.apply(python_action(bots[state.current_player], state))
    return state


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_learner_step_moves_planner_opponents_as_the_python_bot_does_new_deals_included(num_players: int) -> None:
    config = GAME.make_config(num_players=num_players, max_turns=40)  # short games: several new deals
    learners = learner_batch("keltis", 6, config, seed=4, opponents="planner", autoreset="next-step")
    bots = [make_bot("planner", game="keltis") for _ in range(num_players)]
    learners.reset()
    rng, moves, deals = random.Random(num_players), 0, 0
    for _ in range(50):
        dealing = learners.pending.copy()
        rows, gens, seeds = learners.states.copy(), learners.rng.copy(), learners.seeds.copy()
        states = [learners.position(g) for g in range(6)]
        actions = [0 if dealing[g] else rng.choice(state.legal_actions()) for g, state in enumerate(states)]
        learners.step(np.array(actions))
        for g, state in enumerate(states):
            seat = int(learners.seats[g])
            if dealing[g]:  # the same deal from the same generator, then the opponents' first moves
                batch.deal(rows[g], gens, g, seeds, mt_scratch())
                state, deals = kern.unpack(rows[g], config), deals + 1
            else:
                state.apply(actions[g])
                moves += 1
            replay_opponents(state, seat, bots)
            assert learners.position(g).to_dict() == state.to_dict(), f"game {g}: the opponents moved otherwise"
    assert moves > 200 and deals >= 6


# ---------------------------------------------------------------------- the vector environment
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_vector_envs_planner_opponents_replay_identically_in_the_python_engine(num_players: int) -> None:
    env = KeltisVectorEnv(4, game="keltis", num_players=num_players, opponents="planner", max_turns=20)
    bots = [make_bot("planner", game="keltis") for _ in range(num_players)]
    _obs, info = env.reset(seed=num_players)
    rng, compared, ended = np.random.default_rng(num_players), 0, 0
    for _ in range(50):
        masks = info["action_mask"]
        actions = np.argmax(masks * rng.random(masks.shape), axis=1)
        before = [env.position(g) for g in range(4)]
        _obs, _rewards, terminated, truncated, info = env.step(actions)
        for g in range(4):
            if not masks[g].any():  # the step after an episode's end deals a new game
                continue
            state = before[g]
            state.apply(int(actions[g]))
            replay_opponents(state, g % num_players, bots)
            # next-step auto-reset: a game that ended is still there, its last position
            assert env.position(g).to_dict() == state.to_dict(), f"game {g}: the opponents moved otherwise"
            assert bool(terminated[g] or truncated[g]) == state.is_over
            compared += 1
            ended += state.is_over
    assert compared > 150 and ended >= 2


def test_opponents_the_compiled_core_does_not_play_are_refused_by_name() -> None:
    for spec, message in (("ismcts", "opponents must be one of 'random', 'heuristic', 'planner'"),
                          ("planner:iterations=3", "bot 'planner' has no option 'iterations'"),
                          ("planners", "opponents must be one of 'random', 'heuristic', 'planner'")):
        with pytest.raises(ValueError, match=message):
            learner_batch("keltis", 2, opponents=spec)
        with pytest.raises(ValueError, match=message):
            KeltisVectorEnv(2, game="keltis", opponents=spec)


def test_the_planner_opponents_take_the_bots_default_weights() -> None:
    opponent, _opts, weights = batch.opponent_args("planner")
    assert opponent == batch.PLANNER == 2
    assert weights.tolist() == [getattr(Weights(), name) for name in plan.WEIGHT_NAMES]


# ---------------------------------------------------------------------- bounds checking
@pytest.mark.slow
def test_a_few_games_agree_with_numbas_bounds_checking_on(tmp_path: Path) -> None:
    """In a fresh interpreter with ``NUMBA_BOUNDSCHECK=1`` and an empty cache (so that the
    kernels are compiled with the checks): an index out of range raises, the compiled
    planner values and decides as the Python bot in a few games of every player count,
    with every player's plan compared, and the learner step plays planner opponents."""
    code = (
        "import random, sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import test_kernels_keltis_planner as t\n"
        "from keltis_env.games.keltis import kernels as kern\n"
        "try:\n"
        "    kern.score(np.zeros(4, dtype=np.int32), 0)\n"
        "    sys.exit('no IndexError: bounds checking is off')\n"
        "except IndexError:\n"
        "    pass\n"
        "for n in (2, 3, 4):\n"
        "    for weights in t.WEIGHTS:\n"
        "        bot = t.planner_bot(weights)\n"
        "        state = t.GAME.new_state(t.GAME.make_config(num_players=n, tile_layout='random'), n)\n"
        "        t.compare_game(bot, state, random.Random(n), 0.7, plans=True)\n"
        "learners = t.learner_batch('keltis', 4, t.GAME.make_config(num_players=4), opponents='planner')\n"
        "learners.reset()\n"
        "for _ in range(100):\n"
        "    learners.step(np.argmax(learners.masks, axis=1))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=900)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
