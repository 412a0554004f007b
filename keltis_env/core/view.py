"""What every game's per-player view has in common: the seat, the options, whose turn it
is, the phase, the end and the turn count (standard library only).

A game's immutable view (its ``PlayerView``) derives from :class:`SeatView` and adds what
that seat may know of its game; its zero-copy window (its ``LiveView``) derives from
:class:`LiveSeatView`. Seats are absolute.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar

from .state import TurnBasedState


def seat_fields(state: Any, player: int) -> dict[str, Any]:
    """The :class:`SeatView` fields of ``state`` seen by ``player`` (a seat of the game)."""
    if not 0 <= player < state.num_players:
        raise ValueError(f"player {player} does not exist; seats are 0..{state.num_players - 1}")
    return {
        "player": player,
        "config": state.config,
        "num_players": state.num_players,
        "current_player": state.current,
        "first_player": state.first_player,
        "phase": state.phase,
        "end": state.end,
        "turn": state.turn,
    }


def legal_for(state: TurnBasedState, player: int) -> tuple[int, ...]:
    """``player``'s legal actions: empty unless that seat is to act."""
    return tuple(state.legal_actions()) if state.current == player and not state.is_over else ()


@dataclass(frozen=True, slots=True)
class SeatView:
    """An immutable snapshot of what every game shows one seat; games add their fields."""

    player: int
    config: Any
    num_players: int
    current_player: int
    first_player: int
    phase: IntEnum
    end: IntEnum
    turn: int

    @property
    def is_over(self) -> bool:
        return self.end != 0


class LiveSeatView:
    """A zero-copy, read-only window onto a state for one seat, with the fields of
    :class:`SeatView` (a game's subclass adds its own). It shares the state's lists and
    is valid until the state next changes."""

    #: the game's immutable view, which :meth:`snapshot` builds
    VIEW: ClassVar[Any]

    __slots__ = ("_state", "config", "current_player", "end", "first_player", "num_players", "phase", "player", "turn")

    def __init__(self, state: Any, player: int) -> None:
        self._state = state
        self.player = player
        self.config = state.config
        self.num_players = state.num_players
        self.current_player = state.current
        self.first_player = state.first_player
        self.phase = state.phase
        self.end = state.end
        self.turn = state.turn

    @property
    def legal_actions(self) -> tuple[int, ...]:
        return legal_for(self._state, self.player)

    @property
    def scores(self) -> list[int]:
        scores: list[int] = self._state.scores()
        return scores

    @property
    def is_over(self) -> bool:
        return bool(self.end != 0)

    def snapshot(self) -> Any:
        """An immutable view of the same seat, to keep."""
        return self.VIEW.of(self._state, self.player)


__all__ = ["LiveSeatView", "SeatView", "legal_for", "seat_fields"]
