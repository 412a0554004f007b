"""Dice-game records: the shared :class:`~keltis_env.core.record.Record`, plugged
in with the dice game's state, options and action codec (``"game": "dice"``).

A record holds the options, the seed (or a start state) and the decisions; since the
state derives every roll from its seed, replaying the decisions reproduces the dice.
"""

from __future__ import annotations

from typing import Any, ClassVar

from keltis_env.core.record import Record

from .actions import action_to_string, string_to_action
from .config import GameConfig
from .state import GameState


class GameRecord(Record):
    """How a dice game started and every decision made in it."""

    GAME: ClassVar[str] = "dice"
    state_cls: ClassVar[Any] = GameState
    config_cls: ClassVar[Any] = GameConfig

    action_to_string = staticmethod(action_to_string)
    string_to_action = staticmethod(string_to_action)


__all__ = ["GameRecord"]
