"""The card game's compiled heuristic (keltis_env.games.keltis.kernels_heuristic) against
the Python bot, the reference: the same action at every decision of games of 2, 3 and 4
players (heuristic and random play mixed, so that the positions vary), at the default
options and at others; inside the batched learner step and the vector environment, the
heuristic opponents move exactly as the Python bot in their seats would. One run with
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
from keltis_env.games.keltis import kernels_heuristic as compiled
from keltis_env.games.keltis.actions import NUM_ACTIONS
from keltis_env.games.keltis.constants import GOAL_FIGURES_TO_END, Phase

ROOT = Path(__file__).resolve().parents[1]
GAME = get_game("keltis")
EXPLICIT = ((1, 2, 3, 4), (5, 6, 7, 8), (1, 3, 5, 7), (2, 4, 6, 8), (1, 4, 5, 8))
#: the default options, and others that change decisions (see the option test)
SPECS = ("heuristic", "heuristic:paths=2,gap=4", "heuristic:open_cards=2,large_cards=2,gap=0")


def python_action(bot: Any, state: Any) -> int:
    """The Python bot's decision for the player to move."""
    return int(bot.act(GAME.live_view(state, state.current_player)))


def compare_game(bot: Any, state: Any, rng: random.Random, keep: float) -> set[str]:
    """Play ``state`` to its end, comparing the compiled heuristic with ``bot`` at every
    decision; the bot's choice is played with probability ``keep``, else a random legal
    action. Returns the kinds of decision met (phases, and the two game-ending ones)."""
    opts, mask, met = compiled.options(bot), np.zeros(NUM_ACTIONS, np.int8), set()
    while not state.is_over:
        want = python_action(bot, state)
        got = compiled.heuristic_action(kern.pack(state), mask, opts)
        assert got == want, f"turn {state.turn}, phase {state.phase.name}: compiled {got}, Python {want}"
        choices = len(state.legal_actions())
        if choices > 1:
            met.add(state.phase.name)
            if state.phase == Phase.DRAW and len(state.deck) == 1:
                met.add("last card")
            if state.phase != Phase.DRAW and state.goal_count == GOAL_FIGURES_TO_END - 1:
                met.add("goal nearly full")
        state.apply(want if rng.random() < keep else rng.choice(state.legal_actions()))
    return met


# ---------------------------------------------------------------------- decisions
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_compiled_heuristic_decides_as_the_python_bot_at_every_decision(spec: str, num_players: int) -> None:
    bot, met = make_bot(spec, game="keltis"), set()
    for seed, layout, keep in ((1, "default", 0.7), (2, "random", 0.9), (3, EXPLICIT, 0.5)):
        state = GAME.new_state(GAME.make_config(num_players=num_players, tile_layout=layout), seed)
        met |= compare_game(bot, state, random.Random(seed), keep)
    assert {"PLAY", "DRAW", "BONUS"} <= met


def test_the_decisions_that_end_the_game_agree_with_the_python_bot() -> None:
    """The last card of the draw pile, and a fifth figure into the goal area (the bot makes
    these when ahead, avoids them when behind)."""
    bot, met = make_bot("heuristic", game="keltis"), set()
    for seed in range(20):
        state = GAME.new_state(GAME.make_config(num_players=2 + seed % 3), 100 + seed)
        met |= compare_game(bot, state, random.Random(seed), 0.9)
        if {"last card", "goal nearly full"} <= met:
            return
    pytest.fail(f"only {sorted(met)} met in 20 games")


@pytest.mark.parametrize("spec", SPECS[1:])
def test_every_option_reaches_the_compiled_heuristic(spec: str) -> None:
    """Positions where the options change the Python bot's decision: the compiled heuristic
    follows the options, not its defaults."""
    bot, default = make_bot(spec, game="keltis"), make_bot("heuristic", game="keltis")
    opts, defaults, mask = compiled.options(bot), compiled.options(), np.zeros(NUM_ACTIONS, np.int8)
    assert opts.tolist() == [bot.paths, bot.gap, bot.open_cards, bot.large_cards] != defaults.tolist()
    differ = 0
    state = GAME.new_state(GAME.make_config(num_players=3), 7)
    while not state.is_over:
        want, usual = python_action(bot, state), python_action(default, state)
        row = kern.pack(state)
        assert compiled.heuristic_action(row, mask, opts) == want
        assert compiled.heuristic_action(row, mask, defaults) == usual
        differ += want != usual
        state.apply(want)
    assert differ > 0


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_play_phase_moves_the_heuristic_scores_are_the_legal_moves_in_ascending_order(num_players: int) -> None:
    # The heuristic lists the play phase's moves from the kinds in hand instead of reading a
    # mask: the same moves as the rules' mask, in the order the mask gives them.
    rng, mask, seen = random.Random(num_players), np.zeros(NUM_ACTIONS, np.int8), 0
    x = np.zeros(compiled._CONTEXT_SIZE, np.int64)
    for seed in range(8):
        state = GAME.new_state(GAME.make_config(num_players=num_players, tile_layout="random"), seed)
        while not state.is_over:
            if state.phase == Phase.PLAY:
                row = kern.pack(state)
                kern.legal_mask(row, mask)
                compiled._context(row, compiled.options(), x, int(Phase.PLAY))
                count = compiled._play_moves(row, x)
                listed = x[compiled._MOVES:compiled._MOVES + count].tolist()
                assert listed == np.flatnonzero(mask).tolist() == sorted(state.legal_actions())
                seen += 1
            state.apply(rng.choice(state.legal_actions()))
    assert seen > 100


def test_the_compiled_heuristic_returns_minus_one_when_the_game_is_over() -> None:
    state = GAME.new_state(GAME.make_config(num_players=2, max_turns=1), 0)
    while not state.is_over:
        state.apply(state.legal_actions()[0])
    assert compiled.heuristic_action(kern.pack(state), np.zeros(NUM_ACTIONS, np.int8), compiled.options()) == -1


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_players=st.sampled_from([2, 3, 4]), layout=st.sampled_from(("default", "random", EXPLICIT)),
       seed=st.integers(0, 2**32), play_seed=st.integers(0, 2**32), keep=st.sampled_from([0.0, 0.5, 0.8, 1.0]),
       paths=st.integers(1, 5), gap=st.integers(0, 6), open_cards=st.integers(1, 5), large_cards=st.integers(1, 6))
def test_many_games_with_any_options_agree_with_the_python_bot(num_players: int, layout: Any, seed: int,
                                                               play_seed: int, keep: float, paths: int, gap: int,
                                                               open_cards: int, large_cards: int) -> None:
    bot = make_bot(f"heuristic:paths={paths},gap={gap},open_cards={open_cards},large_cards={large_cards}",
                   game="keltis")
    state = GAME.new_state(GAME.make_config(num_players=num_players, tile_layout=layout), seed)
    compare_game(bot, state, random.Random(play_seed), keep)


# ---------------------------------------------------------------------- the learner step
def replay_opponents(state: Any, seat: int, bots: list[Any]) -> Any:
    """The Python bots move every seat but ``seat`` until ``seat`` is to move or the game
    is over; returns ``state``."""
    while state.current_player != seat and not state.is_over:
        state.apply(python_action(bots[state.current_player], state))
    return state


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_learner_step_moves_heuristic_opponents_as_the_python_bot_does_new_deals_included(num_players: int) -> None:
    spec = "heuristic:paths=3,gap=3"
    config = GAME.make_config(num_players=num_players, max_turns=40)  # short games: several new deals
    learners = learner_batch("keltis", 6, config, seed=4, opponents=spec, autoreset="next-step")
    bots = [make_bot(spec, game="keltis") for _ in range(num_players)]
    learners.reset()
    rng, moves, deals = random.Random(num_players), 0, 0
    for _ in range(60):
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
    assert moves > 250 and deals >= 6


# ---------------------------------------------------------------------- the vector environment
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_vector_envs_heuristic_opponents_replay_identically_in_the_python_engine(num_players: int) -> None:
    env = KeltisVectorEnv(4, game="keltis", num_players=num_players, opponents="heuristic", max_turns=20)
    bots = [make_bot("heuristic", game="keltis") for _ in range(num_players)]
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
    for spec, message in (("ismcts", "opponents must be one of 'random', 'heuristic'"),
                          ("heuristic:paths=0", "heuristic option paths must be an integer >= 1, got 0"),
                          ("heuristic:colour=1", "bot 'heuristic' has no option 'colour'")):
        with pytest.raises(ValueError, match=message):
            learner_batch("keltis", 2, opponents=spec)
        with pytest.raises(ValueError, match=message):
            KeltisVectorEnv(2, game="keltis", opponents=spec)


# ---------------------------------------------------------------------- bounds checking
@pytest.mark.slow
def test_a_few_games_agree_with_numbas_bounds_checking_on(tmp_path: Path) -> None:
    """In a fresh interpreter with ``NUMBA_BOUNDSCHECK=1`` and an empty cache (so that the
    kernels are compiled with the checks): an index out of range raises, the compiled
    heuristic decides as the Python bot in a few games of every player count, and the
    learner step plays heuristic opponents."""
    code = (
        "import random, sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import test_kernels_keltis_heuristic as t\n"
        "from keltis_env.games.keltis import kernels as kern\n"
        "try:\n"
        "    kern.score(np.zeros(4, dtype=np.int32), 0)\n"
        "    sys.exit('no IndexError: bounds checking is off')\n"
        "except IndexError:\n"
        "    pass\n"
        "for n in (2, 3, 4):\n"
        "    for spec in t.SPECS:\n"
        "        bot = t.make_bot(spec, game='keltis')\n"
        "        t.compare_game(bot, t.GAME.new_state(t.GAME.make_config(num_players=n), n), random.Random(n), 0.7)\n"
        "learners = t.learner_batch('keltis', 4, t.GAME.make_config(num_players=4), opponents='heuristic')\n"
        "learners.reset()\n"
        "for _ in range(100):\n"
        "    learners.step(np.argmax(learners.masks, axis=1))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=900)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
