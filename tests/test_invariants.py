"""Random-playout invariants of the card game (OpenSpiel's random-sim test), driven by
hypothesis: cards conserved, hand sizes, figures, the end conditions, what a view holds.
The invariants every game shares (legal set and mask, clone and dict round trips, bounded
length, score bounds, hidden information, determinism, records) are checked for every
game in test_conformance.py.

Each example is a whole game: a configuration (2-4 players, default, random or explicit
tile layout, sometimes a small ``max_turns``), a deal seed and a seed for the random
player. Cheap invariants are checked after every decision, costly ones at a sample of
decisions.
"""

from __future__ import annotations

import random
from collections import Counter

from conftest import make_state_dict
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_conformance import check_sampled_step as check_shared_sampled_step

from keltis_env.games.keltis import ACTION_RANGES, GAME, NUM_ACTIONS, EndReason, GameConfig, GameState, Phase
from keltis_env.games.keltis.actions import PASS
from keltis_env.games.keltis.constants import (
    COLORS,
    GOAL_FIGURES_TO_END,
    MAX_DECISIONS_PER_TURN,
    NUM_CARD_KINDS,
    NUM_CARDS,
    NUM_COLORS,
    NUM_VALUES,
    SCORE_MAX,
    SCORE_MIN,
    TILE_POINTS,
)
from keltis_env.games.keltis.view import PlayerView

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

explicit_layouts = st.lists(
    st.lists(st.integers(1, 8), min_size=4, max_size=4, unique=True), min_size=5, max_size=5
).map(lambda rows: tuple(tuple(r) for r in rows))


@st.composite
def configs(draw: st.DrawFn) -> GameConfig:
    layout = draw(st.one_of(st.sampled_from(["default", "random"]), explicit_layouts))
    max_turns = draw(st.one_of(st.just(500), st.integers(1, 80)))
    return GameConfig(num_players=draw(st.sampled_from([2, 3, 4])), tile_layout=layout, max_turns=max_turns)


seeds = st.integers(0, 2**63 - 1)


@st.composite
def positions(draw: st.DrawFn) -> GameState:
    """A mid-game position: figures anywhere on the paths (fewer than five in the goal
    area), wishing stones and tile points already taken, the cards dealt at random.
    The played rows are empty, as if every figure had moved by bonus steps."""
    config = draw(configs())
    n = config.num_players
    figures, large, in_goal = {}, {}, 0
    for p in range(n):
        rows = draw(st.lists(st.integers(0, 9), min_size=5, max_size=5))
        for c, row in enumerate(rows):
            if row >= 7:
                in_goal += 1
                if in_goal >= 5:
                    rows[c] = 6
        figures[p] = {COLORS[c]: row for c, row in enumerate(rows) if row}
        on_start = [None] if len(figures[p]) < 5 else []  # five figures out: one is the large
        big = draw(st.sampled_from([*on_start, *figures[p]]))
        if big is not None:
            large[p] = big
    stones = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n).filter(lambda w: sum(w) <= 9))
    data = make_state_dict(
        n,
        figures=figures,
        large=large,
        wishing=dict(enumerate(stones)),
        current=draw(st.integers(0, n - 1)),
        max_turns=config.max_turns,
        tile_layout=config.tile_layout,
        fill_seed=draw(st.integers(0, 2**32)),
    )
    # Tile points as if each figure had scored every point tile on its way (R6): a
    # player's figure arrives on a stone only once, so the total stays within bounds.
    state = GameState.from_dict(data)
    for p in range(n):
        passed = [state.tiles[c][r] for c in range(NUM_COLORS) for r in range(1, state.pos[p][c] + 1)]
        data["players"][p]["tile_points"] = sum(TILE_POINTS.get(t, 0) for t in passed)
    return GameState.from_dict(data)


def card_counts(state: GameState) -> Counter[int]:
    counts: Counter[int] = Counter(state.deck) + Counter(state.removed)
    for hand in state.hands:
        counts.update(hand)
    for c in range(NUM_COLORS):
        counts.update(c * NUM_VALUES + v for v in state.discards[c])
        for rows in state.rows:
            counts.update(c * NUM_VALUES + v for v in rows[c])
    return counts


def check_every_step(state: GameState) -> None:
    counts = card_counts(state)
    assert sum(counts.values()) == NUM_CARDS
    assert all(counts[k] == 2 for k in range(NUM_CARD_KINDS)), "a card appeared or vanished"
    legal = state.legal_actions()
    if state.is_over:
        assert legal == []
    else:
        assert legal, "no legal action before the end of the game"
        assert legal == sorted(set(legal)) and legal[0] >= 0 and legal[-1] < NUM_ACTIONS
    for score in state.scores():
        assert SCORE_MIN <= score <= SCORE_MAX
    # a player has at most one figure per path and the goal count matches the board
    assert state.goal_count == sum(1 for pos in state.pos for r in pos if r >= 7)
    for p in range(state.num_players):
        assert state.small_figures_left(p) >= 0
        expected = 7 if (p == state.current and state.phase in (Phase.DRAW, Phase.BONUS)) else 8
        if not (state.end == EndReason.GOAL and p == state.current):
            assert len(state.hands[p]) == expected


def hidden_counts(state: GameState, player: int) -> list[int]:
    """Copies of each card kind that ``player`` cannot see (R10)."""
    hidden = Counter(state.deck) + Counter(state.removed)
    for q, hand in enumerate(state.hands):
        if q != player:
            hidden.update(hand)
    return [hidden[k] for k in range(NUM_CARD_KINDS)]


def check_sampled_step(state: GameState, rng: random.Random) -> None:
    """Costly checks: what each player's view holds (R10), then the checks every game
    shares (legal set vs. illegal_reason, masks, hidden information, clones, round trips;
    test_conformance.py) on this game's positions and options."""
    check_shared_sampled_step(GAME, state, rng)
    for p in range(state.num_players):
        view = PlayerView.of(state, p)
        # The view shows the player's own hand; every other card it shows is public
        # (rows, discards), so what it leaves out is exactly the hidden cards (R10).
        assert view.hand == tuple(state.hands[p])
        assert view.hand_sizes == tuple(len(h) for h in state.hands)
        assert view.deck_size == len(state.deck)
        assert view.unseen_counts() == hidden_counts(state, p)


def eager_choice(rng: random.Random, legal: list[int]) -> int:
    """Mostly plays cards and takes bonus steps, so that games also end in the goal area."""
    moves = [a for a in legal if a < ACTION_RANGES["discard"][0] or ACTION_RANGES["bonus_advance"][0] <= a < PASS]
    return rng.choice(moves) if moves and rng.random() < 0.9 else rng.choice(legal)


def play_out(
    config: GameConfig, seed: int, play_seed: int, check_every: int = 0, start: GameState | None = None
) -> tuple[GameState, list[int]]:
    state = start if start is not None else GameState.new_game(config, seed)
    turns_left = config.max_turns - state.turn
    rng = random.Random(play_seed)
    eager = play_seed % 2 == 1
    actions: list[int] = []
    in_turn = 0  # decisions in the current turn
    while not state.is_over:
        check_every_step(state)
        if check_every and len(actions) % check_every == 0:
            check_sampled_step(state, random.Random(len(actions)))
        turn = state.turn
        legal = state.legal_actions()
        action = eager_choice(rng, legal) if eager else rng.choice(legal)
        state.apply(action)
        actions.append(action)
        in_turn += 1
        assert in_turn <= MAX_DECISIONS_PER_TURN, "a turn with more decisions than MAX_DECISIONS_PER_TURN"
        assert state.turn in (turn, turn + 1)
        if state.turn != turn:
            in_turn = 0
    assert len(actions) <= turns_left * MAX_DECISIONS_PER_TURN
    check_every_step(state)
    if check_every:
        check_sampled_step(state, random.Random(0))
    return state, actions


def check_end(state: GameState) -> None:
    event(f"end: {state.end.name.lower()}")  # shown by --hypothesis-show-statistics
    assert state.is_over and state.phase == Phase.OVER
    assert state.terminated != state.truncated
    if state.end == EndReason.GOAL:
        assert state.goal_count == GOAL_FIGURES_TO_END
    elif state.end == EndReason.DECK:
        assert state.deck == [] and state.goal_count < GOAL_FIGURES_TO_END
    else:
        assert state.end == EndReason.TRUNCATED and state.turn == state.config.max_turns
        assert state.deck and state.goal_count < GOAL_FIGURES_TO_END
    assert all(PlayerView.of(state, p).legal_actions == () for p in range(state.num_players))


@SETTINGS
@given(config=configs(), seed=seeds, play_seed=seeds)
def test_random_playouts_keep_every_invariant(config, seed, play_seed):
    state, _ = play_out(config, seed, play_seed, check_every=11)
    check_end(state)


@SETTINGS
@given(start=positions(), play_seed=seeds)
def test_random_playouts_from_random_positions_keep_every_invariant(start, play_seed):
    state, _ = play_out(start.config, 0, play_seed, check_every=3, start=start)
    check_end(state)


