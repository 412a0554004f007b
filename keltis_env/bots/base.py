"""The one interface shared by bots, evaluation, human play and trained policies."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, ClassVar


class Bot(ABC):
    """A player that chooses an action from its own view of the game.

    ``act`` receives a player's view (``PlayerView`` for the card game: what that seat
    may know, R10, with ``view.legal_actions`` non-empty) and returns one of
    ``view.legal_actions``. A bot never sees the game state itself. Its randomness comes
    only from ``self.rng``, seeded by ``seed``, so a bot is reproducible.
    """

    name: ClassVar[str] = "bot"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def seed(self, seed: int | None) -> None:
        """Reset the bot's random generator."""
        self.rng = random.Random(seed)

    @abstractmethod
    def act(self, view: Any) -> int:
        """One of ``view.legal_actions``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
