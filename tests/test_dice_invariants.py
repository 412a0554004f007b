"""Random-playout invariants of the dice game (RULES.md R11), over hypothesis-drawn seeds,
player counts, options and action choices (OpenSpiel's random-sim test, STYLE.md)."""

from __future__ import annotations

import json
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from keltis_env.bots import make_bot
from keltis_env.games.dice import NUM_ACTIONS, ActionError, DiceConfig, DiceState, Phase
from keltis_env.games.dice.constants import (
    MARKERS_PER_PLAYER,
    NUM_DICE,
    SCORE_MAX,
    SCORE_MIN,
    UPPER_FIRST_ROW,
    UPPER_MARKERS_TO_END,
)
from keltis_env.games.dice.encoding import DiceObservationEncoder
from keltis_env.games.dice.state import sample_state
from keltis_env.games.dice.view import DiceLiveView

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


def new_state(game: dict) -> DiceState:
    config = DiceConfig(num_players=game["num_players"], bonus_layout=game["bonus_layout"], max_turns=game["max_turns"])
    return DiceState.new_game(config, seed=game["seed"])


def check_caches(s: DiceState) -> None:
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
    encoder = DiceObservationEncoder(s.num_players)
    bound = s.config.max_turns * s.config.max_decisions_per_turn()
    decisions = 0
    while not s.is_over:
        legal = s.legal_actions()
        # legal set: non-empty, sorted, unique; the mask is exactly the legal set
        assert legal and legal == sorted(set(legal))
        mask = encoder.mask(legal)
        assert set(np.flatnonzero(mask).tolist()) == set(legal) and mask.dtype == np.int8
        check_caches(s)
        assert all(SCORE_MIN <= v <= SCORE_MAX for v in s.scores())
        # clone and dict round-trips are equal, JSON-safe and independent
        copy = s.clone()
        assert copy == s and DiceState.from_dict(json.loads(json.dumps(s.to_dict()))) == s
        # observations lie in the declared box for every seat
        for seat in range(s.num_players):
            obs = encoder.encode(DiceLiveView(s, seat))
            assert obs.dtype == np.float32 and obs.shape == (encoder.size,)
            assert obs.min() >= -1.0 and obs.max() <= 2.0
        # an illegal action raises and changes nothing
        illegal = [a for a in range(NUM_ACTIONS) if a not in legal]
        if illegal:
            before = s.to_dict()
            a = illegal[rng.randrange(len(illegal))]
            try:
                s.apply(a)
            except ActionError as exc:
                assert str(a) in str(exc)
            else:
                raise AssertionError(f"illegal action {a} was accepted")
            assert s.to_dict() == before
        s.apply(legal[rng.randrange(len(legal))])
        decisions += 1
        assert decisions <= bound and s.turn <= s.config.max_turns
    check_caches(s)
    assert s.legal_actions() == []
    assert s.terminated != s.truncated
    assert s.truncated == (s.turn == s.config.max_turns)
    assert all(SCORE_MIN <= v <= SCORE_MAX for v in s.scores())
    assert DiceState.from_dict(s.to_dict()) == s


def play(s: DiceState, choices: int, noise: bool = False) -> list[tuple]:
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


@SETTINGS
@given(games)
def test_games_are_determined_by_the_seed_even_with_global_random_use_in_between(game):
    assert play(new_state(game), game["choices"]) == play(new_state(game), game["choices"], noise=True)


@SETTINGS
@given(games, st.integers(0, 300))
def test_clones_and_dict_round_trips_continue_identically(game, cut):
    s = new_state(game)
    rng = random.Random(game["choices"])
    for _ in range(cut):
        if s.is_over:
            break
        legal = s.legal_actions()
        s.apply(legal[rng.randrange(len(legal))])
    clone, rebuilt = s.clone(), DiceState.from_dict(s.to_dict())
    trajectory = play(s, game["choices"] + 1)
    assert play(clone, game["choices"] + 1) == trajectory
    assert play(rebuilt, game["choices"] + 1) == trajectory
    assert clone == s == rebuilt


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
        assert bots[seat].act(DiceLiveView(s, seat)) == action or bots[seat].name == "random"
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
