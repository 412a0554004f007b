"""What the games' compiled kernels share (numba, the optional ``fast`` extra).

A game's ``kernels`` module is the compiled core beside its Python engine: a game state is
one row of a flat integer array, and the kernels work on whole batches of rows. The
Python engine stays the reference and the API for records, views and bots; a differential
test holds the two equal on every action. Nothing on the Python path imports this module
or numba: without the extra, :func:`require_numba` refuses with one line naming it.

Shared here:

* :func:`kernel`: ``numba.njit`` with ``cache=True`` (the compiled code is kept on disk
  next to the module, or in numba's cache folder where that is not writable), fresh only
  while every file the compiled code depends on is unchanged (:func:`sources_stamp`);
* a per-game random generator (SplitMix64, one ``uint64`` of state per game): explicit
  seeds, no global generator, the same numbers on every machine (:func:`next_u64`,
  :func:`below`, :func:`seed_generators`; :func:`mix64` is its finaliser, which the dice
  game's rolls use as its Python engine does);
* the rewards of :mod:`keltis_env.core.rewards` on a score array
  (:func:`final_reward`, :func:`potential`), with the modes numbered as
  :data:`~keltis_env.core.rewards.REWARD_MODES` lists them;
* :func:`sparse_rows`: a network layer's products summed over each row's non-zero inputs,
  row by row, and :func:`sparse_rows_gathered` over each row's relabellings (the first
  layer of the ``ppo`` bot's sparse forward pass,
  :meth:`keltis_env.policy.NumpyPolicy.sparse_logits`; training's sparse first layer has
  parallel kernels of its own, :mod:`keltis_env.core.sparse_kernels`);
* :class:`BatchKernels`: what a game's batch module gives the one batch driver
  (:class:`keltis_env.compiled.batch.LearnerBatch`);
* the Mersenne Twister of Python's ``random`` (:func:`mt_seed`, :func:`mt_below`,
  :func:`mt_shuffle`, :func:`mt_sample`), so that a compiled deal from a seed is the Python
  engine's deal from that seed.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

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


#: the files a compiled kernel depends on, under the package: a kernel's code holds every
#: kernel it calls and the constants it reads, frozen when it compiled, while numba's cache
#: checks only the file that defines the kernel
STAMPED = ("core/kernels.py", "core/batch_kernels.py", "core/rewards.py", "games/**/*.py")
_PACKAGE = Path(__file__).resolve().parents[1]


@functools.cache
def sources_stamp() -> str:
    """A digest of the files of :data:`STAMPED` (their paths and contents), part of every
    cached kernel's stamp: a change to any of them compiles the kernels again instead of
    loading code that calls the old versions of the kernels it uses."""
    digest = hashlib.sha256()
    for pattern in STAMPED:
        for path in sorted(_PACKAGE.glob(pattern)):
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _stamped_cache() -> Any:
    """numba's cache of compiled functions, with :func:`sources_stamp` added to the stamp of
    the defining file that it checks before loading (with each of numba's ways of finding
    the cache folder)."""
    from numba.core import caching

    def stamped(locator: Any) -> Any:
        def get_source_stamp(self: Any) -> Any:
            return (locator.get_source_stamp(self), sources_stamp())

        return type(f"Stamped{locator.__name__}", (locator,), {"get_source_stamp": get_source_stamp})

    impl = type("StampedCacheImpl", (caching.CompileResultCacheImpl,),
                {"_locator_classes": [stamped(c) for c in caching.CompileResultCacheImpl._locator_classes]})
    return type("StampedFunctionCache", (caching.FunctionCache,), {"_impl_class": impl})


_CACHE = _stamped_cache()


def _cached(dispatcher: Any) -> Any:
    """``dispatcher`` cached on disk under the stamp of :func:`sources_stamp`."""
    dispatcher._cache = _CACHE(dispatcher.py_func)
    return dispatcher


def kernel(fn: Callable[..., Any]) -> Any:
    """``fn`` compiled in nopython mode, cached on disk (:func:`sources_stamp`)."""
    return _cached(_numba.njit(fn))


def _borrow_typer() -> Any:
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def borrow(typingctx: Any, array: Any) -> Any:
        """``array`` itself (the same memory, shape and strides) with no owner attached: copies
        and views of it cost no atomic reference counting. Only for arrays that outlive the
        kernel holding them: a kernel's own arguments."""
        if not isinstance(array, types.Array):
            return None

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            given = context.make_array(array)(context, builder, value=args[0])
            out = context.make_array(array)(context, builder)
            for field in ("nitems", "itemsize", "data", "shape", "strides"):
                setattr(out, field, getattr(given, field))
            null = cgutils.get_null_value
            out.meminfo = null(out.meminfo.type)  # type: ignore[no-untyped-call]
            out.parent = null(out.parent.type)  # type: ignore[no-untyped-call]
            return out._getvalue()

        return array(array), codegen

    return borrow


#: :func:`_borrow_typer`'s intrinsic: ``borrow(a)`` inside a kernel
borrow = _borrow_typer()


def inlined(fn: Callable[..., Any]) -> Any:
    """A :func:`kernel` that numba writes into each kernel calling it: a small function on a
    hot path, whose array arguments then cost no reference counting at the call."""
    return _cached(_numba.njit(inline="always")(fn))


#: reward modes by number, in the order of ``REWARD_MODES``
WIN, SCORE, SHAPED = (REWARD_MODES.index(m) for m in ("win", "score", "shaped"))

#: SplitMix64's increment (the golden ratio), as a uint64
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@inlined
def mix64(x: Any) -> Any:
    """SplitMix64's finaliser on a ``uint64`` (a bijective scramble)."""
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@inlined
def next_u64(rng: Any, i: int) -> Any:
    """The next number of game ``i``'s generator (SplitMix64 on ``rng[i]``)."""
    x = rng[i] + GOLDEN
    rng[i] = x
    return mix64(x)


@inlined
def below(rng: Any, i: int, n: int) -> int:
    """A number in ``0..n-1`` from game ``i``'s generator (``n`` >= 1)."""
    return int(next_u64(rng, i) % np.uint64(n))


@kernel
def random_legal(masks: Any, rng: Any, out: Any) -> None:
    """A legal action drawn uniformly for each row of ``masks`` (bool or int8, 1 = legal) into
    ``out[g]``, from game ``g``'s generator (``rng``, one ``uint64`` per row); -1 for a row
    without one. The random learner of ``keltis bench --learner --sampler compiled``."""
    for g in range(masks.shape[0]):
        count = 0
        for a in range(masks.shape[1]):
            if masks[g, a]:
                count += 1
        out[g] = -1
        if count == 0:
            continue
        pick = below(rng, g, count)
        for a in range(masks.shape[1]):
            if masks[g, a]:
                if pick == 0:
                    out[g] = a
                    break
                pick -= 1


@kernel
def sparse_rows(x: Any, w: Any, out: Any) -> None:
    """``out[r] = sum over k of x[r, k] * w[k]`` for each row ``r`` of ``x`` (float32), the
    terms of the non-zero ``x[r, k]`` added in the order of ``k``, each product rounded, then
    each sum (no fused multiply-add): a row's result never depends on the other rows, and
    :func:`keltis_env.policy.network.sparse_rows_numpy` gives the same bits."""
    rows, size = x.shape
    width = w.shape[1]
    for r in range(rows):
        for h in range(width):
            out[r, h] = np.float32(0.0)
        for k in range(size):
            v = x[r, k]
            if v != 0.0:
                for h in range(width):
                    out[r, h] += v * w[k, h]


@kernel
def sparse_rows_gathered(x: Any, gather: Any, w: Any, out: Any) -> None:
    """:func:`sparse_rows` of the rows ``x[r, gather[g]]`` (row ``r * k + g`` of ``out`` for
    the ``k`` index maps of ``gather``: a row's relabellings), without making them: the same
    terms in the same order, so the same bits."""
    rows, size = x.shape
    k = gather.shape[0]
    width = w.shape[1]
    for r in range(rows):
        for g in range(k):
            row = r * k + g
            for h in range(width):
                out[row, h] = np.float32(0.0)
            for j in range(size):
                v = x[r, gather[g, j]]
                if v != 0.0:
                    for h in range(width):
                        out[row, h] += v * w[j, h]


@kernel
def shuffle(values: Any, length: int, rng: Any, i: int) -> None:
    """Fisher-Yates on the first ``length`` entries of ``values``."""
    for j in range(length - 1, 0, -1):
        k = below(rng, i, j + 1)
        values[j], values[k] = values[k], values[j]


# ---------------------------------------------------------------------- Python's deals
# The Python engines deal from ``random.Random(seed)`` (CPython's Mersenne Twister, MT19937,
# seeded from an integer through ``init_by_array``) with ``shuffle``, ``randrange`` and
# ``sample``. These kernels draw the same numbers, so a compiled deal from a seed is the
# Python engine's deal from that seed (a test holds them equal over many seeds). Words are
# kept in ``uint64`` and masked to 32 bits; ``mt[624]`` is the position in the state.
MT_WORDS = 624
#: the largest deal seed the kernels take (the Python engines take any integer)
MAX_DEAL_SEED = 2**63 - 1
_M32 = np.uint64(0xFFFFFFFF)
_MT_M = 397
_MT_MATRIX = np.uint64(0x9908B0DF)
_MT_UPPER = np.uint64(0x80000000)
_MT_LOWER = np.uint64(0x7FFFFFFF)


def mt_scratch() -> np.ndarray:
    """The state of one Mersenne Twister (:func:`mt_seed`)."""
    return np.zeros(MT_WORDS + 1, dtype=np.uint64)


def _mt_initial() -> np.ndarray:
    """CPython's ``init_genrand(19650218)``, the state every integer seed starts from."""
    mt = [19650218]
    for i in range(1, MT_WORDS):
        prev = mt[-1]
        mt.append((1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF)
    return np.array(mt, dtype=np.uint64)


_MT_INITIAL = _mt_initial()


@kernel
def mt_seed(mt: Any, seed: int) -> None:
    """``mt`` as ``random.Random(seed)`` leaves it, for ``0 <= seed <= MAX_DEAL_SEED``."""
    for i in range(MT_WORDS):
        mt[i] = _MT_INITIAL[i]
    key0 = np.uint64(seed) & _M32
    key1 = np.uint64(seed) >> np.uint64(32)
    length = 2 if key1 else 1
    i, j = 1, 0
    for _ in range(MT_WORDS):  # max(624, key length)
        prev = mt[i - 1]
        key = key0 if j == 0 else key1
        mt[i] = ((mt[i] ^ ((prev ^ (prev >> np.uint64(30))) * np.uint64(1664525))) + key + np.uint64(j)) & _M32
        i += 1
        j += 1
        if i >= MT_WORDS:
            mt[0] = mt[MT_WORDS - 1]
            i = 1
        if j >= length:
            j = 0
    for _ in range(MT_WORDS - 1):
        prev = mt[i - 1]
        mt[i] = ((mt[i] ^ ((prev ^ (prev >> np.uint64(30))) * np.uint64(1566083941))) - np.uint64(i)) & _M32
        i += 1
        if i >= MT_WORDS:
            mt[0] = mt[MT_WORDS - 1]
            i = 1
    mt[0] = _MT_UPPER
    mt[MT_WORDS] = np.uint64(MT_WORDS)


@kernel
def _mt_word(mt: Any, k: int, following: int, far: int) -> None:
    """One word of the twist: ``mt[k]`` from itself, ``mt[following]`` and ``mt[far]``."""
    y = (mt[k] & _MT_UPPER) | (mt[following] & _MT_LOWER)
    x = mt[far] ^ (y >> np.uint64(1))
    if y & np.uint64(1):
        x ^= _MT_MATRIX
    mt[k] = x


@kernel
def _mt_twist(mt: Any) -> None:
    """CPython's twist of the whole state, in its order (in place: the words after ``k``
    are the old ones, those before it the new ones)."""
    for k in range(MT_WORDS - _MT_M):
        _mt_word(mt, k, k + 1, k + _MT_M)
    for k in range(MT_WORDS - _MT_M, MT_WORDS - 1):
        _mt_word(mt, k, k + 1, k + _MT_M - MT_WORDS)
    _mt_word(mt, MT_WORDS - 1, 0, _MT_M - 1)
    mt[MT_WORDS] = np.uint64(0)


@kernel
def mt_next(mt: Any) -> Any:
    """The next 32-bit word (CPython's ``genrand_uint32``), as a ``uint64``."""
    if mt[MT_WORDS] >= np.uint64(MT_WORDS):
        _mt_twist(mt)
    at = mt[MT_WORDS]
    y = mt[at]
    mt[MT_WORDS] = at + np.uint64(1)
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    y ^= y >> np.uint64(18)
    return y & _M32


@kernel
def mt_below(mt: Any, n: int) -> int:
    """``random.Random._randbelow(n)`` for ``1 <= n < 2**32``: ``randrange(n)``."""
    k = 0
    while (n >> k) > 0:
        k += 1
    shift = np.uint64(32 - k)
    r = int(mt_next(mt) >> shift)
    while r >= n:
        r = int(mt_next(mt) >> shift)
    return r


@kernel
def mt_shuffle(values: Any, length: int, mt: Any) -> None:
    """``random.Random.shuffle`` of the first ``length`` entries of ``values``."""
    for j in range(length - 1, 0, -1):
        k = mt_below(mt, j + 1)
        values[j], values[k] = values[k], values[j]


@kernel
def mt_sample(pool: Any, count: int, mt: Any, out: Any) -> None:
    """``random.Random.sample(pool, count)`` into ``out[:count]`` for a small pool (CPython's
    pool method, which it takes for up to 21 entries; ``pool`` is changed)."""
    n = len(pool)
    for i in range(count):
        j = mt_below(mt, n - i)
        out[i] = pool[j]
        pool[j] = pool[n - i - 1]


@kernel
def next_deal_seed(rng: Any, i: int) -> int:
    """A deal seed (63 bits, as the Python engines draw one) from game ``i``'s generator."""
    return int(next_u64(rng, i) >> np.uint64(1))


@kernel
def take_deal_seed(rng: Any, g: int, seeds: Any) -> int:
    """Slot ``g``'s next deal seed ``seeds[g, 1]``, which becomes its current one ``seeds[g,
    0]``; the seed after is drawn from generator ``g`` (:func:`next_deal_seed`). A game's
    ``deal`` deals the Python engine's game of the seed returned."""
    seed = seeds[g, 1]
    seeds[g, 0] = seed
    seeds[g, 1] = next_deal_seed(rng, g)
    return int(seed)


def seed_generators(seed: int, count: int) -> np.ndarray:
    """``count`` generator states drawn from ``seed`` (an int): one per game of a batch."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    states: np.ndarray = np.random.SeedSequence(seed).generate_state(count, dtype=np.uint64)
    return states


@inlined
def potential(scores: Any, n: int, seat: int) -> float:
    """``seat``'s potential: its score minus the mean of the others', over the scale."""
    total = 0
    for p in range(n):
        total += scores[p]
    return float((scores[seat] - (total - scores[seat]) / (n - 1)) / SCORE_SCALE)


@inlined
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


# ---------------------------------------------------------------------- batches of learner games
#: how a game cut at its turn cap ends a learner's episode (as the learner view's ``turn_cap``)
TURN_CAPS = ("truncate", "end")
#: when a batch deals a new game where one ended (see :class:`keltis_env.compiled.batch.LearnerBatch`)
AUTORESET_MODES = ("same-step", "next-step")
#: the most players of any game (the width of a batch's final scores)
MAX_SEATS = 4


class BatchKernels(NamedTuple):
    """What a game's batch module gives the batch driver
    (:class:`keltis_env.compiled.batch.LearnerBatch`): ``new_games(config, count, rng, seeds)``,
    the compiled ``learner_step`` (one learner step in each game against the opponents of
    ``opponent_args``, auto-reset), ``encoding_args(num_players, features)`` (the observation
    size with those features and the encoder's arguments of ``learner_step``), the number of
    action ids, ``unpack(row, config)`` (a row's Python state), ``opponent_args(spec)``
    (``learner_step``'s arguments for the opponents an agent spec names; a ``ValueError``
    naming the ones the game compiles for any other) and the observation features its step
    computes (the learner view's ``features``). numba caches only module-level kernels that
    call module-level kernels, so each game compiles its own ``learner_step``; this class is
    what they share."""

    new_games: Callable[..., np.ndarray]
    learner_step: Callable[..., None]
    encoding_args: Callable[[int, tuple[str, ...]], tuple[int, tuple[Any, ...]]]
    num_actions: int
    unpack: Callable[[np.ndarray, Any], Any]
    opponent_args: Callable[[str], tuple[Any, ...]]
    features: tuple[str, ...] = ()


def compiled_features(features: Any, supported: tuple[str, ...]) -> tuple[str, ...]:
    """``features`` (a list of observation feature names, or ``None``) as a tuple of distinct
    names of ``supported``; anything else raises a one-line ``ValueError`` naming the ones
    the compiled core computes."""
    offered = ", ".join(map(repr, supported)) if supported else "none"
    if features is None:
        return ()
    if isinstance(features, (str, bytes)) or not isinstance(features, Iterable):
        raise ValueError(f"features must be a list of observation feature names (the compiled core computes: "
                         f"{offered}), got {features!r}")
    names = tuple(features)
    for name in names:
        if not isinstance(name, str) or name not in supported:
            raise ValueError(f"the compiled core does not compute the observation feature {name!r}; it computes: "
                             f"{offered}")
    if len(set(names)) != len(names):
        raise ValueError(f"observation features must be distinct, got {list(names)}")
    return names


@kernel
def first_illegal(actions: Any, masks: Any, pending: Any) -> int:
    """The first game whose action is not one of its legal ones (``masks``; an id out of
    range included), skipping the games whose action is ignored (``pending``); -1 if none."""
    for g in range(actions.shape[0]):
        if pending[g]:
            continue
        a = actions[g]
        if a < 0 or a >= masks.shape[1] or masks[g, a] == 0:
            return g
    return -1


__all__ = [
    "AUTORESET_MODES",
    "GOLDEN",
    "MAX_DEAL_SEED",
    "MAX_SEATS",
    "MISSING",
    "MT_WORDS",
    "SCORE",
    "SHAPED",
    "TURN_CAPS",
    "WIN",
    "BatchKernels",
    "below",
    "borrow",
    "compiled_features",
    "final_reward",
    "first_illegal",
    "inlined",
    "kernel",
    "mix64",
    "mt_below",
    "mt_next",
    "mt_sample",
    "mt_scratch",
    "mt_seed",
    "mt_shuffle",
    "next_deal_seed",
    "next_u64",
    "potential",
    "random_legal",
    "require_numba",
    "seed_generators",
    "shuffle",
    "sparse_rows",
    "sparse_rows_gathered",
    "take_deal_seed",
]
