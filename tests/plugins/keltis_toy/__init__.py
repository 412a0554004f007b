"""A toy game outside the package, found through the entry-point group ``keltis_env.games``
the way another distribution's game is (the tests write its ``dist-info``): a
one-colour ascending-card race for 2 to 4 players (:mod:`keltis_toy.state`)."""

from .game import GAME
from .state import ACTION_RANGES, NUM_ACTIONS, GameConfig, GameRecord, GameState, PlayerView

__all__ = ["ACTION_RANGES", "GAME", "NUM_ACTIONS", "GameConfig", "GameRecord", "GameState", "PlayerView"]
