"""What one player may know in the dice game (docs/rules.md R11): everything but the future dice.

A :class:`PlayerView` is an immutable snapshot built from a :class:`GameState` for
one seat: the board, every marker, every player's stones, the dice on the table, the
phase. It leaves out only the state's ``seed`` and ``rolls``, which decide the future
dice. Bots act on views; :func:`~keltis_env.games.dice.state.sample_state` rebuilds a
full state from a view with future dice drawn from a random generator of the caller's
choosing (e.g. for search).

The state module builds views (``GameState.view``), so this module reads a state only
through its attributes and imports the state class for type checking alone: the
dependency goes one way, state -> view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from keltis_env.core.view import LiveSeatView, SeatView, legal_for, seat_fields

from .config import GameConfig
from .constants import EndReason, Phase

if TYPE_CHECKING:
    from .state import GameState


@dataclass(frozen=True, slots=True)
class PlayerView(SeatView):
    """An immutable snapshot of one player's information. Seats are absolute."""

    config: GameConfig
    phase: Phase
    end: EndReason
    extra_turn: bool  # the current turn is an extra turn
    dice: tuple[int, ...]  # the 5 faces on the table, sorted (5 = stone)
    counts: tuple[int, ...]  # dice showing each face (red..pink, stone)
    positions: tuple[tuple[int, ...], ...]  # positions[p][c]: row of p's marker in column c, 0 = none
    markers: tuple[int, ...]  # markers on the board per player
    upper: tuple[int, ...]  # markers in the upper zone (rows 7..9) per player
    upper_total: int
    upper_to_end: int  # the game ends when upper_total reaches this (5 / 7 / 8)
    stones: tuple[int, ...]
    bonus: tuple[tuple[int, ...], ...]  # bonus[c][r]: bonus symbol code, index 0 unused
    legal_actions: tuple[int, ...]  # the viewer's legal actions; empty when not to act
    scores: tuple[int, ...]  # every player's score if the game ended now

    @classmethod
    def of(cls, state: GameState, player: int) -> PlayerView:
        return cls(
            **seat_fields(state, player),
            extra_turn=state.extra_turn,
            dice=tuple(state.dice),
            counts=tuple(state.counts),
            positions=tuple(tuple(x) for x in state.pos),
            markers=tuple(state.markers),
            upper=tuple(state.upper),
            upper_total=state.upper_total,
            upper_to_end=state.upper_to_end,
            stones=tuple(state.stones),
            bonus=state.bonus,
            legal_actions=legal_for(state, player),
            scores=tuple(state.scores()),
        )


class LiveView(LiveSeatView):
    """A zero-copy, read-only window onto ``state`` for ``player``, with the fields of
    :class:`PlayerView`: it shares the state's lists instead of copying them. It is
    valid until the state next changes; the observation encoder reads one at every step.
    Use :class:`PlayerView` to keep one.
    """

    VIEW = PlayerView

    __slots__ = (
        "bonus",
        "counts",
        "dice",
        "extra_turn",
        "markers",
        "positions",
        "stones",
        "upper",
        "upper_to_end",
        "upper_total",
    )

    def __init__(self, state: GameState, player: int) -> None:
        super().__init__(state, player)
        self.extra_turn = state.extra_turn
        self.dice = state.dice
        self.counts = state.counts
        self.positions = state.pos
        self.markers = state.markers
        self.upper = state.upper
        self.upper_total = state.upper_total
        self.upper_to_end = state.upper_to_end
        self.stones = state.stones
        self.bonus = state.bonus


__all__ = ["LiveView", "PlayerView"]
