"""Symmetries of a game: relabellings that map every game to another game with the same rules
(numpy, imported by the games' symmetry modules only).

A :class:`Symmetry` holds a finite group of relabellings as index maps of the observation
vector and of the action ids. Relabelling ``g`` turns the observation ``obs`` of a position
into ``obs[obs_source[g]]``, the observation of the relabelled position, and its action ``a``
into ``action_target[g, a]``. A learner fitted to decisions shown under random relabellings
(data augmentation, as AlphaGo Zero did with the board's rotations) sees every position in
each of its equivalent forms, and a policy can average its output over the group
(:meth:`Symmetry.symmetrize`), which makes it exactly equivariant.

A game offers its symmetries through :attr:`keltis_env.core.game.GameDescriptor.symmetries`;
its tests check the maps against the engine: relabelling a state and then encoding it gives
the relabelled observation, and the legal actions and the steps commute with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Symmetry:
    """A group of ``size`` relabellings (relabelling 0 is the identity).

    ``obs_source[g]`` (``(size, observation size)``): the relabelled observation is
    ``obs[obs_source[g]]``. ``action_target[g, a]``: the id action ``a`` takes after the
    relabelling; ``action_source`` is its inverse (a mask or per-action vector ``m`` becomes
    ``m[action_source[g]]``)."""

    name: str
    obs_source: np.ndarray
    action_target: np.ndarray
    action_source: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        size, num_actions = self.action_target.shape
        if self.obs_source.shape[0] != size:
            raise ValueError(f"{self.obs_source.shape[0]} observation maps for {size} action maps")
        if not (np.sort(self.action_target, axis=1) == np.arange(num_actions)).all():
            raise ValueError("every action map must be a permutation of the action ids")
        if not (np.sort(self.obs_source, axis=1) == np.arange(self.obs_source.shape[1])).all():
            raise ValueError("every observation map must be a permutation of the observation's positions")
        if not ((self.obs_source[0] == np.arange(self.obs_source.shape[1])).all()
                and (self.action_target[0] == np.arange(num_actions)).all()):
            raise ValueError("relabelling 0 must be the identity")
        source = np.empty_like(self.action_target)
        np.put_along_axis(source, self.action_target, np.arange(num_actions)[None, :].repeat(size, 0), axis=1)
        object.__setattr__(self, "action_source", source)

    @property
    def size(self) -> int:
        return int(self.action_target.shape[0])

    def relabel(self, which: Any, obs: Any, masks: Any = None, actions: Any = None,
                per_action: Any = None) -> tuple[Any, ...]:
        """A batch relabelled row by row: ``which[i]`` is row ``i``'s relabelling. Returns
        ``(obs, masks, actions, per_action)`` (None where not given); ``per_action`` is any
        array over the action ids (soft targets)."""
        which = np.asarray(which, dtype=np.int64)
        out_obs = np.take_along_axis(np.asarray(obs), self.obs_source[which], axis=1)
        source = self.action_source[which]
        out_masks = None if masks is None else np.take_along_axis(np.asarray(masks), source, axis=1)
        out_actions = None if actions is None else self.action_target[which, np.asarray(actions, dtype=np.int64)]
        out_per = None if per_action is None else np.take_along_axis(np.asarray(per_action), source, axis=1)
        return out_obs, out_masks, out_actions, out_per

    def symmetrize(self, logits_of: Any, obs: Any, which: Any = None) -> Any:
        """The mean over relabellings ``which`` (default all) of ``logits_of`` seen through
        each: for each row of ``obs`` (``(n, observation size)``), ``logits_of`` is called
        once on the ``n * len(which)`` relabelled rows and must return an ``(n * len(which),
        actions)`` array; the result, ``(n, actions)``, is indexed by the original ids. One
        observation (a vector) gives one vector of logits."""
        which = np.arange(self.size) if which is None else np.asarray(which, dtype=np.int64)
        obs = np.asarray(obs)
        if obs.ndim == 1:
            return self.symmetrize(logits_of, obs[None], which)[0]
        n, k = obs.shape[0], len(which)
        views = obs[:, self.obs_source[which]].reshape(n * k, obs.shape[1])
        return self.average(np.asarray(logits_of(views)).reshape(n, k, -1), which)

    def average(self, logits: Any, which: Any = None) -> Any:
        """The mean over relabellings of ``logits`` (``(n, len(which), actions)``: row ``i``'s
        logits seen through each relabelling of ``which``, default all), indexed by the
        original ids: the last step of :meth:`symmetrize`, for a caller that computes the
        relabelled rows' logits its own way."""
        which = np.arange(self.size) if which is None else np.asarray(which, dtype=np.int64)
        # relabelled action id action_target[g, a] is original action a
        back = np.take_along_axis(logits, np.broadcast_to(self.action_target[which], logits.shape), axis=2)
        return back.mean(axis=1)


__all__ = ["Symmetry"]
