"""The card game's worlds for the network-guided search (:mod:`keltis_env.search.gumbel`),
compiled (numba, the ``fast`` extra): many simulations at once, each one world of one
root.

A simulation of root ``r`` (a state row, read only through what its seat ``me`` may know)
and action ``a`` is: a world dealt from ``me``'s view of the root (:func:`sample_worlds`:
the root's hidden parts cleared, the unseen cards dealt at random into the other hands,
the removed cards and the draw pile, as :func:`~.kernels_ismcts.determinise` deals them),
``a`` played in it, then the other seats' moves, chosen outside by the network, until
``me`` is to move again or the game is over (:func:`classify` says which each world
waits for). Nothing here chooses a move: the search has no plan model, no heuristic and
no rollout policy but the network.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.kernels import kernel, potential

from .constants import MAX_PLAYERS, NUM_CARDS, Phase
from .kernels import CURRENT, NUM_PLAYERS, PHASE, apply, scores
from .kernels_ismcts import clear_hidden, determinise

_OVER = int(Phase.OVER)
#: what :func:`classify` says a world waits for
OPPONENT, LEAF, OVER = 0, 1, 2


@kernel
def sample_worlds(roots: Any, mes: Any, of_root: Any, actions: Any, seeds: Any, worlds: Any) -> None:
    """World ``i``: a deal of what ``mes[of_root[i]]`` has not seen in ``roots[of_root[i]]``
    (the other hands, the removed cards, the draw pile) drawn by a SplitMix64 generator
    seeded with ``seeds[i]``, then ``actions[i]`` (legal in the root) played in it.
    Simulations of one root with the same seed are dealt the same world, whatever their
    action (common random numbers: their values differ by the actions, not the deals)."""
    clean = np.empty(roots.shape[1], dtype=roots.dtype)
    cards = np.empty(NUM_CARDS, dtype=np.int64)
    rng = np.empty(1, dtype=np.uint64)
    last = -1
    for i in range(worlds.shape[0]):
        r = of_root[i]
        me = mes[r]
        if r != last:
            clean[:] = roots[r]
            clear_hidden(clean, me)
            last = r
        rng[0] = seeds[i]
        determinise(clean, me, worlds[i], cards, rng)
        apply(worlds[i], actions[i])


@kernel
def play(worlds: Any, which: Any, actions: Any) -> None:
    """``actions[j]`` (legal) played in world ``which[j]``."""
    for j in range(which.shape[0]):
        apply(worlds[which[j]], actions[j])


@kernel
def classify(worlds: Any, which: Any, mes: Any, of_root: Any, kinds: Any, seats: Any, values: Any) -> None:
    """What world ``i = which[j]`` waits for, into entry ``j`` of ``kinds``, ``seats`` and
    ``values``: :data:`OVER` (its value for ``me`` into ``values[j]``: the ``score`` reward,
    ``me``'s score less the others' mean over 50), :data:`LEAF` (``me`` to move: the
    network's value of ``me``'s view) or :data:`OPPONENT` (``seats[j]`` to move);
    ``seats[j]`` is the seat whose view the network reads next (``me`` but for an opponent)."""
    final = np.zeros(MAX_PLAYERS, dtype=np.int64)
    for j in range(which.shape[0]):
        i = which[j]
        s = worlds[i]
        me = mes[of_root[i]]
        seats[j] = me
        if s[PHASE] == _OVER:
            kinds[j] = OVER
            scores(s, final)
            values[j] = potential(final, s[NUM_PLAYERS], me)
        elif s[CURRENT] == me:
            kinds[j] = LEAF
        else:
            kinds[j] = OPPONENT
            seats[j] = s[CURRENT]


__all__ = ["LEAF", "OPPONENT", "OVER", "classify", "play", "sample_worlds"]
