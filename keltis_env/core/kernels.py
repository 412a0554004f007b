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
  :func:`below`, :func:`seed_generators`; :func:`mix64` is its finaliser, which the dice
  game's rolls use as its Python engine does);
* the rewards of :mod:`keltis_env.core.rewards` on a score array
  (:func:`final_reward`, :func:`potential`), with the modes numbered as
  :data:`~keltis_env.core.rewards.REWARD_MODES` lists them;
* :func:`sparse_rows`: a network layer's products summed over each row's non-zero inputs,
  row by row, and :func:`sparse_rows_gathered` over each row's relabellings (the first
  layer of the ``ppo`` bot's sparse forward pass,
  :meth:`keltis_env.policy.NumpyPolicy.sparse_logits`);
* :class:`LearnerBatch`: N learner games of any game with kernels, stepped in one call
  (the game's ``kernels_batch.learner_batch`` builds one), with the learner view's
  observation features that the game's step computes and its ``illegal_action`` modes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

from .errors import ActionError
from .match import check_illegal_action
from .rewards import REWARD_MODES, SCORE_SCALE, check_reward_mode

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

#: SplitMix64's increment (the golden ratio), as a uint64
GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@kernel
def mix64(x: Any) -> Any:
    """SplitMix64's finaliser on a ``uint64`` (a bijective scramble)."""
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@kernel
def next_u64(rng: Any, i: int) -> Any:
    """The next number of game ``i``'s generator (SplitMix64 on ``rng[i]``)."""
    x = rng[i] + GOLDEN
    rng[i] = x
    return mix64(x)


@kernel
def below(rng: Any, i: int, n: int) -> int:
    """A number in ``0..n-1`` from game ``i``'s generator (``n`` >= 1)."""
    return int(next_u64(rng, i) % np.uint64(n))


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


# ---------------------------------------------------------------------- batches of learner games
#: how a game cut at its turn cap ends a learner's episode (as the learner view's ``turn_cap``)
TURN_CAPS = ("truncate", "end")
#: when a batch deals a new game where one ended (see :class:`LearnerBatch`)
AUTORESET_MODES = ("same-step", "next-step")
#: the most players of any game (the width of a batch's final scores)
MAX_SEATS = 4


class BatchKernels(NamedTuple):
    """What a game's batch module gives :class:`LearnerBatch`: ``new_games(config, count,
    rng)``, the compiled ``learner_step`` (one learner step in each game against the
    opponents of ``opponent_args``, auto-reset), ``encoding_args(num_players, features)``
    (the observation size with those features and the encoder's arguments of
    ``learner_step``), the number of action ids, ``unpack(row, config)`` (a row's Python
    state), ``opponent_args(spec)`` (``learner_step``'s arguments for the opponents an agent
    spec names; a ``ValueError`` naming the ones the game compiles for any other) and the
    observation features its step computes (the learner view's ``features``). numba caches
    only module-level kernels that call module-level kernels, so each game compiles its
    own ``learner_step``; this class is what they share."""

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


class LearnerBatch:
    """``num_games`` learner games of one game in one process, stepped together by its
    compiled ``learner_step`` against ``opponents`` (an agent spec the game compiles:
    ``"random"`` or ``"heuristic"`` with its options): observations (the Python encoder's
    with ``features``, bit for bit) and masks as arrays, rewards as the learner view pays
    them (``reward``, ``turn_cap``). The learner of game ``g`` sits in seat ``g %
    num_players``; deals come from ``seed``.

    ``features``: the learner view's observation features, of those the game's step
    computes (:attr:`BatchKernels.features`; a ``ValueError`` names them). ``illegal_action``
    (:data:`~keltis_env.core.match.ILLEGAL_ACTION_MODES`), as the learner view's:
    ``"terminate"`` ends the offending game's episode (terminated, reward -1; the game is
    abandoned and dealt again); ``"raise"`` raises an
    :class:`~keltis_env.core.errors.ActionError` naming the first offending game and its
    action before any game moves, so nothing changes.

    ``reset()`` returns ``(obs, masks)``; ``step(actions)`` returns ``(obs, rewards,
    terminated, truncated, masks)``, and ``final_scores[g]`` holds the scores of a game that
    ended. ``autoreset`` (:data:`AUTORESET_MODES`): ``"same-step"`` deals a new game where
    one ended within the same call (its observation is returned, the ended game's last one
    is in ``final_obs[g]``); ``"next-step"`` (Gymnasium's default) returns the ended game's
    last observation with a mask of zeros, and the next call deals, ignores that game's
    action and pays 0. The arrays returned are reused by the next call.
    """

    def __init__(self, kernels: BatchKernels, config: Any, num_games: int, *, seed: int = 0, reward: str = "win",
                 turn_cap: str = "truncate", autoreset: str = "same-step", opponents: str = "random",
                 features: Iterable[str] | None = (), illegal_action: str = "terminate") -> None:
        if isinstance(num_games, bool) or not isinstance(num_games, int) or num_games < 1:
            raise ValueError(f"num_games must be an integer >= 1, got {num_games!r}")
        if turn_cap not in TURN_CAPS:
            raise ValueError(f"turn_cap must be one of {', '.join(map(repr, TURN_CAPS))}, got {turn_cap!r}")
        if autoreset not in AUTORESET_MODES:
            raise ValueError(f"autoreset must be one of {', '.join(map(repr, AUTORESET_MODES))}, got {autoreset!r}")
        self.features = compiled_features(features, kernels.features)
        self.illegal_action = check_illegal_action(illegal_action)
        self._opponents = kernels.opponent_args(opponents)
        self.kernels = kernels
        self.config = config
        self.num_games = num_games
        self.reward_mode = REWARD_MODES.index(check_reward_mode(reward))
        self.cap_ends = turn_cap == "end"
        self.next_step = autoreset == "next-step"
        self.rng = seed_generators(seed, num_games)
        self.seed = seed
        size, self._encoding = kernels.encoding_args(config.num_players, self.features)
        self.seats = (np.arange(num_games) % config.num_players).astype(np.int64)
        self.obs = np.zeros((num_games, size), dtype=np.float32)
        self.final_obs = np.zeros((num_games, size), dtype=np.float32)
        self.masks = np.zeros((num_games, kernels.num_actions), dtype=np.int8)
        self.rewards = np.zeros(num_games)
        self.terminated = np.zeros(num_games, dtype=np.bool_)
        self.truncated = np.zeros(num_games, dtype=np.bool_)
        self.final_scores = np.zeros((num_games, MAX_SEATS), dtype=np.int64)
        self.pending = np.zeros(num_games, dtype=np.bool_)
        self._potential = np.zeros(num_games)
        self.states = kernels.new_games(config, num_games, self.rng)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """New games from ``seed`` (default: the batch's); every learner is then to move."""
        if seed is not None:
            self.rng = seed_generators(seed, self.num_games)  # checks the seed first
            self.seed = seed
        else:
            self.rng = seed_generators(self.seed, self.num_games)
        self.states = self.kernels.new_games(self.config, self.num_games, self.rng)
        # every game's next call deals and lets the opponents move; the actions are ignored
        self.pending[:] = True
        self._step(np.zeros(self.num_games, dtype=np.int64), next_step=False)
        return self.obs, self.masks

    def position(self, g: int) -> Any:
        """Game ``g``'s position as the Python engine's state (for records, views and checks)."""
        return self.kernels.unpack(self.states[g], self.config)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every learner's action. An illegal one ends its episode with reward -1, or under
        ``illegal_action="raise"`` raises an ``ActionError`` naming the game and the action,
        and no game moves."""
        given = np.asarray(actions)
        actions = np.asarray(given, dtype=np.int64)
        if self.illegal_action == "raise":
            self._check_legal(given, actions)
        self._step(actions, self.next_step)
        return self.obs, self.rewards, self.terminated, self.truncated, self.masks

    def _check_legal(self, given: np.ndarray, actions: np.ndarray) -> None:
        """An ``ActionError`` naming the first game whose action is not legal there (the
        games waiting to be dealt again ignore theirs)."""
        if given.shape != (self.num_games,) or given.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_games} integer action ids (one per game), got "
                             f"{given.dtype} of shape {given.shape}")
        # an id too large for int64 wraps to a negative one there: illegal either way
        g = first_illegal(actions, self.masks, self.pending)
        if g >= 0:
            action = given[g].item()
            reason = (f"out of range 0..{self.kernels.num_actions - 1}" if not 0 <= action < self.kernels.num_actions
                      else "not legal in that game's position")
            raise ActionError(f"illegal action {action!r} in game {g}: {reason} (illegal_action='raise'; "
                              "no game was stepped)")

    def _step(self, actions: np.ndarray, next_step: bool) -> None:
        self.kernels.learner_step(self.states, self.seats, actions, self.rng, self.reward_mode, self.cap_ends,
                                  next_step, *self._encoding, *self._opponents, self.obs, self.masks, self.rewards,
                                  self.terminated, self.truncated, self.final_scores, self.final_obs, self.pending,
                                  self._potential)


__all__ = [
    "AUTORESET_MODES",
    "GOLDEN",
    "MAX_SEATS",
    "MISSING",
    "SCORE",
    "SHAPED",
    "TURN_CAPS",
    "WIN",
    "BatchKernels",
    "LearnerBatch",
    "below",
    "compiled_features",
    "final_reward",
    "first_illegal",
    "kernel",
    "mix64",
    "next_u64",
    "potential",
    "require_numba",
    "seed_generators",
    "shuffle",
    "sparse_rows",
    "sparse_rows_gathered",
]
