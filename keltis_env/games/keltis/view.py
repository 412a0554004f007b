"""What one player may know (docs/rules.md R10), and sampling the rest consistently with it.

A :class:`PlayerView` is an immutable snapshot built from a :class:`GameState` for one
seat. It holds the public information and that seat's own hand, and nothing else: not
the order of the draw pile, not the other hands, not the cards removed with 2 players.
Bots act on views; :func:`~keltis_env.games.keltis.state.sample_state` deals the hidden
cards at random (for search), consistently with everything the view shows.

The state module builds views (``GameState.view``), so this module reads a state only
through its attributes and imports the state class for type checking alone: the
dependency goes one way, state -> view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from keltis_env.core.view import LiveSeatView, SeatView, legal_for, seat_fields

from .config import GameConfig
from .constants import COPIES_PER_CARD, NUM_CARD_KINDS, NUM_VALUES, EndReason, Phase

if TYPE_CHECKING:
    from .state import GameState


@dataclass(frozen=True, slots=True)
class PlayerView(SeatView):
    """An immutable snapshot of one player's information (R10). Seats are absolute."""

    config: GameConfig
    phase: Phase
    end: EndReason
    hand: tuple[int, ...]  # the viewer's own cards (kinds), sorted
    hand_sizes: tuple[int, ...]
    rows: tuple[tuple[tuple[int, ...], ...], ...]  # rows[p][c]: values played, in order
    directions: tuple[tuple[int, ...], ...]  # R4 per row: +1 ascending, -1 descending, 0 open
    positions: tuple[tuple[int, ...], ...]  # positions[p][c]: row of the figure, 0 = none
    large: tuple[int, ...]  # path of each player's large figure, -1 on the start stone
    tiles: tuple[tuple[int, ...], ...]  # tiles[c][r], tile codes, index 0 unused
    dark_rows: tuple[tuple[int, ...], ...]
    wishing: tuple[int, ...]
    tile_points: tuple[int, ...]
    discards: tuple[tuple[int, ...], ...]  # discards[c]: values, bottom first
    deck_size: int
    discarded_color: int  # the pile closed for this turn's draw (R3b), -1 for none
    goal_count: int
    legal_actions: tuple[int, ...]  # the viewer's legal actions; empty when not to act
    scores: tuple[int, ...]  # every player's score if the game ended now (public, R9)

    @classmethod
    def of(cls, state: GameState, player: int) -> PlayerView:
        return cls(
            **seat_fields(state, player),
            hand=tuple(state.hands[player]),
            hand_sizes=tuple(len(h) for h in state.hands),
            rows=tuple(tuple(tuple(r) for r in pr) for pr in state.rows),
            directions=tuple(tuple(d) for d in state.direction),
            positions=tuple(tuple(x) for x in state.pos),
            large=tuple(state.large),
            tiles=tuple(tuple(t) for t in state.tiles),
            dark_rows=state.dark_rows,
            wishing=tuple(state.wishing),
            tile_points=tuple(state.tile_points),
            discards=tuple(tuple(d) for d in state.discards),
            deck_size=len(state.deck),
            discarded_color=state.discarded,
            goal_count=state.goal_count,
            legal_actions=legal_for(state, player),
            scores=tuple(state.scores()),
        )

    def seen_counts(self) -> list[int]:
        """Copies of each card kind this player has seen: own hand, all rows, all discards."""
        return seen_counts(self)

    def unseen_counts(self) -> list[int]:
        """Copies of each card kind that are hidden from this player (other hands, draw
        pile and, with 2 players, the removed cards)."""
        return [COPIES_PER_CARD - s for s in seen_counts(self)]


def seen_counts(view: PlayerView | LiveView) -> list[int]:
    """Copies of each card kind ``view``'s player has seen: own hand, all rows, all discards."""
    seen = [0] * NUM_CARD_KINDS
    for k in view.hand:
        seen[k] += 1
    for player_rows in view.rows:
        for c, row in enumerate(player_rows):
            for v in row:
                seen[c * NUM_VALUES + v] += 1
    for c, pile in enumerate(view.discards):
        for v in pile:
            seen[c * NUM_VALUES + v] += 1
    return seen


class LiveView(LiveSeatView):
    """A zero-copy, read-only window onto ``state`` for ``player``, with the same fields
    as :class:`PlayerView` (R10): it shares the state's lists instead of copying them.
    It is valid until the state next changes; it exists so that the observation encoder
    and the bots that read a view only while they decide (``accepts_live_view``) can read
    one at every step without copying. Use :class:`PlayerView` to keep one.
    """

    VIEW = PlayerView

    __slots__ = (
        "dark_rows",
        "deck_size",
        "directions",
        "discarded_color",
        "discards",
        "goal_count",
        "hand",
        "large",
        "positions",
        "rows",
        "tile_points",
        "tiles",
        "wishing",
    )

    def __init__(self, state: GameState, player: int) -> None:
        super().__init__(state, player)
        self.hand = state.hands[player]
        self.rows = state.rows
        self.directions = state.direction
        self.positions = state.pos
        self.large = state.large
        self.tiles = state.tiles
        self.dark_rows = state.dark_rows
        self.wishing = state.wishing
        self.tile_points = state.tile_points
        self.discards = state.discards
        self.deck_size = len(state.deck)
        self.discarded_color = state.discarded
        self.goal_count = state.goal_count

    @property
    def hand_sizes(self) -> tuple[int, ...]:
        return tuple(len(h) for h in self._state.hands)

    def seen_counts(self) -> list[int]:
        """As :meth:`PlayerView.seen_counts`."""
        return seen_counts(self)

    def unseen_counts(self) -> list[int]:
        """As :meth:`PlayerView.unseen_counts`."""
        return [COPIES_PER_CARD - s for s in seen_counts(self)]


