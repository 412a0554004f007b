"""The uniform random baseline."""

from __future__ import annotations

from typing import Any

from .base import Bot


class RandomBot(Bot):
    """Chooses uniformly among the legal actions; works for every game of the package."""

    name = "random"

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("RandomBot.act called for a view with no legal action (not this player's turn)")
        return legal[self.rng.randrange(len(legal))]
