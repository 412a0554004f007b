"""The Keltis dice game (docs/rules.md R11): plain-Python rules engine, no numpy or gymnasium.

It exports the same names as every game package (``GameConfig``, ``GameState``,
``PlayerView``, ``LiveView``, ``GameRecord``, ...). Typical use::

    from keltis_env.games.dice import GameConfig, GameState
    state = GameState.new_game(GameConfig(num_players=3), seed=7)
    while not state.is_over:
        state.apply(state.legal_actions()[0])
    print(state.scores(), state.winners())
"""

from keltis_env.core.errors import ActionError, ConfigError, RecordError, StateError
from keltis_env.core.game import register_game

from .actions import ACTION_RANGES, NUM_ACTIONS, action_to_string, reroll_action, string_to_action
from .config import GameConfig
from .constants import EndReason, Phase
from .game import GAME
from .record import GameRecord
from .state import GameState, landing_row, roll_faces, sample_state
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
    "landing_row",
    "reroll_action",
    "roll_faces",
    "sample_state",
    "string_to_action",
]
