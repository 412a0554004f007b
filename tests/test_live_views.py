"""Bots that read a view only while they decide take the match loop's zero-copy live view
(``accepts_live_view``): the same decisions as on a snapshot, nothing in the state changed,
and the card game's live view answers every question its snapshot answers."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from keltis_env.bots import RandomBot, make_bot
from keltis_env.core.game import get_game
from keltis_env.core.match import Match

KELTIS = get_game("keltis")
#: the card game's bots that declare they take the live view (ismcts kept small: it is slow)
LIVE_SPECS = ("random", "heuristic", "planner", "ismcts:iterations=8")


def positions(num_players: int, seed: int, count: int) -> list[Any]:
    """``count`` positions of one random game (every phase, the end included)."""
    state = KELTIS.new_state(KELTIS.make_config(num_players=num_players), seed)
    rng = random.Random(seed)
    out = []
    while not state.is_over:
        out.append(state.clone())
        legal = state.legal_actions()
        state.apply(legal[rng.randrange(len(legal))])
    step = max(1, len(out) // count)
    return out[::step]


@pytest.mark.parametrize("spec", LIVE_SPECS)
def test_the_card_games_view_only_bots_declare_they_take_the_live_view(spec: str) -> None:
    assert make_bot(spec, game="keltis", seed=0).accepts_live_view is True


@pytest.mark.parametrize("spec", LIVE_SPECS)
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_a_bot_decides_the_same_on_the_live_view_as_on_a_snapshot_and_changes_nothing(spec: str,
                                                                                      num_players: int) -> None:
    count = 6 if spec.startswith("ismcts") else 30
    for state in positions(num_players, 11 + num_players, count):
        seat = state.current_player
        before = state.to_dict()
        on_copy = make_bot(spec, game="keltis", seed=5).act(state.view(seat))
        on_live = make_bot(spec, game="keltis", seed=5).act(KELTIS.live_view(state, seat))
        assert on_live == on_copy
        assert state.to_dict() == before


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_the_live_view_answers_like_the_snapshot(num_players: int) -> None:
    for state in positions(num_players, 3, 20):
        for seat in range(num_players):
            live, snap = KELTIS.live_view(state, seat), state.view(seat)
            assert live.seen_counts() == snap.seen_counts()
            assert live.unseen_counts() == snap.unseen_counts()
            assert tuple(live.hand_sizes) == snap.hand_sizes
            assert tuple(live.legal_actions) == snap.legal_actions
            assert tuple(live.scores) == snap.scores
            for field in ("hand", "large", "wishing", "tile_points"):
                assert tuple(getattr(live, field)) == getattr(snap, field), field
            assert live.snapshot() == snap


@pytest.mark.parametrize("spec", ["random", "heuristic", "planner", "ismcts:iterations=4"])
def test_a_match_with_live_view_bots_plays_the_same_game_as_with_snapshots(spec: str) -> None:
    class Snapshots:
        """The same bot, told to take snapshots."""

        accepts_live_view = False

        def __init__(self, bot: Any) -> None:
            self.bot = bot

        def act(self, view: Any) -> int:
            assert not hasattr(view, "_state")  # a snapshot, not the state's window
            return int(self.bot.act(view))

    games = []
    for wrap in (False, True):
        bots: list[Any] = [make_bot(spec, game="keltis", seed=seat) for seat in range(3)]
        if wrap:
            bots = [Snapshots(b) for b in bots]
        match = Match(KELTIS, KELTIS.new_state(KELTIS.make_config(num_players=3), 21), bots, record=True)
        games.append(match.run())
    assert games[0].actions == games[1].actions and games[0].scores == games[1].scores


def test_the_match_loop_gives_a_live_view_bot_the_live_view() -> None:
    seen: list[type] = []

    class Spy(RandomBot):
        def act(self, view: Any) -> int:
            seen.append(type(view))
            return super().act(view)

    Match(KELTIS, KELTIS.new_state(KELTIS.make_config(), 1), [Spy(0), Spy(1)]).run()
    assert set(seen) == {type(KELTIS.live_view(KELTIS.new_state(KELTIS.make_config(), 1), 0))}


def test_a_bot_that_keeps_views_is_given_snapshots() -> None:
    kept: list[Any] = []

    class Keeper(RandomBot):
        accepts_live_view = False

        def act(self, view: Any) -> int:
            kept.append(copy.copy(view))
            return super().act(view)

    Match(KELTIS, KELTIS.new_state(KELTIS.make_config(), 2), [Keeper(0), RandomBot(1)]).run()
    assert kept and all(type(v) is type(KELTIS.new_state(KELTIS.make_config(), 2).view(0)) for v in kept)
    # snapshots stay as they were: the first one still shows the opening hand size
    assert sum(kept[0].hand_sizes) > 0 and kept[0].turn == 0
