"""Players acting on a player's view (never on the full state), for every game.

``make_bot("random")``, ``make_bot("heuristic", game="dice")``,
``make_bot("ismcts:iterations=400")``: an agent *spec* is a bot name registered in the
game's descriptor (:class:`keltis_env.core.game.GameDescriptor`, ``bots``), optionally
followed by ``:key=value,key=value`` options passed to the bot's constructor (integers
and floats are converted). ``ppo:PATH`` names a file as its first option.

A factory that takes ``game`` or ``num_players`` keyword arguments receives the game's
name and, when the caller knows it, the number of players, so that a bot made for another
game or player count (a trained policy) is refused when it is made; these two are the
caller's to give, never options of a spec.

The bots of a game are loaded only when asked for, so this package imports no game.
"""

from __future__ import annotations

import inspect
from typing import Any

from keltis_env.core.game import get_game

from .base import Bot
from .random_bot import RandomBot


def bot_names(game: str = "keltis") -> list[str]:
    """The bot names of a game, sorted."""
    return sorted(get_game(game).bots)


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"ismcts:iterations=400,c=1.4"`` -> ``("ismcts", {"iterations": 400, "c": 1.4})``."""
    if not isinstance(spec, str):
        raise ValueError(f"an agent spec is a string such as 'heuristic' or 'ppo:policy.zip', got {spec!r}")
    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    if rest:
        for i, item in enumerate(rest.split(",")):
            key, eq, value = item.partition("=")
            if i == 0 and not eq and key.strip():  # a bare first item is a file: "ppo:policies/x.zip"
                options["path"] = key.strip()
                continue
            if not eq or not key.strip() or not value.strip():
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


_CONTEXT = ("game", "num_players")  # given by the caller, not by the spec


def make_bot(spec: str, seed: int | None = None, game: str = "keltis", num_players: int | None = None) -> Bot:
    """A bot from an agent spec (see the module doc) for ``game`` and, when given,
    ``num_players`` players."""
    descriptor = get_game(game)
    name, options = parse_spec(spec)
    factory = descriptor.bot_factory(name)
    reserved = [key for key in options if key in _CONTEXT]
    if reserved:
        raise ValueError(f"agent spec {spec!r}: {reserved[0]!r} is not a bot option; the game and the number of "
                         "players come from where the bot plays")
    accepted = _options_of(factory)
    if accepted is not None:
        for key in options:
            if key not in accepted:
                what = f"takes no file ({options['path']!r})" if key == "path" else f"has no option {key!r}"
                raise ValueError(
                    f"bot {name!r} {what} in agent spec {spec!r}; its options are "
                    f"{', '.join(accepted) or 'none'}, written {name}:key=value,key=value"
                )
    params = inspect.signature(factory).parameters
    context = {"game": descriptor.name, "num_players": num_players}
    options.update({key: value for key, value in context.items() if key in params})
    try:
        return factory(seed=seed, **options)
    except TypeError as exc:
        raise ValueError(f"bad options for bot {name!r} in agent spec {spec!r}: {exc}") from None


def _options_of(factory: Any) -> list[str] | None:
    """The keyword options a bot factory accepts (None: any, it takes ``**kwargs``)."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params
            if p.name not in ("seed", *_CONTEXT) and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


__all__ = ["Bot", "RandomBot", "bot_names", "make_bot", "parse_spec"]
