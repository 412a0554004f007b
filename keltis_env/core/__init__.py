"""What no game owns: error types, the turn-based state base, the game descriptor and the
one registry, game records, validation helpers, observation segments, rewards, the match
loop, the one atomic file writer (:mod:`.files`), board rendering for environments
(:mod:`.rendering`) and picture helpers (:mod:`.pictures`). ``keltis_env.core`` imports no
game; its engine parts use the standard library only (this package's ``__init__`` imports
nothing heavier)."""

from .errors import ActionError, ConfigError, GamePluginError, KeltisError, RecordError, StateError
from .game import GameDescriptor, game_for_env, game_names, get_game, load_record, register_game
from .record import Record
from .state import TurnBasedState

__all__ = [
    "ActionError",
    "ConfigError",
    "GameDescriptor",
    "GamePluginError",
    "KeltisError",
    "Record",
    "RecordError",
    "StateError",
    "TurnBasedState",
    "game_for_env",
    "game_names",
    "get_game",
    "load_record",
    "register_game",
]
