"""Random-playout invariants of the dice game (docs/rules.md R11), over hypothesis-drawn seeds,
player counts, options and action choices (OpenSpiel's random-sim test, STYLE.md). The
invariants every game shares are defined in test_conformance.py and also run here on
this game's options (random bonus layouts, short games, any seed)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conformance import check_end, check_every_step

from keltis_env.bots import make_bot
from keltis_env.games.dice import GAME, GameConfig, GameState, Phase
from keltis_env.games.dice.constants import (
    MARKERS_PER_PLAYER,
    NUM_DICE,
    UPPER_FIRST_ROW,
    UPPER_MARKERS_TO_END,
)
from keltis_env.games.dice.state import sample_state
from keltis_env.games.dice.view import LiveView

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True, database=None)

games = st.fixed_dictionaries(
    {
        "num_players": st.integers(2, 4),
        "seed": st.integers(-(2**70), 2**70),
        "choices": st.integers(0, 2**32),
        "bonus_layout": st.sampled_from(["default", "random"]),
        "max_turns": st.sampled_from([500, 500, 40, 5]),
    }
)


def new_state(game: dict) -> GameState:
    config = GameConfig(num_players=game["num_players"], bonus_layout=game["bonus_layout"], max_turns=game["max_turns"])
    return GameState.new_game(config, seed=game["seed"])


def check_caches(s: GameState) -> None:
    """The derived fields agree with the positions and dice they are derived from."""
    assert s.dice == tuple(sorted(s.dice)) and len(s.dice) == NUM_DICE
    assert list(s.counts) == [s.dice.count(f) for f in range(6)]
    for p in range(s.num_players):
        assert s.markers[p] == sum(1 for r in s.pos[p] if r) <= MARKERS_PER_PLAYER
        assert s.upper[p] == sum(1 for r in s.pos[p] if r >= UPPER_FIRST_ROW)
    assert s.upper_total == sum(s.upper) <= UPPER_MARKERS_TO_END[s.num_players]


@SETTINGS
@given(games)
def test_random_playouts_keep_every_invariant(game):
    s = new_state(game)
    rng = random.Random(game["choices"])
    bound = GAME.max_game_length(s.config)
    decisions = 0
    while not s.is_over:
        # the checks every game shares (test_conformance.py), on this game's options:
        # legal set, score bounds, observation box, clone and JSON round trips, an
        # illegal action raising and changing nothing
        legal = check_every_step(GAME, s, rng)
        check_caches(s)
        s.apply(legal[rng.randrange(len(legal))])
        decisions += 1
        assert decisions <= bound and s.turn <= s.config.max_turns
    check_caches(s)
    check_end(GAME, s, decisions)


def play(s: GameState, choices: int, noise: bool = False) -> list[tuple]:
    """Play to the end with choices drawn from ``choices``; the trajectory of
    (action, dice, phase). ``noise`` uses the global random generators in between."""
    rng = random.Random(choices)
    noise_rng = random.Random(choices + 7)
    out = []
    while not s.is_over:
        if noise:
            random.seed(noise_rng.random())
            random.random()
            np.random.seed(noise_rng.randrange(1000))
            np.random.random(3)
        legal = s.legal_actions()
        a = legal[rng.randrange(len(legal))]
        s.apply(a)
        out.append((a, s.dice, s.phase))
    return out


@settings(max_examples=10, deadline=None, derandomize=True, database=None)
@given(games)
def test_bots_choose_legal_actions_from_their_views(game):
    s = new_state(game)
    bots = [make_bot(["heuristic", "random"][i % 2], seed=i, game="dice") for i in range(s.num_players)]
    while not s.is_over:
        seat = s.current_player
        view = s.view(seat)
        assert view.legal_actions == tuple(s.legal_actions())
        action = bots[seat].act(view)
        assert action in view.legal_actions
        # the zero-copy view gives the same decision
        assert bots[seat].act(LiveView(s, seat)) == action or bots[seat].name == "random"
        s.apply(action)


@settings(max_examples=10, deadline=None, derandomize=True, database=None)
@given(games, st.integers(0, 2**31))
def test_states_sampled_from_views_play_on_legally(game, seed):
    s = new_state(game)
    rng = random.Random(game["choices"])
    while not s.is_over:
        t = sample_state(s.view(s.current_player), random.Random(seed))
        assert t.legal_actions() == s.legal_actions() and t.scores() == s.scores()
        legal = s.legal_actions()
        a = legal[rng.randrange(len(legal))]
        s.apply(a)
        t.apply(a)
        if s.phase != Phase.MOVE or a == 0:  # after a re-roll the dice differ by design
            assert t.pos == s.pos
