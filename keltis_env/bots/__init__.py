"""Players acting on a player's view (never on the full state), for every game.

``make_bot("random")``, ``make_bot("heuristic", game="dice")``,
``make_bot("ismcts:iterations=400")``: an agent *spec* is a bot name, optionally
followed by ``:key=value,key=value`` options passed to the bot's constructor (integers
and floats are converted). ``ppo:PATH`` names a file as its first option.

The spec's own rules, the same for every bot (:func:`parse_spec`): every option is
``key=value`` with a non-empty key and value; a key may be given once
(``iterations=8,iterations=9`` is refused); a number must be finite: ``nan``, ``inf``,
``-inf``, ``infinity`` and numbers too large for a float (``1e999``) are refused for every
option, as no bot has a use for them (a bot that needs "no limit" takes a word for it). The
range of each option is the bot's to check when it is made (its constructor raises a
``ValueError`` naming the option and what is allowed, e.g. ``ismcts:margin=-5``), so a
spec is only known to be valid once :func:`make_bot` has made the bot.

The bots of a game are the bots every game has (:data:`COMMON_BOTS`: ``random``, ``ppo``
for a policy trained here, ``rllib`` for an RLlib checkpoint), listed once here, and the
game's own bots, listed in its descriptor (:class:`keltis_env.core.game.GameDescriptor`,
``bots``); a game's own bot may not take a common name. :func:`bot_names` and
:func:`bot_factory` look in both.

A factory that takes ``game`` or ``num_players`` keyword arguments receives the game's
name and, when the caller knows it, the number of players, so that a bot made for another
game or player count (a trained policy) is refused when it is made; these two are the
caller's to give, never options of a spec.

Agents written outside the package are named ``py:MODULE:NAME`` or ``py:PATH.py:NAME``,
optionally followed by ``,key=value`` options (:mod:`keltis_env.bots.external`): a class
or a callable acting on the AEC observation and action mask of its seat. They are not bots
of a game (:func:`bot_names` does not list them); :func:`make_bot` makes them wherever an
agent spec is taken.

The bots of a game are loaded only when asked for, so this package imports no game.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from keltis_env.core.game import GameDescriptor, get_game, load_object

from .base import Bot
from .random_bot import RandomBot

#: the bots every game has: name -> "module:attribute" of a factory(seed=..., **options) -> Bot
COMMON_BOTS: Mapping[str, str] = MappingProxyType({
    "random": "keltis_env.bots.random_bot:RandomBot",
    "ppo": "keltis_env.bots.ppo:PPOBot",
    "rllib": "keltis_env.integrations.rllib:RLlibBot",
})


def game_bots(game: str | GameDescriptor = "keltis") -> dict[str, str]:
    """Every bot of a game, the common ones first: name -> "module:attribute" of its factory.
    A game bot named like a common bot is refused (it would hide the common one)."""
    descriptor = get_game(game)
    shadowing = sorted(set(descriptor.bots) & set(COMMON_BOTS))
    if shadowing:
        raise ValueError(f"the game {descriptor.name!r} registers its own bot {shadowing[0]!r}, a name every game "
                         f"already has ({', '.join(COMMON_BOTS)}); give the game's bot another name")
    return {**COMMON_BOTS, **descriptor.bots}


def bot_names(game: str | GameDescriptor = "keltis") -> list[str]:
    """The bot names of a game (the common bots and its own), sorted."""
    return sorted(game_bots(game))


def bot_factory(name: str, game: str | GameDescriptor = "keltis") -> Callable[..., Any]:
    """The factory of the bot ``name`` of ``game`` (imports its module)."""
    bots = game_bots(game)
    if name not in bots:
        known = ", ".join(sorted(bots))
        raise ValueError(f"unknown bot {name!r} for game {get_game(game).name!r}; known bots: {known}")
    factory: Callable[..., Any] = load_object(bots[name])
    return factory


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"ismcts:iterations=400,c=1.4"`` -> ``("ismcts", {"iterations": 400, "c": 1.4})``;
    a ``ValueError`` for a malformed option, a repeated key or a non-finite number (see
    the module doc). An external agent's name keeps its target, which holds a ``:`` of its
    own: ``"py:agents.py:Greedy,depth=2"`` -> ``("py:agents.py:Greedy", {"depth": 2})``."""
    if not isinstance(spec, str):
        raise ValueError(f"an agent spec is a string such as 'heuristic' or 'ppo:policy.zip', got {spec!r}")
    name, _, rest = spec.partition(":")
    if name.strip() == "py":
        target, _, rest = rest.partition(",")
        return f"py:{target.strip()}", _parse_options(rest, spec, path=False)
    return name.strip(), _parse_options(rest, spec, path=True)


#: the options that name a file: a shipped file is found by its repository path from any
#: working folder (:func:`keltis_env.data.resolve`: ``ppo:policies/keltis_2p.zip``)
FILE_OPTIONS = ("path", "net")


def _parse_options(rest: str, spec: str, path: bool) -> dict[str, Any]:
    """The ``key=value,...`` options of ``spec`` (``rest``); with ``path`` (the package's
    own bots), a bare first item is the bot's file, and a file that does not exist where it
    is given, but that the package ships at that repository path, is the shipped one (a
    ``py:`` agent's options are passed on as written)."""
    from keltis_env.data import resolve

    options = _read_options(rest, spec, path)
    for key in FILE_OPTIONS if path else ():
        if isinstance(options.get(key), str):
            options[key] = str(resolve(options[key]))
    return options


def _read_options(rest: str, spec: str, path: bool) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if rest:
        for i, item in enumerate(rest.split(",")):
            key, eq, value = item.partition("=")
            if path and i == 0 and not eq and key.strip():  # a bare first item is a file: "ppo:policies/x.zip"
                options["path"] = key.strip()
                continue
            if not eq or not key.strip() or not value.strip():
                raise ValueError(f"bad option {item!r} in agent spec {spec!r}; expected key=value")
            key = key.strip()
            if key in options:
                what = "the file" if key == "path" else f"option {key!r}"
                raise ValueError(f"agent spec {spec!r} gives {what} twice; give each option once")
            options[key] = _convert(key, value.strip(), spec)
    return options


def _convert(key: str, value: str, spec: str) -> Any:
    """An option's text as an int, else a float, else the text itself; a number that is
    not finite is refused."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        return value
    if not math.isfinite(number):
        raise ValueError(f"option {key}={value} in agent spec {spec!r} is not a finite number; "
                         "nan and infinite values are not allowed")
    return number


_CONTEXT = ("game", "num_players")  # given by the caller, not by the spec


def make_bot(spec: str, seed: int | None = None, game: str = "keltis", num_players: int | None = None) -> Bot:
    """A bot from an agent spec (see the module doc) for ``game`` and, when given,
    ``num_players`` players."""
    descriptor = get_game(game)
    name, options = parse_spec(spec)
    if name.startswith("py:"):  # code outside the package (keltis_env.bots.external)
        from .external import make_external_agent

        return make_external_agent(name.removeprefix("py:"), options, seed=seed, game=descriptor.name,
                                   num_players=num_players, spec=spec)
    factory = bot_factory(name, descriptor)
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


def check_spec(spec: str, game: str = "keltis", num_players: int | None = None) -> None:
    """Raise ``ValueError`` naming what is wrong with the agent spec ``spec`` for ``game``
    (``num_players`` players), before any game is played: an unknown bot, a bad option (the
    bot is made once, with its own checks), a ``ppo:PATH`` that is missing or made for
    another game or player count (read from the file's metadata; the network is not
    loaded). An ``rllib`` checkpoint is only parsed: its library may not be installed here.
    The one check of agent specs that configs, the benchmark and the CLI share."""
    name, options = parse_spec(spec)
    known = bot_names(game)
    if name not in known and not name.startswith("py:"):
        raise ValueError(f"unknown agent {spec!r}; known bots: {', '.join(known)} (the bots of {game}; your own "
                         "agent as py:MODULE:NAME or py:path/file.py:NAME)")
    if name == "ppo":
        from keltis_env.policy import PolicyLoadError, load_policy

        path = str(options.get("path", ""))
        if not Path(path).is_file():
            raise ValueError(f"{spec!r}: no policy file at {options.get('path')!r}")
        try:  # the loaders' one check: weights (NaN/inf, shapes) as well as the metadata
            load_policy(path).info.check(game, num_players)
        except PolicyLoadError as exc:
            raise ValueError(f"{spec!r}: {exc}") from None
    elif name != "rllib":
        try:
            make_bot(spec, seed=0, game=game, num_players=num_players)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"agent spec {spec!r}: {exc}") from None


def _options_of(factory: Any) -> list[str] | None:
    """The keyword options a bot factory accepts (None: any, it takes ``**kwargs``)."""
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params
            if p.name not in ("seed", *_CONTEXT) and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def agent_file(spec: str) -> Path | None:
    """The file an agent spec names (``ppo:PATH``, ``rllib:PATH``, the code of a ``py:``
    agent: its file, or its module's file), if any: its SHA-256 goes into the scorecard."""
    from .external import PREFIX, source_path

    try:
        name, options = parse_spec(spec)
        if name.startswith(PREFIX):
            return source_path(spec)
    except ValueError:
        return None
    path = options.get("path")
    if isinstance(path, str) and Path(path).is_file():
        return Path(path)
    return None


__all__ = [
    "COMMON_BOTS", "Bot", "RandomBot", "agent_file", "bot_factory", "bot_names", "check_spec", "game_bots", "make_bot",
    "parse_spec",
]
