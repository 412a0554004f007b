"""What no game owns: error types, the turn-based state base, the game descriptor and the
one registry, game records, validation helpers, observation segments, rewards, the match
loop (the game contract); and the infrastructure around it: the one output-path check and
atomic file writer (:mod:`.output_files`), a board in a render mode (:mod:`.render`) and
what every board picture shares (:mod:`.render_image`). ``keltis_env.core`` imports no
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
