"""What the page is sent of a position, as JSON (standard library only).

:func:`seat_view` is one seat's :class:`PlayerView` (R10: what that seat may know, and
nothing else) with its fields as plain JSON values; it is the only picture of a position a
page gets while a person plays. :func:`full_view` adds every seat's hidden hand (the
full state, less the order of the draw pile and the future dice); the sessions send it only
where no person plays (watch, replay) or once the game is over. Generic over the games: a
view is a dataclass whose fields are numbers, enums, tuples and the game's options.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import Enum
from typing import Any

#: view fields that the response gives elsewhere (the legal moves) or not at all
_LEFT_OUT = ("legal_actions", "config")


def plain(value: Any) -> Any:
    """``value`` as JSON: enums by their lower-case name, options by their dict, tuples as lists."""
    if isinstance(value, Enum):
        return value.name.lower()
    if isinstance(value, bool) or value is None or isinstance(value, (int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if callable(getattr(value, "to_dict", None)):
        return plain(value.to_dict())
    raise TypeError(f"a view field of type {type(value).__name__} has no JSON form")


def seat_view(state: Any, seat: int) -> dict[str, Any]:
    """What ``seat`` may know of ``state`` (its view), as JSON."""
    view = state.view(seat)
    out = {f.name: plain(getattr(view, f.name)) for f in dataclasses.fields(view) if f.name not in _LEFT_OUT}
    out["options"] = plain(view.config)
    return out


def full_view(state: Any) -> dict[str, Any]:
    """The whole position: the view of the seat to move, with ``player`` null and, for a
    game with hands, every seat's hand under ``hands``."""
    out = seat_view(state, int(state.current))
    out["player"] = None
    out.pop("hand", None)
    views = [state.view(p) for p in range(state.num_players)]
    if all(hasattr(v, "hand") for v in views):
        out["hands"] = [plain(v.hand) for v in views]
    return out


def moves(game: Any, legal: Sequence[int]) -> list[dict[str, Any]]:
    """The legal actions with their text, in id order."""
    return [{"id": int(a), "text": game.action_to_string(a)} for a in sorted(legal)]


def mask(game: Any, legal: Sequence[int]) -> list[int]:
    """The legal action mask: 1 at every legal action id, 0 elsewhere (``num_actions`` long)."""
    allowed = set(legal)
    return [1 if a in allowed else 0 for a in range(game.num_actions)]


__all__ = ["full_view", "mask", "moves", "plain", "seat_view"]
