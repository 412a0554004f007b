"""What one player may know in the dice game (RULES.md R11): everything but the future dice.

A :class:`DicePlayerView` is an immutable snapshot built from a :class:`DiceState` for
one seat: the board, every marker, every player's stones, the dice on the table, the
phase. It leaves out only the state's ``seed`` and ``rolls``, which decide the future
dice. Bots act on views; :func:`~keltis_env.games.dice.state.sample_state` rebuilds a
full state from a view with future dice drawn from a random generator of the caller's
choosing (e.g. for search).

The state module builds views (``DiceState.view``), so this module reads a state only
through its attributes and imports the state class for type checking alone: the
dependency goes one way, state -> view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .config import DiceConfig
from .constants import EndReason, Phase

if TYPE_CHECKING:
    from .state import DiceState


@dataclass(frozen=True, slots=True)
class DicePlayerView:
    """An immutable snapshot of one player's information. Seats are absolute."""

    player: int
    config: DiceConfig
    num_players: int
    current_player: int
    first_player: int
    phase: Phase
    end: EndReason
    turn: int
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
    def of(cls, state: DiceState, player: int) -> DicePlayerView:
        if not 0 <= player < state.num_players:
            raise ValueError(f"player {player} does not exist; seats are 0..{state.num_players - 1}")
        to_act = state.current == player and state.phase != Phase.OVER
        return cls(
            player=player,
            config=state.config,
            num_players=state.num_players,
            current_player=state.current,
            first_player=state.first_player,
            phase=state.phase,
            end=state.end,
            turn=state.turn,
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
            legal_actions=tuple(state.legal_actions()) if to_act else (),
            scores=tuple(state.scores()),
        )

    @property
    def is_over(self) -> bool:
        return self.phase == Phase.OVER


class DiceLiveView:
    """A zero-copy, read-only window onto ``state`` for ``player``, with the fields of
    :class:`DicePlayerView`: it shares the state's lists instead of copying them. It is
    valid until the state next changes; the observation encoder reads one at every step.
    Use :class:`DicePlayerView` to keep one.
    """

    __slots__ = (
        "_state",
        "bonus",
        "config",
        "counts",
        "current_player",
        "dice",
        "end",
        "extra_turn",
        "first_player",
        "markers",
        "num_players",
        "phase",
        "player",
        "positions",
        "stones",
        "turn",
        "upper",
        "upper_to_end",
        "upper_total",
    )

    def __init__(self, state: DiceState, player: int) -> None:
        self._state = state
        self.player = player
        self.config = state.config
        self.num_players = state.num_players
        self.current_player = state.current
        self.first_player = state.first_player
        self.phase = state.phase
        self.end = state.end
        self.turn = state.turn
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

    @property
    def legal_actions(self) -> tuple[int, ...]:
        s = self._state
        return tuple(s.legal_actions()) if s.current == self.player and s.phase != Phase.OVER else ()

    @property
    def scores(self) -> list[int]:
        return self._state.scores()

    @property
    def is_over(self) -> bool:
        return self.phase == Phase.OVER

    def snapshot(self) -> DicePlayerView:
        return DicePlayerView.of(self._state, self.player)


__all__ = ["DiceLiveView", "DicePlayerView"]
