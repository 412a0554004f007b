"""The Keltis rules engine (docs/rules.md R1-R10): plain Python, no numpy or gymnasium.

Typical use::

    from keltis_env.games.keltis import GameConfig, GameState
    state = GameState.new_game(GameConfig(num_players=3), seed=7)
    while not state.is_over:
        state.apply(state.legal_actions()[0])
    print(state.scores(), state.winners())
"""

from keltis_env.core.errors import ActionError, ConfigError, RecordError, StateError
from keltis_env.core.game import register_game

from .actions import ACTION_RANGES, NUM_ACTIONS, action_to_string, string_to_action
from .config import GameConfig
from .constants import EndReason, Phase
from .game import GAME
from .record import GameRecord
from .state import GameState, sample_state
from .view import LiveView, PlayerView

register_game(GAME)

__all__ = [
    "ACTION_RANGES",
    "GAME",
    "NUM_ACTIONS",
    "ActionError",
    "ConfigError",
    "EndReason",
    "GameConfig",
    "GameRecord",
    "GameState",
    "LiveView",
    "Phase",
    "PlayerView",
    "RecordError",
    "StateError",
    "action_to_string",
    "sample_state",
    "string_to_action",
]
