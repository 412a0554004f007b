"""Baseline players acting on a player's view (never on the full state).

``make_bot("random")``, ``make_bot("heuristic")``, ``make_bot("ismcts:iterations=400")``:
an agent *spec* is a registered name, optionally followed by ``:key=value,key=value``
options passed to the bot's constructor (integers and floats are converted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import Bot
from .dice_heuristic import DiceHeuristicBot
from .heuristic import HeuristicBot
from .ismcts import ISMCTSBot
from .random_bot import RandomBot

#: name -> factory(seed=..., **options) -> Bot, per game ("keltis", "dice").
REGISTRY: dict[str, dict[str, Callable[..., Bot]]] = {
    "keltis": {"random": RandomBot, "heuristic": HeuristicBot, "ismcts": ISMCTSBot},
    "dice": {"random": RandomBot, "heuristic": DiceHeuristicBot},
}


def _ppo_bot(**options: Any) -> Bot:
    """``ppo:PATH``: a trained policy (imported lazily: it needs numpy, and torch to load)."""
    from .ppo import PPOBot

    return PPOBot(**options)


REGISTRY["keltis"]["ppo"] = _ppo_bot


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"ismcts:iterations=400,c=1.4"`` -> ``("ismcts", {"iterations": 400, "c": 1.4})``."""
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    if rest:
        for i, item in enumerate(rest.split(",")):
            key, eq, value = item.partition("=")
            if i == 0 and not eq and key.strip():  # a bare first item is a file: "ppo:policies/x.zip"
                options["path"] = key.strip()
                continue
            if not eq or not key:
                raise ValueError(f"bad option {item!r} in agent spec {spec!r}; expected key=value")
            options[key.strip()] = _convert(value.strip())
    return name.strip(), options


def _convert(value: str) -> Any:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def make_bot(spec: str, seed: int | None = None, game: str = "keltis") -> Bot:
    """A bot from an agent spec (see the module doc)."""
    if game not in REGISTRY:
        raise ValueError(f"unknown game {game!r}; games are {', '.join(REGISTRY)}")
    name, options = parse_spec(spec)
    bots = REGISTRY[game]
    if name not in bots:
        raise ValueError(f"unknown bot {name!r} for game {game!r}; known bots: {', '.join(sorted(bots))}")
    try:
        return bots[name](seed=seed, **options)
    except TypeError as exc:
        raise ValueError(f"bad options for bot {name!r}: {exc}") from None


__all__ = ["REGISTRY", "Bot", "DiceHeuristicBot", "RandomBot", "make_bot", "parse_spec"]
