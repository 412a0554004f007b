"""Card-game records: the shared :class:`~keltis_env.core.record.Record`, plugged in with
the card game's state, options and action codec (``"game": "keltis"``)."""

from __future__ import annotations

from typing import Any, ClassVar

from keltis_env.core.record import Record

from .actions import action_to_string, string_to_action
from .config import GameConfig
from .state import GameState


class GameRecord(Record):
    """How a card game started and every decision made in it."""

    GAME: ClassVar[str] = "keltis"
    state_cls: ClassVar[Any] = GameState
    config_cls: ClassVar[Any] = GameConfig

    @staticmethod
    def action_to_string(action: int) -> str:
        """Readable form of a card-game action (``play red 7 large``, ``draw deck``, ...)."""
        return action_to_string(action)

    @staticmethod
    def string_to_action(text: str) -> int:
        """Action id of a readable card-game action."""
        return string_to_action(text)


__all__ = ["GameRecord"]
