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

    action_to_string = staticmethod(action_to_string)
    string_to_action = staticmethod(string_to_action)


__all__ = ["GameRecord"]
