"""The uniform random baseline."""

from __future__ import annotations

from typing import Any

from .base import Bot


class RandomBot(Bot):
    """Chooses uniformly among the legal actions; works for every game of the package."""

    name = "random"
    #: It reads only ``view.legal_actions``, during ``act``: the match loop may pass the live view.
    accepts_live_view = True

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("RandomBot.act called for a view with no legal action (not this player's turn)")
        return legal[self.rng.randrange(len(legal))]
