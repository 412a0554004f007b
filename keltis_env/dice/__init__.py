"""The Keltis dice game (RULES.md R11): plain-Python rules engine, no numpy or gymnasium.

It reuses the card game's board facts (colours, row values) and error types
(``ConfigError``, ``ActionError``, ``StateError``, ``RecordError``), and its records are
the shared ``GameRecord`` with ``GAME = "dice"``. Typical use::

    from keltis_env.dice import DiceConfig, DiceState
    state = DiceState.new_game(DiceConfig(num_players=3), seed=7)
    while not state.is_over:
        state.apply(state.legal_actions()[0])
    print(state.scores(), state.winners())
"""

from keltis_env.engine.actions import ActionError
from keltis_env.engine.config import ConfigError
from keltis_env.engine.serialize import StateError

from .actions import ACTION_RANGES, NUM_ACTIONS, action_to_string, reroll_action, string_to_action
from .config import DiceConfig
from .record import DiceRecord, RecordError
from .state import DiceState, EndReason, Phase, landing_row, roll_faces
from .view import DiceLiveView, DicePlayerView, sample_state

__all__ = [
    "ACTION_RANGES",
    "NUM_ACTIONS",
    "ActionError",
    "ConfigError",
    "DiceConfig",
    "DiceLiveView",
    "DicePlayerView",
    "DiceRecord",
    "DiceState",
    "EndReason",
    "Phase",
    "RecordError",
    "StateError",
    "action_to_string",
    "landing_row",
    "reroll_action",
    "roll_faces",
    "sample_state",
    "string_to_action",
]
