"""Keltis for reinforcement learning: rules engines, PettingZoo environments, bots.

``from keltis_env import keltis_v0`` gives the card game's AEC environment
(``keltis_v0.env()``), ``keltis_dice_v0`` the dice game's (docs/rules.md R11). The rules
engines are plain Python: ``keltis_env.games.keltis`` and ``keltis_env.games.dice``, found
by name through ``keltis_env.core.get_game``. Importing this package registers both games
and, where Gymnasium is installed, the learner view's id ``keltis_env/KeltisLearner-v0``.

``keltis_env.make_env(name, **kwargs)`` gives the wrapped AEC environment of any
registered game, by its name or its environment's name (``"dice"``, ``"keltis_dice_v0"``),
games of other installed distributions included (:mod:`keltis_env.core.game`);
``keltis_env.make_raw_env`` the same without wrappers (:mod:`keltis_env.envs`).
"""

from importlib import metadata
from typing import Any

from keltis_env import games  # noqa: F401  (registers every game with keltis_env.core)

#: The release in pyproject.toml, used where the package runs from a source tree that was never installed.
_SOURCE_VERSION = "0.2.0"


def _installed_version() -> str:
    """The installed distribution's version (``keltis-rl``), else :data:`_SOURCE_VERSION`."""
    try:
        return metadata.version("keltis-rl")
    except metadata.PackageNotFoundError:
        return _SOURCE_VERSION


__version__ = _installed_version()

LEARNER_ENV_ID = "keltis_env/KeltisLearner-v0"


def _register_gymnasium_id() -> None:
    """Gymnasium's convention: the id exists once the package is imported (the entry
    point is a string, so nothing heavy is imported until ``gymnasium.make``)."""
    try:
        import gymnasium
    except ImportError:  # the engine alone needs no gymnasium
        return
    if LEARNER_ENV_ID not in gymnasium.registry:
        gymnasium.register(id=LEARNER_ENV_ID, entry_point="keltis_env.envs.learner:KeltisLearnerEnv")


_register_gymnasium_id()


def __getattr__(name: str) -> Any:
    """``make_env`` and ``make_raw_env`` are loaded on first use: they import PettingZoo
    and numpy, which the engines alone do not need."""
    if name in ("make_env", "make_raw_env"):
        from keltis_env import envs

        return getattr(envs, name)
    raise AttributeError(f"module 'keltis_env' has no attribute {name!r}")
