"""The one batch driver: N learner games of one game on its compiled core, stepped in one
call (numba, the ``fast`` extra).

:class:`LearnerBatch` holds the games as rows of the game's kernels and steps them with the
game's compiled ``learner_step`` (its descriptor's ``compiled.batch`` module, ``KERNELS``):
the learner's action, then the opponents inside the kernels (random, heuristic, planner),
rewards as the learner view pays them, turn caps, observation features, auto-reset. The
vector environment (:mod:`keltis_env.envs.vector`) and SB3's VecEnv (:mod:`keltis_env.envs.vector_sb3`)
are thin adapters over it.

Deals: slot ``g`` of ``reset(seed=s)`` is the Python engine's deal from seed ``s + g``
(Gymnasium's convention for sub-environments), the game ``keltis_v0.env().reset(seed=s +
g)`` deals; each later game of the slot is the Python engine's deal from a seed drawn from
the slot's generator. :attr:`LearnerBatch.deal_seeds` holds each slot's current seed, so any
game seen can be replayed from its seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from keltis_env.core.errors import ActionError
from keltis_env.core.game import get_game
from keltis_env.core.kernels import (
    AUTORESET_MODES,
    MAX_DEAL_SEED,
    MAX_SEATS,
    BatchKernels,
    compiled_features,
    first_illegal,
    seed_generators,
)
from keltis_env.core.learner_game import LearnerGame

from . import require_core


def check_deal_seed(seed: Any, count: int) -> int:
    """``seed`` for ``count`` slots (seeds ``seed .. seed + count - 1``): an integer >= 0 whose
    last slot's seed is at most :data:`~keltis_env.core.kernels.MAX_DEAL_SEED`."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_DEAL_SEED - count + 1:
        raise ValueError(f"seed must be an integer >= 0 and <= {MAX_DEAL_SEED - count + 1} (slot g deals from "
                         f"seed + g, at most 2**63 - 1), got {seed!r}")
    return int(seed)


class LearnerBatch:
    """``num_games`` learner games of the learner game ``learner`` (its game, players, reward,
    turn cap, features, illegal-action mode and options) in one process, stepped together
    by its compiled ``learner_step`` against ``opponents`` (an agent spec the game compiles:
    ``"random"`` or ``"heuristic"`` with its options, the card game's ``"planner"``):
    observations (the Python encoder's with ``features``, bit for bit) and masks as arrays,
    rewards as the learner view pays them (``reward``, ``turn_cap``). The learner of game
    ``g`` sits in seat ``g % num_players``; see the module for the deals.

    ``features``: the learner view's observation features, of those the game's step
    computes (:attr:`BatchKernels.features`; a ``ValueError`` names them). ``illegal_action``
    (:data:`~keltis_env.core.match.ILLEGAL_ACTION_MODES`), as the learner view's:
    ``"terminate"`` ends the offending game's episode (terminated, reward -1; the game is
    abandoned and dealt again); ``"raise"`` raises an
    :class:`~keltis_env.core.errors.ActionError` naming the first offending game and its
    action before any game moves, so nothing changes.

    ``reset()`` returns ``(obs, masks)``; ``step(actions)`` returns ``(obs, rewards,
    terminated, truncated, masks)``; ``final_scores[g]`` holds the scores of a game that
    ended in the last step (zeros for the others and past the player count). ``autoreset``
    (:data:`~keltis_env.core.kernels.AUTORESET_MODES`): ``"same-step"`` deals a new game
    where one ended within the same call (its observation is returned, the ended game's
    last one is in ``final_obs[g]``); ``"next-step"`` (Gymnasium's default) returns the
    ended game's last observation with a mask of zeros, and the next call deals, ignores
    that game's action and pays 0. The arrays returned are the batch's own, rewritten in
    place by the next call (``masks`` is int8; :attr:`bool_masks` is the same memory as bool):
    read them, do not write into them (the card game's next observation is written over the
    last one where the moves between change it). ``step`` before ``reset`` raises.
    """

    def __init__(self, learner: LearnerGame, num_games: int, *, seed: int = 0, autoreset: str = "same-step",
                 opponents: str = "random") -> None:
        descriptor = learner.descriptor
        kernels: BatchKernels = require_core(descriptor).KERNELS
        if isinstance(num_games, bool) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be an integer >= 1, got {num_games!r}")
        num_games = int(num_games)
        if autoreset not in AUTORESET_MODES:
            raise ValueError(f"autoreset must be one of {', '.join(map(repr, AUTORESET_MODES))}, got {autoreset!r}")
        self.features = compiled_features(learner.features, kernels.features)
        self.illegal_action = learner.illegal_action
        self._opponents = kernels.opponent_args(opponents)
        self.learner = learner
        self.game = descriptor
        self.kernels = kernels
        self.config = learner.config
        self.num_games = num_games
        self.reward_mode = learner.reward_number
        self.cap_ends = learner.turn_cap == "end"
        self.next_step = autoreset == "next-step"
        self.seed = check_deal_seed(seed, num_games)
        size, self._encoding = kernels.encoding_args(self.config.num_players, self.features)
        self.seats = (np.arange(num_games) % self.config.num_players).astype(np.int64)
        self.obs = np.zeros((num_games, size), dtype=np.float32)
        self.final_obs = np.zeros((num_games, size), dtype=np.float32)
        self.masks = np.zeros((num_games, kernels.num_actions), dtype=np.int8)
        self.bool_masks = self.masks.view(np.bool_)  # the kernels write 0 and 1: valid bools
        #: the legal actions as the kernels last wrote them: a learner's action is judged here,
        #: not on ``masks``, which the caller holds and might change
        self._legal = np.zeros_like(self.masks)
        self._started = False
        self.rewards = np.zeros(num_games)
        self.terminated = np.zeros(num_games, dtype=np.bool_)
        self.truncated = np.zeros(num_games, dtype=np.bool_)
        self.final_scores = np.zeros((num_games, MAX_SEATS), dtype=np.int64)
        self.pending = np.zeros(num_games, dtype=np.bool_)
        self._potential = np.zeros(num_games)
        #: per slot: the current game's deal seed and the next deal's
        self.seeds = np.zeros((num_games, 2), dtype=np.int64)
        self._seed_slots(self.seed)
        self.states = kernels.new_games(self.config, num_games, self.rng, self.seeds)

    def _seed_slots(self, seed: int) -> None:
        self.rng = seed_generators(seed, self.num_games)  # the opponents' draws and the later deals' seeds
        self.seeds[:, 1] = seed + np.arange(self.num_games)

    @property
    def deal_seeds(self) -> np.ndarray:
        """Each slot's current game's seed: the Python engine deals that game from it."""
        seeds: np.ndarray = self.seeds[:, 0]
        return seeds

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """New games from ``seed`` (default: the batch's): slot ``g`` the Python engine's deal
        from ``seed + g``; every learner is then to move."""
        if seed is not None:
            self.seed = check_deal_seed(seed, self.num_games)
        self._seed_slots(self.seed)
        # every game's next call deals and lets the opponents move; the actions are ignored
        self.pending[:] = True
        self._step(np.zeros(self.num_games, dtype=np.int64), next_step=False)
        self._started = True
        return self.obs, self.masks

    def position(self, g: int) -> Any:
        """Game ``g``'s position as the Python engine's state (for records, views and checks)."""
        return self.kernels.unpack(self.states[g], self.config)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every learner's action. An illegal one ends its episode with reward -1, or under
        ``illegal_action="raise"`` raises an ``ActionError`` naming the game and the action,
        and no game moves."""
        if not self._started:
            raise RuntimeError("call reset() before step()")
        given = np.asarray(actions)
        actions = given if given.dtype == np.int64 else np.asarray(given, dtype=np.int64)
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
        g = first_illegal(actions, self._legal, self.pending)
        if g >= 0:
            action = given[g].item()
            reason = (f"out of range 0..{self.kernels.num_actions - 1}" if not 0 <= action < self.kernels.num_actions
                      else "not legal in that game's position")
            raise ActionError(f"illegal action {action!r} in game {g}: {reason} (illegal_action='raise'; "
                              "no game was stepped)")

    def _step(self, actions: np.ndarray, next_step: bool) -> None:
        self.kernels.learner_step(self.states, self.seats, actions, self.rng, self.seeds, self.reward_mode,
                                  self.cap_ends, next_step, *self._encoding, *self._opponents, self.obs, self.masks,
                                  self.rewards, self.terminated, self.truncated, self.final_scores, self.final_obs,
                                  self.pending, self._potential, self._legal)


def learner_batch(game: Any, num_games: int, config: Any = None, *, seed: int = 0, autoreset: str = "same-step",
                  opponents: str = "random", **learner: Any) -> LearnerBatch:
    """``num_games`` learner games of ``game`` with ``config`` (default: the game's default
    options); ``learner``: the other :class:`~keltis_env.core.learner_game.LearnerGame`
    arguments (``reward``, ``turn_cap``, ``features``, ``illegal_action``); see
    :class:`LearnerBatch`."""
    descriptor = get_game(game)
    if config is not None:
        learner["num_players"] = config.num_players
        learner["options"] = {k: v for k, v in config.to_dict().items() if k != "num_players"}
    spec = LearnerGame(game=descriptor.name, **learner)
    return LearnerBatch(spec, num_games, seed=seed, autoreset=autoreset, opponents=opponents)


__all__ = ["LearnerBatch", "check_deal_seed", "learner_batch"]
