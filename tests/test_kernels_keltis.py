"""The card game's compiled core (keltis_env.games.keltis.kernels) against the Python
engine, the reference: after every action of random and seeded games (2, 3 and 4 players,
every tile layout, short and long turn caps, every way a game ends) the legal actions, the
whole state, every seat's observation (bit for bit) and the scores agree. The batched
steps agree game by game, auto-reset included. One run with numba's bounds checking on.

A cold run compiles the kernels (about 20-50 s on a busy 2-core machine); numba's cache
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
from keltis_env.games.keltis import kernels as kern
from keltis_env.games.keltis import kernels_batch as batch
from keltis_env.games.keltis.actions import DISCARD, DRAW_DECK, NUM_ACTIONS
from keltis_env.games.keltis.constants import EndReason

ROOT = Path(__file__).resolve().parents[1]
GAME = get_game("keltis")
EXPLICIT = ((1, 2, 3, 4), (5, 6, 7, 8), (1, 3, 5, 7), (2, 4, 6, 8), (1, 4, 5, 8))
LAYOUTS = ("default", "random", EXPLICIT)


class Kernels:
    """What the kernels need for one player count: the encoder's layout and scratch arrays."""

    def __init__(self, num_players: int) -> None:
        self.encoder = GAME.make_encoder(num_players)
        self.layout, self.scale, self.offset, self.score_scale = kern.encoder_layout(self.encoder)
        self.counts = kern.counts_scratch(self.encoder.size)
        self.out = np.zeros(self.encoder.size, dtype=np.float32)
        self.mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        #: the encoder's arguments of the batched kernels
        self.args = (self.layout, self.scale, self.offset, self.score_scale, self.counts)

    def observation(self, row: np.ndarray, seat: int) -> np.ndarray:
        kern.encode(row, seat, self.layout, self.scale, self.offset, self.score_scale, self.counts, self.out)
        return self.out.copy()


def assert_same(row: np.ndarray, state: Any, kit: Kernels) -> None:
    """Legal actions, the whole state, every seat's observation and the scores agree."""
    count = kern.legal_mask(row, kit.mask)
    assert np.flatnonzero(kit.mask).tolist() == state.legal_actions()
    assert count == len(state.legal_actions())
    assert np.array_equal(row, kern.pack(state, bool(row[kern.RANDOM_LAYOUT]))), "the rows differ"
    assert kern.unpack(row, state.config).to_dict() == state.to_dict()
    for seat in range(state.num_players):
        want = kit.encoder.encode(GAME.live_view(state, seat))
        assert np.array_equal(kit.observation(row, seat).view(np.int32), want.view(np.int32)), f"seat {seat}"
    scores = np.zeros(4, dtype=np.int32)
    kern.scores(row, scores)
    assert scores[: state.num_players].tolist() == state.scores()


def policy(rng: random.Random, advance: float) -> Callable[[Any], int]:
    """Random legal play that, with probability ``advance``, avoids discards when it can."""

    def choose(state: Any) -> int:
        legal = state.legal_actions()
        if rng.random() < advance:
            keen = [a for a in legal if not DISCARD <= a < DRAW_DECK]
            if keen:
                return int(keen[rng.randrange(len(keen))])
        return int(legal[rng.randrange(len(legal))])

    return choose


def heuristic(num_players: int, seed: int) -> Callable[[Any], int]:
    """The heuristic bot at every seat (its games often end in the goal area)."""
    bots = [make_bot("heuristic", game="keltis", seed=seed + p) for p in range(num_players)]
    return lambda state: int(bots[state.current_player].act(GAME.live_view(state, state.current_player)))


def play_both(state: Any, kit: Kernels, choose: Callable[[Any], int]) -> Any:
    """Play ``state`` to its end in both engines, comparing after every action; also checks
    that an illegal action changes nothing in the kernel. Returns the final state."""
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


KITS = {n: Kernels(n) for n in (2, 3, 4)}


# ---------------------------------------------------------------------- single games
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_players=st.sampled_from([2, 3, 4]), layout=st.sampled_from(LAYOUTS),
       max_turns=st.sampled_from([1, 7, 40, 500]), seed=st.integers(0, 2**32), play_seed=st.integers(0, 2**32),
       advance=st.sampled_from([0.0, 0.9]))
def test_every_action_of_random_games_agrees_with_the_python_engine(num_players: int, layout: Any, max_turns: int,
                                                                     seed: int, play_seed: int,
                                                                     advance: float) -> None:
    config = GAME.make_config(num_players=num_players, tile_layout=layout, max_turns=max_turns)
    play_both(GAME.new_state(config, seed), KITS[num_players], policy(random.Random(play_seed), advance))


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("end", [EndReason.DECK, EndReason.GOAL, EndReason.TRUNCATED])
def test_every_way_a_game_ends_agrees_with_the_python_engine(num_players: int, end: EndReason) -> None:
    max_turns = 30 if end == EndReason.TRUNCATED else 500
    config = GAME.make_config(num_players=num_players, max_turns=max_turns)
    for seed in range(40):
        choose = heuristic(num_players, seed) if end == EndReason.GOAL else policy(random.Random(seed), 0.0)
        final = play_both(GAME.new_state(config, seed), KITS[num_players], choose)
        if final.end == end:
            return
    pytest.fail(f"no game of the first 40 seeds ended by {end.name}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_kernels_deals_are_legal_games_the_python_engine_plays_on_alike(num_players: int, layout: Any) -> None:
    config = GAME.make_config(num_players=num_players, tile_layout=layout)
    rows = batch.new_games(config, 3, seed_generators(num_players, 3), deal_seeds(num_players, 3))
    for g, row in enumerate(rows):
        state = kern.unpack(row, config)
        rebuilt = GAME.state_cls.from_dict(state.to_dict())  # every invariant of a position checked
        assert rebuilt.to_dict() == state.to_dict() and state.turn == 0 and not state.is_over
        if layout != "random":
            assert state.dark_rows == config.dark_rows()
        play_both(state, KITS[num_players], policy(random.Random(g), 0.5))
    again = batch.new_games(config, 3, seed_generators(num_players, 3), deal_seeds(num_players, 3))
    assert np.array_equal(rows, again), "the same generators deal the same games"


# ---------------------------------------------------------------------- batches
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_step_games_steps_every_game_like_the_python_engine_and_deals_again_at_the_end(num_players: int) -> None:
    config = GAME.make_config(num_players=num_players, max_turns=25)  # short games: several resets
    count, kit, rng = 6, KITS[num_players], random.Random(num_players)
    gens = seed_generators(7, count)
    seeds = deal_seeds(7, count)
    rows = batch.new_games(config, count, gens, seeds)
    states = [kern.unpack(r, config) for r in rows]
    size = kit.encoder.size
    obs, masks = np.zeros((count, size), np.float32), np.zeros((count, NUM_ACTIONS), np.int8)
    final, ends, legal = np.zeros((count, 4), np.int32), np.zeros(count, np.int32), np.zeros(count, np.int8)
    resets = 0
    encoding = batch.encoding_args(num_players)[1]
    for _ in range(120):
        actions = np.array([rng.choice(s.legal_actions()) for s in states], dtype=np.int64)
        actions[0] = NUM_ACTIONS + 3  # never legal: game 0 does not move
        batch.step_games(rows, actions, gens, seeds, obs, masks, final, ends, legal, *encoding)
        assert legal.tolist() == [0] + [1] * (count - 1)
        for g in range(1, count):
            states[g].apply(int(actions[g]))
            if states[g].is_over:
                assert ends[g] == states[g].end and final[g, :num_players].tolist() == states[g].scores()
                states[g] = kern.unpack(rows[g], config)  # the new deal, from here on the reference
                assert states[g].turn == 0
                resets += 1
            else:
                assert ends[g] == 0
            assert_same(rows[g], states[g], kit)
            seat = states[g].current_player
            assert np.array_equal(obs[g], kit.encoder.encode(GAME.live_view(states[g], seat)))
            assert np.flatnonzero(masks[g]).tolist() == states[g].legal_actions()
    assert resets >= count - 1


@pytest.mark.parametrize("mode", [WIN, SCORE, SHAPED])
@pytest.mark.parametrize("autoreset", ["same-step", "next-step"])
@pytest.mark.parametrize("turn_cap", ["truncate", "end"])
def test_learner_step_pays_the_learner_views_rewards_and_deals_again(mode: int, autoreset: str, turn_cap: str) -> None:
    config = GAME.make_config(num_players=3, max_turns=20)  # short games: the cap cuts most of them
    learners = learner_batch("keltis", 8, config, seed=11, reward=("win", "score", "shaped")[mode], turn_cap=turn_cap,
                                   autoreset=autoreset)
    ended = check_learner_batch(GAME, KITS[3], kern.unpack, config, learners, mode, random.Random(mode), 60)
    assert ended >= 8


def test_an_illegal_learner_action_ends_its_episode_with_minus_one() -> None:
    learners = learner_batch("keltis", 4, GAME.make_config(num_players=2), seed=5)
    learners.reset()
    _obs, rewards, terminated, truncated, _masks = learners.step(np.full(4, NUM_ACTIONS + 1))
    assert (rewards == -1).all() and terminated.all() and not truncated.any()


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("opponents", ["random", "heuristic"])
def test_the_learners_observation_rewritten_where_moves_change_it_is_the_encoders_every_step(
        num_players: int, opponents: str) -> None:
    """The step rewrites only the entries of the learner's observation that the moves since
    its last one change (the card kinds moved, the piles, the paths, the turn's entries):
    over whole games, every observation is still the Python encoder's, bit for bit."""
    from keltis_env.games.keltis.encoding import ObservationEncoder

    games = 4
    config = GAME.make_config(num_players=num_players, max_turns=16 * num_players)  # the cap deals again
    learners = learner_batch("keltis", games, config, seed=num_players, opponents=opponents)
    encoder = ObservationEncoder(num_players)
    _obs, masks = learners.reset()
    rng, ended = np.random.default_rng(num_players), 0
    for _ in range(120):
        for g in range(games):
            want = encoder.encode(learners.position(g).view(int(learners.seats[g])))
            assert np.array_equal(learners.obs[g].view(np.int32), want.view(np.int32)), g
        _obs, _rewards, terminated, truncated, masks = learners.step(np.argmax(rng.random(masks.shape) * masks,
                                                                               axis=1))
        ended += int(terminated.sum() + truncated.sum())
    assert ended >= 1  # new deals (observations written whole) came between the rewritten ones


def test_the_batch_judges_the_learners_actions_on_the_masks_it_wrote_not_on_the_callers_copy() -> None:
    learners = learner_batch("keltis", 4, GAME.make_config(num_players=2), seed=5)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        learners.step(np.zeros(4, np.int64))
    _obs, masks = learners.reset()
    illegal = np.argmin(masks, axis=1)  # an action illegal in each game
    assert not masks[np.arange(4), illegal].any()
    masks[:] = 1  # what the caller does with the arrays it was given changes no rule
    _obs, rewards, terminated, _truncated, _masks = learners.step(illegal)
    assert (rewards == -1).all() and terminated.all()


# ---------------------------------------------------------------------- bounds checking
@pytest.mark.slow
def test_a_few_games_agree_with_numbas_bounds_checking_on(tmp_path: Path) -> None:
    """In a fresh interpreter with ``NUMBA_BOUNDSCHECK=1`` and an empty cache (so that the
    kernels are compiled with the checks): an index out of range raises, and a few games of
    every player count agree with the Python engine."""
    code = (
        "import random, sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import test_kernels_keltis as t\n"
        "from keltis_env.games.keltis import kernels as kern\n"
        "try:\n"
        "    kern.score(np.zeros(4, dtype=np.int32), 0)\n"
        "    sys.exit('no IndexError: bounds checking is off')\n"
        "except IndexError:\n"
        "    pass\n"
        "for n in (2, 3, 4):\n"
        "    for layout in ('default', 'random'):\n"
        "        config = t.GAME.make_config(num_players=n, tile_layout=layout)\n"
        "        t.play_both(t.GAME.new_state(config, n), t.KITS[n], t.policy(random.Random(n), 0.5))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=900)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


# ---------------------------------------------------------------------- the learner batch and its benchmark
def test_the_learner_batch_steps_its_games_and_refuses_bad_options_by_name() -> None:
    config = GAME.make_config(num_players=4)
    learners = learner_batch("keltis", 5, config, seed=3, reward="shaped", turn_cap="end")
    obs, masks = learners.reset()
    assert obs.shape == (5, KITS[4].encoder.size) and masks.shape == (5, NUM_ACTIONS)
    for g in range(5):
        state = kern.unpack(learners.states[g], config)
        assert state.current_player == g % 4 and np.flatnonzero(masks[g]).tolist() == state.legal_actions()
    again = learner_batch("keltis", 5, config, seed=3, reward="shaped", turn_cap="end")
    again.reset()
    assert np.array_equal(again.states, learners.states), "the same seed deals the same games"
    _obs, rewards, terminated, _truncated, _masks = learners.step(np.argmax(masks, axis=1))
    assert not terminated.any() and np.isfinite(rewards).all()
    for kwargs, message in (({"num_games": 0}, "num_games must be an integer >= 1"),
                            ({"reward": "points"}, "reward must be one of 'win', 'score', 'shaped'"),
                            ({"turn_cap": "stop"}, "turn_cap must be one of 'truncate', 'end'"),
                            ({"seed": -1}, "seed must be an integer >= 0")):
        with pytest.raises(ValueError, match=message):
            learner_batch("keltis", **{"num_games": 2, **kwargs}).reset()
    with pytest.raises(ValueError, match="autoreset must be one of 'same-step', 'next-step'"):
        learner_batch("keltis", 2, autoreset="later")
