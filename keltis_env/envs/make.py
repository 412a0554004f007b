"""The PettingZoo AEC environment of any registered game, made from its descriptor.

``make_env("keltis")`` (or ``make_env("keltis_v0")``, the environment's name) returns the
game's environment with PettingZoo's classic wrappers, ``make_raw_env(...)`` the same
without them; both take the arguments of the game's ``env()`` (``num_players``,
``render_mode``, ``reward``, ``illegal_action`` and the game's options). Nothing here is
written for one game: a game registered by another distribution
(:mod:`keltis_env.core.game`) has its environment without a module of its own.

The package's own games also keep their PettingZoo entry modules (``keltis_env.keltis_v0``,
``keltis_env.keltis_dice_v0``): the user documentation in PettingZoo's fixed shape, with
``raw_env``, ``env()`` and ``action_table()`` taken from here (:func:`env_module_parts`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keltis_env.core.game import GameDescriptor, game_for_env
from keltis_env.core.segments import action_ranges_table, segments_table
from keltis_env.envs.aec import TurnBasedAECEnv, raw_env_class, wrap


def make_raw_env(game: str | GameDescriptor, **kwargs: Any) -> TurnBasedAECEnv:
    """``game``'s environment without wrappers (``illegal_action="raise"`` by default)."""
    return raw_env_class(game)(**kwargs)


def make_env(
    game: str | GameDescriptor,
    num_players: int = 2,
    render_mode: str | None = None,
    illegal_action: str = "terminate",
    **options: Any,
) -> Any:
    """``game``'s environment with PettingZoo's classic wrappers (``illegal_action=
    "terminate"`` by default, PettingZoo's convention); ``options`` are ``reward`` and the
    game's own options."""
    raw = make_raw_env(game, num_players=num_players, render_mode=render_mode, illegal_action=illegal_action,
                       **options)
    return wrap(raw)


def observation_table(game: str | GameDescriptor, num_players: int = 2) -> str:
    """The observation layout of ``game`` as a Markdown table, from its encoder's segment
    list (``encoder.segments``); the documentation quotes this."""
    return segments_table(game_for_env(game).make_encoder(num_players).segments)


def action_table(game: str | GameDescriptor) -> str:
    """The action id ranges of ``game`` as a Markdown table (the documentation quotes this)."""
    descriptor = game_for_env(game)
    return action_ranges_table(descriptor.action_ranges, descriptor.action_to_string)


def env_module_parts(
    game: GameDescriptor, doc: str, module: str
) -> tuple[type[TurnBasedAECEnv], Callable[..., Any], Callable[[], str], str]:
    """What a game's PettingZoo entry module ``module`` exports: ``raw_env``, ``env``,
    ``action_table`` and its docstring ``doc`` with ``{observation_table}`` (2 players)
    and ``{action_table}`` filled in from the code. They are named as the module's own, so
    that pickle finds them there."""

    def env(num_players: int = 2, render_mode: str | None = None, illegal_action: str = "terminate",
            **options: Any) -> Any:
        return make_env(game, num_players=num_players, render_mode=render_mode, illegal_action=illegal_action,
                        **options)

    def table() -> str:
        return action_table(game)

    env.__doc__ = f"{game.long_name} with PettingZoo's classic wrappers. See the module documentation."
    table.__name__ = "action_table"
    table.__doc__ = action_table.__doc__
    raw = raw_env_class(game)
    raw.__doc__ = (f"{game.long_name} without wrappers (illegal actions raise ``ActionError`` by default). "
                   "See the module doc.")
    for part, name in ((raw, "raw_env"), (env, "env"), (table, "action_table")):
        part.__module__, part.__qualname__ = module, name
    filled = doc.replace("{observation_table}", observation_table(game, 2)).replace("{action_table}", table())
    return raw, env, table, filled


__all__ = ["action_table", "env_module_parts", "make_env", "make_raw_env", "observation_table", "raw_env_class"]
