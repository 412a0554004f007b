"""What every game state of the package has in common, whatever its rules.

A game's state class derives from :class:`TurnBasedState` and keeps, besides its own
fields, ``num_players``, ``current`` (the seat to decide), ``turn`` (turns completed),
``end`` (an ``IntEnum`` whose 0 means "not over") and a ``score(player)`` method; it names its truncation reason in
``TRUNCATED``. The shared environment, bots, evaluation and records rely only on this
interface plus ``legal_actions``, ``apply`` (which refuses illegal actions
through ``illegal_reason`` and ``refuse``), ``clone``, ``view``, ``to_dict`` and
``from_dict``.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar, NoReturn

from .errors import ActionError


class TurnBasedState:
    """Queries shared by the game states (current player, end, scores, winners)."""

    __slots__ = ()

    #: the ``end`` value of a game cut at the maximum number of turns (not a real end)
    TRUNCATED: ClassVar[IntEnum]

    num_players: int
    current: int
    turn: int
    end: IntEnum

    @property
    def current_player(self) -> int:
        """The seat that makes the next decision (the last mover once the game is over)."""
        return self.current

    @property
    def is_over(self) -> bool:
        """The game ended by the rules or was truncated."""
        return self.end != 0

    @property
    def terminated(self) -> bool:
        """The game ended by the rules."""
        return self.end != 0 and self.end != self.TRUNCATED

    @property
    def truncated(self) -> bool:
        """The game was cut at the maximum number of turns."""
        return self.end == self.TRUNCATED

    def legal_actions(self) -> list[int]:
        """The current player's legal action ids, ascending; empty once the game is over."""
        raise NotImplementedError

    def apply(self, action: int) -> None:
        """Make one decision for the current player (the game's rules).

        A game's ``apply`` takes any integer type (numpy's included, not bools), asks
        :meth:`illegal_reason` and, for an illegal action, calls :meth:`refuse`; the
        state is then unchanged. The dispatch to the rules stays inline in the game's
        method (it runs at every decision).
        """
        raise NotImplementedError

    def illegal_reason(self, action: int) -> str | None:
        """Why ``action`` is not legal now, or ``None`` when it is legal."""
        raise NotImplementedError

    def action_text(self, action: int) -> str:
        """The readable form of an action id (the game's ``action_to_string``)."""
        raise NotImplementedError

    def refuse(self, action: object, reason: str) -> NoReturn:
        """Raise the :class:`~keltis_env.core.errors.ActionError` that names an illegal
        ``action``, its readable form (``?`` when it has none) and ``reason``."""
        try:
            text = self.action_text(action)  # type: ignore[arg-type]
        except ActionError:
            text = "?"
        raise ActionError(f"illegal action {action!r} ({text}) for player {self.current}: {reason}")

    def score(self, player: int) -> int:
        raise NotImplementedError

    def scores(self) -> list[int]:
        """Every player's score if the game ended now."""
        return [self.score(p) for p in range(self.num_players)]

    def winners(self) -> list[int]:
        """Seats with the highest score; several when tied, as they share the victory."""
        scores = self.scores()
        best = max(scores)
        return [p for p, v in enumerate(scores) if v == best]

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        """Same game, same position: equal JSON forms."""
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, TurnBasedState)
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable
