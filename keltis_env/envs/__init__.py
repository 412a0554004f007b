"""The environment front-ends, together: every way a learner or a framework steps a game.

==========================  ==============================================================
``keltis_env.envs.make``    ``make_env(name)`` / ``make_raw_env(name)``: any registered
                            game's PettingZoo AEC environment (also importable from here)
``keltis_env.envs.aec``     the AEC machinery: the turn-based environment class, its
                            wrappers, the Python and compiled backends
``keltis_env.envs.learner`` the single-agent Gymnasium view (``KeltisLearnerEnv``) and
``keltis_env.envs.episode`` its learner episode and opponent pool
``keltis_env.envs.vector``  ``KeltisVectorEnv``: batched learner games on the compiled core
``keltis_env.envs.vector_sb3``  the same under Stable-Baselines3's ``VecEnv`` API
``keltis_env.envs.pufferlib``   the same as a native PufferLib ``PufferEnv``
==========================  ==============================================================

The batched front-ends are thin adapters over the one batch driver
(:mod:`keltis_env.compiled`). The PettingZoo entry modules users import stay where they
were: ``keltis_env.keltis_v0`` and ``keltis_env.keltis_dice_v0``.

Importing this package loads nothing heavy: ``make_env`` and the other names of
:mod:`keltis_env.envs.make` are loaded on first use (they import PettingZoo and numpy).
"""

from __future__ import annotations

from typing import Any

#: the names of :mod:`keltis_env.envs.make` available from this package
MAKE_NAMES = ("action_table", "env_module_parts", "make_env", "make_raw_env", "observation_table", "raw_env_class")


def __getattr__(name: str) -> Any:
    if name in MAKE_NAMES:
        from . import make

        return getattr(make, name)
    raise AttributeError(f"module 'keltis_env.envs' has no attribute {name!r}")


__all__ = list(MAKE_NAMES)
