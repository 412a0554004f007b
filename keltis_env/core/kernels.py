"""What the games' compiled kernels share (numba, the optional ``fast`` extra).

A game's ``kernels`` module is the compiled core beside its Python engine: a game state is
one row of a flat integer array, and the kernels work on whole batches of rows. The
Python engine stays the reference and the API for records, views and bots; a differential
test holds the two equal on every action. Nothing on the Python path imports this module
or numba: without the extra, :func:`require_numba` refuses with one line naming it.

Shared here:

* :func:`kernel`: ``numba.njit`` with ``cache=True`` (the compiled code is kept on disk
  next to the module, or in numba's cache folder where that is not writable);
* a per-game random generator (SplitMix64, one ``uint64`` of state per game): explicit
  seeds, no global generator, the same numbers on every machine (:func:`next_u64`,
  :func:`below`, :func:`seed_generators`);
* the rewards of :mod:`keltis_env.core.rewards` on a score array
  (:func:`final_reward`, :func:`potential`), with the modes numbered as
  :data:`~keltis_env.core.rewards.REWARD_MODES` lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .rewards import REWARD_MODES, SCORE_SCALE

#: how a missing numba is reported (one line, naming the extra)
MISSING = "the compiled kernels need numba (the 'fast' extra): pip install 'keltis-rl[fast]'"


def require_numba() -> Any:
    """The ``numba`` module, or an ``ImportError`` with one line naming the extra."""
    try:
        import numba
    except ImportError as exc:
        raise ImportError(MISSING) from exc
    return numba


_numba = require_numba()


def kernel(fn: Callable[..., Any]) -> Any:
    """``fn`` compiled in nopython mode, cached on disk."""
    return _numba.njit(cache=True)(fn)


#: reward modes by number, in the order of ``REWARD_MODES``
WIN, SCORE, SHAPED = (REWARD_MODES.index(m) for m in ("win", "score", "shaped"))

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@kernel
def next_u64(rng: Any, i: int) -> Any:
    """The next number of game ``i``'s generator (SplitMix64 on ``rng[i]``)."""
    x = rng[i] + _GOLDEN
    rng[i] = x
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@kernel
def below(rng: Any, i: int, n: int) -> int:
    """A number in ``0..n-1`` from game ``i``'s generator (``n`` >= 1)."""
    return int(next_u64(rng, i) % np.uint64(n))


@kernel
def shuffle(values: Any, length: int, rng: Any, i: int) -> None:
    """Fisher-Yates on the first ``length`` entries of ``values``."""
    for j in range(length - 1, 0, -1):
        k = below(rng, i, j + 1)
        values[j], values[k] = values[k], values[j]


def seed_generators(seed: int, count: int) -> np.ndarray:
    """``count`` generator states drawn from ``seed`` (an int): one per game of a batch."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    states: np.ndarray = np.random.SeedSequence(seed).generate_state(count, dtype=np.uint64)
    return states


@kernel
def potential(scores: Any, n: int, seat: int) -> float:
    """``seat``'s potential: its score minus the mean of the others', over the scale."""
    total = 0
    for p in range(n):
        total += scores[p]
    return float((scores[seat] - (total - scores[seat]) / (n - 1)) / SCORE_SCALE)


@kernel
def final_reward(scores: Any, n: int, seat: int, mode: int) -> float:
    """``seat``'s reward for a game that ended with ``scores`` under ``mode`` (:data:`WIN`:
    +1 sole winner, 0 shared victory, -1 otherwise; else its final potential)."""
    if mode != WIN:
        return float(potential(scores, n, seat))
    best = scores[0]
    for p in range(1, n):
        best = max(best, scores[p])
    if scores[seat] != best:
        return -1.0
    winners = 0
    for p in range(n):
        if scores[p] == best:
            winners += 1
    return 1.0 if winners == 1 else 0.0


__all__ = [
    "MISSING",
    "SCORE",
    "SHAPED",
    "WIN",
    "below",
    "final_reward",
    "kernel",
    "next_u64",
    "potential",
    "require_numba",
    "seed_generators",
    "shuffle",
]
