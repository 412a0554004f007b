"""The toy race's own bot (the bots every game has come from keltis_env.bots)."""

from __future__ import annotations

from typing import Any

from keltis_env.bots.base import Bot

from .state import VALUES


class LowestBot(Bot):
    """Plays its lowest playable card, else discards its lowest card."""

    name = "lowest"

    def act(self, view: Any) -> int:
        return min(view.legal_actions, key=lambda a: (a >= VALUES, a))
