"""The compiled core's one driver (numba, the ``fast`` extra).

A game declares its compiled core in one place, its descriptor's ``compiled`` field
(:class:`~keltis_env.core.game.CompiledCore`); this package finds the kernels there and
nowhere else, and steps batches of games on them (:mod:`keltis_env.compiled.batch`). The
vector environment, the SB3 VecEnv and the other compiled paths are thin adapters over it.

Importing this package imports neither numba nor any kernels: :func:`core_module` loads a
game's kernels when a compiled path is asked for, and without numba raises the kernels'
one-line ``ImportError`` naming the extra.
"""

from __future__ import annotations

from types import ModuleType

from keltis_env.core.game import GameDescriptor, get_game


def core_module(game: str | GameDescriptor, part: str = "batch") -> ModuleType | None:
    """The module of ``part`` (``"kernels"``, ``"batch"`` or ``"match"``) of ``game``'s
    compiled core, or ``None`` for a game that declares none (or not that part). Without
    numba the kernels' one-line ``ImportError`` is raised."""
    return get_game(game).compiled_module(part)


def has_core(game: str | GameDescriptor, part: str = "batch") -> bool:
    """Whether ``game`` declares a compiled core with ``part`` (nothing is imported)."""
    core = get_game(game).compiled
    return core is not None and core.module_name(part) is not None


def require_core(game: str | GameDescriptor, part: str = "batch") -> ModuleType:
    """:func:`core_module`, refusing a game without one in a ``ValueError`` naming it."""
    module = core_module(game, part)
    if module is None:
        name = get_game(game).name
        raise ValueError(f"the game {name!r} has no compiled core (its descriptor declares none); use its "
                         "Python engine (backend='python', the learner view keltis_env.envs.learner.KeltisLearnerEnv)")
    return module


__all__ = ["core_module", "has_core", "require_core"]
