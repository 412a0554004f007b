"""The dice game's compiled core (keltis_env.games.dice.kernels) against the Python engine,
the reference: after every action of random and seeded games (2, 3 and 4 players, every
bonus layout, short and long turn caps, every way a game ends) the legal actions, the
whole state (the dice to come included: both roll from the seed), every seat's
observation (bit for bit) and the scores agree. The batched steps agree game by game,
auto-reset included. One run with numba's bounds checking on.

A cold run compiles the kernels (about 20-40 s on a busy 2-core machine); numba's cache
(``cache=True``) makes later runs load them in about a second.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

from kernel_helpers import check_learner_batch, deal_seeds

from keltis_env.bots import make_bot
from keltis_env.compiled.batch import learner_batch
from keltis_env.core.game import get_game
from keltis_env.core.kernels import SCORE, SHAPED, WIN, seed_generators
from keltis_env.games.dice import kernels as kern
from keltis_env.games.dice import kernels_batch as batch
from keltis_env.games.dice import kernels_heuristic as compiled_heuristic
from keltis_env.games.dice.actions import NUM_ACTIONS
from keltis_env.games.dice.constants import EndReason

ROOT = Path(__file__).resolve().parents[1]
GAME = get_game("dice")
EXPLICIT = ({2: "extra", 5: "clover"}, {1: "stone", 8: "clover"}, {3: "clover", 4: "clover"}, {}, {9: "stone"})
LAYOUTS = ("default", "random", EXPLICIT)


class Kernels:
    """What the kernels need for one player count: the encoder's arrays and scratch space."""

    def __init__(self, num_players: int) -> None:
        self.encoder = GAME.make_encoder(num_players)
        _size, self.args = batch.encoding_args(num_players)
        self.out = np.zeros(self.encoder.size, dtype=np.float32)
        self.mask = np.zeros(NUM_ACTIONS, dtype=np.int8)

    def observation(self, row: np.ndarray, seat: int) -> np.ndarray:
        kern.encode(row, seat, *self.args, self.out)
        return self.out.copy()


KITS = {n: Kernels(n) for n in (2, 3, 4)}


def assert_same(row: np.ndarray, state: Any, kit: Kernels) -> None:
    """Legal actions, the whole state, every seat's observation and the scores agree."""
    count = kern.legal_mask(row, kit.mask)
    assert np.flatnonzero(kit.mask).tolist() == state.legal_actions() and count == len(state.legal_actions())
    assert np.array_equal(row, kern.pack(state, bool(row[kern.RANDOM_LAYOUT]))), "the rows differ"
    assert kern.unpack(row, state.config).to_dict() == state.to_dict()
    for seat in range(state.num_players):
        want = kit.encoder.encode(GAME.live_view(state, seat))
        assert np.array_equal(kit.observation(row, seat).view(np.int32), want.view(np.int32)), f"seat {seat}"
    scores = np.zeros(4, dtype=np.int64)
    kern.scores(row, scores)
    assert scores[: state.num_players].tolist() == state.scores()


def uniform(rng: random.Random) -> Callable[[Any], int]:
    return lambda state: int(rng.choice(state.legal_actions()))


def heuristic(num_players: int, seed: int) -> Callable[[Any], int]:
    """The dice heuristic at every seat."""
    bots = [make_bot("heuristic", game="dice", seed=seed + p) for p in range(num_players)]
    return lambda state: int(bots[state.current_player].act(GAME.live_view(state, state.current_player)))


def play_both(state: Any, kit: Kernels, choose: Callable[[Any], int]) -> Any:
    """Play ``state`` to its end in both engines, comparing after every action; an illegal
    action changes nothing in the kernel. Returns the final state."""
    row = kern.pack(state)
    assert_same(row, state, kit)
    while not state.is_over:
        legal = state.legal_actions()
        illegal = next(a for a in range(NUM_ACTIONS) if a not in legal)
        before = row.copy()
        assert not kern.step(row, illegal, kit.mask) and np.array_equal(row, before)
        action = choose(state)
        state.apply(action)
        assert kern.step(row, action, kit.mask)
        assert_same(row, state, kit)
    assert not kern.step(row, 0, kit.mask)
    return state


# ---------------------------------------------------------------------- single games
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_players=st.sampled_from([2, 3, 4]), layout=st.sampled_from(LAYOUTS),
       max_turns=st.sampled_from([1, 5, 30, 500]), seed=st.integers(-(2**63), 2**63 - 1),
       play_seed=st.integers(0, 2**32))
def test_every_action_of_random_games_agrees_with_the_python_engine(num_players: int, layout: Any, max_turns: int,
                                                                     seed: int, play_seed: int) -> None:
    config = GAME.make_config(num_players=num_players, bonus_layout=layout, max_turns=max_turns)
    play_both(GAME.new_state(config, seed), KITS[num_players], uniform(random.Random(play_seed)))


@pytest.mark.parametrize(("num_players", "end"), [
    (2, EndReason.UPPER_COUNT), (3, EndReason.UPPER_COUNT), (4, EndReason.UPPER_COUNT),
    (2, EndReason.TRUNCATED), (3, EndReason.TRUNCATED), (4, EndReason.TRUNCATED), (3, EndReason.ALL_UPPER),
])
def test_every_way_a_game_ends_agrees_with_the_python_engine(num_players: int, end: EndReason) -> None:
    config = GAME.make_config(num_players=num_players, max_turns=15 if end == EndReason.TRUNCATED else 500)
    for seed in range(40):
        final = play_both(GAME.new_state(config, seed), KITS[num_players], heuristic(num_players, seed))
        if final.end == end:
            return
    pytest.fail(f"no game of the first 40 seeds ended by {end.name}")


@pytest.mark.parametrize("num_players", [2, 4])
def test_a_player_with_every_marker_in_the_upper_zone_ends_the_game_in_both_engines(num_players: int) -> None:
    ends = set()
    for seed in range(10):
        state = GAME.new_state(GAME.make_config(num_players=num_players), seed)
        p = state.current_player
        state.pos[p] = [8, 8, 8, 6, 0]  # three markers in the upper zone, a fourth below it
        state.markers[p], state.upper[p], state.upper_total = 4, 3, 3
        ends.add(play_both(state, KITS[num_players], heuristic(num_players, seed)).end)
    assert EndReason.ALL_UPPER in ends


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_kernels_deals_are_legal_games_the_python_engine_plays_on_alike(num_players: int, layout: Any) -> None:
    config = GAME.make_config(num_players=num_players, bonus_layout=layout)
    rows = batch.new_games(config, 3, seed_generators(num_players, 3), deal_seeds(num_players, 3))
    for g, row in enumerate(rows):
        state = kern.unpack(row, config)
        rebuilt = GAME.state_cls.from_dict(state.to_dict())  # every invariant of a position checked
        assert rebuilt.to_dict() == state.to_dict() and state.turn == 0 and state.rolls == 1
        if layout != "random":
            assert state.bonus == config.bonus_squares()
        play_both(state, KITS[num_players], uniform(random.Random(g)))
    assert np.array_equal(rows, batch.new_games(config, 3, seed_generators(num_players, 3), deal_seeds(num_players, 3)))


def test_a_seed_beyond_64_signed_bits_is_refused_by_name() -> None:
    state = GAME.new_state(GAME.make_config(), 2**64 + 5)
    with pytest.raises(ValueError, match="the compiled core holds seeds of 64 signed bits, got 18446744073709551621"):
        kern.pack(state)


# ---------------------------------------------------------------------- batches
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_step_games_steps_every_game_like_the_python_engine_and_deals_again_at_the_end(num_players: int) -> None:
    config = GAME.make_config(num_players=num_players, max_turns=12)  # short games: several resets
    count, kit, rng = 6, KITS[num_players], random.Random(num_players)
    gens = seed_generators(7, count)
    seeds = deal_seeds(7, count)
    rows = batch.new_games(config, count, gens, seeds)
    states = [kern.unpack(r, config) for r in rows]
    obs, masks = np.zeros((count, kit.encoder.size), np.float32), np.zeros((count, NUM_ACTIONS), np.int8)
    final, ends, legal = np.zeros((count, 4), np.int64), np.zeros(count, np.int64), np.zeros(count, np.int8)
    resets, encoding = 0, batch.encoding_args(num_players)[1]
    for _ in range(100):
        actions = np.array([rng.choice(s.legal_actions()) for s in states], dtype=np.int64)
        actions[0] = NUM_ACTIONS + 3  # never legal: game 0 does not move
        batch.step_games(rows, actions, gens, seeds, obs, masks, final, ends, legal, *encoding)
        assert legal.tolist() == [0] + [1] * (count - 1)
        for g in range(1, count):
            states[g].apply(int(actions[g]))
            if states[g].is_over:
                assert ends[g] == states[g].end and final[g, :num_players].tolist() == states[g].scores()
                states[g] = kern.unpack(rows[g], config)  # the new deal, from here on the reference
                resets += 1
            else:
                assert ends[g] == 0
            assert_same(rows[g], states[g], kit)
            assert np.array_equal(obs[g], kit.encoder.encode(GAME.live_view(states[g], states[g].current_player)))
            assert np.flatnonzero(masks[g]).tolist() == states[g].legal_actions()
    assert resets >= count - 1


@pytest.mark.parametrize("mode", [WIN, SCORE, SHAPED])
@pytest.mark.parametrize("autoreset", ["same-step", "next-step"])
def test_learner_step_pays_the_learner_views_rewards_and_deals_again(mode: int, autoreset: str) -> None:
    config = GAME.make_config(num_players=3, max_turns=15)
    learners = learner_batch("dice", 8, config, seed=11, reward=("win", "score", "shaped")[mode], autoreset=autoreset)
    ended = check_learner_batch(GAME, KITS[3], kern.unpack, config, learners, mode, random.Random(mode), 60)
    assert ended >= 8


# ---------------------------------------------------------------------- the compiled heuristic
@pytest.mark.parametrize("spec", ["heuristic", "heuristic:extra_turn_value=5,win_value=20,behind_penalty=0.5"])
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_compiled_heuristic_decides_as_the_python_bot_in_every_phase(spec: str, num_players: int) -> None:
    bot = make_bot(spec, game="dice")
    opts, mask, phases = compiled_heuristic.options(bot), np.zeros(NUM_ACTIONS, np.int8), set()
    for seed, layout in ((1, "default"), (2, "random"), (3, EXPLICIT)):
        state = GAME.new_state(GAME.make_config(num_players=num_players, bonus_layout=layout), seed)
        rng = random.Random(seed)
        while not state.is_over:
            want = bot.act(GAME.live_view(state, state.current_player))
            assert compiled_heuristic.heuristic_action(kern.pack(state), mask, opts, compiled_heuristic.TABLES) == want
            phases.add(state.phase)
            state.apply(want if rng.random() < 0.7 else rng.choice(state.legal_actions()))
    assert len(phases) == 3  # reroll, move and clover bonus decisions


def test_learner_step_moves_heuristic_opponents_as_the_python_bot_does() -> None:
    config = GAME.make_config(num_players=3)
    learners = learner_batch("dice", 6, config, seed=4, opponents="heuristic")
    bots = [make_bot("heuristic", game="dice") for _ in range(3)]
    learners.reset()
    rng, compared = random.Random(0), 0
    for _ in range(40):
        states = [learners.position(g) for g in range(6)]
        actions = [rng.choice(state.legal_actions()) for state in states]
        _obs, _rewards, terminated, truncated, _masks = learners.step(np.array(actions))
        for g, state in enumerate(states):
            if terminated[g] or truncated[g]:
                continue
            seat = int(learners.seats[g])
            state.apply(actions[g])
            while state.current_player != seat and not state.is_over:
                state.apply(bots[state.current_player].act(GAME.live_view(state, state.current_player)))
            assert np.array_equal(learners.states[g], kern.pack(state)), "the opponents moved otherwise"
            compared += 1
    assert compared > 200


def test_opponents_the_compiled_core_does_not_play_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="opponents must be one of 'random', 'heuristic'"):
        learner_batch("dice", 2, opponents="planner")
    with pytest.raises(ValueError, match=r"option extra_turn_value=nan in agent spec .* is not a finite number"):
        learner_batch("dice", 2, opponents="heuristic:extra_turn_value=nan")


# ---------------------------------------------------------------------- bounds checking
@pytest.mark.slow
def test_a_few_games_agree_with_numbas_bounds_checking_on(tmp_path: Path) -> None:
    """In a fresh interpreter with ``NUMBA_BOUNDSCHECK=1`` and an empty cache (so that the
    kernels are compiled with the checks): an index out of range raises, and a few games of
    every player count agree with the Python engine."""
    code = (
        "import random, sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import test_kernels_dice as t\n"
        "from keltis_env.games.dice import kernels as kern\n"
        "try:\n"
        "    kern.score(np.zeros(4, dtype=np.int64), 0)\n"
        "    sys.exit('no IndexError: bounds checking is off')\n"
        "except IndexError:\n"
        "    pass\n"
        "for n in (2, 3, 4):\n"
        "    for layout in ('default', 'random'):\n"
        "        config = t.GAME.make_config(num_players=n, bonus_layout=layout)\n"
        "        t.play_both(t.GAME.new_state(config, n), t.KITS[n], t.uniform(random.Random(n)))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=900)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
