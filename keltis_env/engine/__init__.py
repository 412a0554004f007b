"""The Keltis rules engine (RULES.md R1-R10): plain Python, no numpy or gymnasium.

Typical use::

    from keltis_env.engine import GameConfig, GameState
    state = GameState.new_game(GameConfig(num_players=3), seed=7)
    while not state.is_over:
        state.apply(state.legal_actions()[0])
    print(state.scores(), state.winners())
"""

from .actions import (
    ACTION_RANGES,
    NUM_ACTIONS,
    ActionError,
    action_to_string,
    string_to_action,
)
from .config import ConfigError, GameConfig
from .record import GameRecord, RecordError
from .serialize import StateError
from .state import EndReason, GameState, Phase
from .view import PlayerView, sample_state

__all__ = [
    "ACTION_RANGES",
    "NUM_ACTIONS",
    "ActionError",
    "ConfigError",
    "EndReason",
    "GameConfig",
    "GameRecord",
    "GameState",
    "Phase",
    "PlayerView",
    "RecordError",
    "StateError",
    "action_to_string",
    "sample_state",
    "string_to_action",
]
