"""A Gymnasium vector environment of learner games on the compiled core (the ``fast`` extra).

==================  ==========================================================
Import              ``from keltis_env.envs.vector import KeltisVectorEnv``
Sub-environments    ``num_envs`` learner games of one game, stepped in one call
                    of its compiled ``learner_step`` (one process)
Actions             ``MultiDiscrete([num_actions] * num_envs)``: one action id per game
Observation         ``Box(obs_low, obs_high, (num_envs, size), float32)``: each
                    learner's encoded view, the Python encoder's bit for bit
Action masks        ``env.action_masks()`` (bool, ``(num_envs, num_actions)``), also
                    ``info["action_mask"]`` of every ``reset`` and ``step``
Auto-reset          Gymnasium's default, ``AutoresetMode.NEXT_STEP``
==================  ==========================================================

``KeltisVectorEnv(num_envs=64, *, game="keltis", num_players=2, opponents="random",
reward="win", turn_cap="truncate", features=(), illegal_action="terminate", copy=True,
**game_options)``: the learner of game ``g`` sits in
seat ``g % num_players``; the other seats are played inside the compiled step by
``opponents``: ``"random"`` (uniformly random legal actions), ``"heuristic"`` with its
options (the card game's ``"heuristic:paths=3,gap=3"``, the dice game's
``"heuristic:extra_turn_value=4"``) or, in the card game, ``"planner"`` (the plan model's
best action; it has no options), the same decisions as the game's Python bot at every
seat and player count. ``reward``, ``turn_cap``, ``features`` and ``illegal_action`` are
the learner view's (:class:`~keltis_env.envs.learner.KeltisLearnerEnv`):

* ``features``: observation features appended to each observation, computed inside the
  compiled step (the card game's ``"plan"``: the plan model's value of every legal action
  and its choice, 374 more values; ``"rows"``, 165), the Python encoder's with the same features bit for
  bit; a feature the compiled core does not compute is refused in one line naming those
  it does (the dice game has none);
* ``illegal_action``: ``"terminate"`` (default) ends that game's episode with reward
  ``-1`` (terminated; the game is abandoned and the next step deals a new one);
  ``"raise"`` raises an :class:`~keltis_env.core.errors.ActionError` naming the first
  game whose action is illegal and the action, before any game moves: nothing changes.

``game_options`` are the game's options (``max_turns``, the layouts).

``copy`` (as Gymnasium's own vector environments have it): with ``True`` (default) ``reset``
and ``step`` return new arrays; with ``False`` they return the environment's own buffers
(observations, rewards, flags, masks, final scores), rewritten in place by the next call:
no allocation per step, for loops that use each step's arrays before the next.

Next-step auto-reset: the step in which a game's episode ends returns that game's last
observation (its mask all ``False``) with ``terminated`` or ``truncated``; the next step
deals a new game there, ignores that game's action, and returns reward 0 and the new
game's first observation. ``info["final_scores"]`` (``(num_envs, 4)``, zeros past the
player count) holds the scores of the games that ended in a step.

Deals: game ``g`` of ``reset(seed=s)`` is the Python engine's deal from seed ``s + g``
(Gymnasium's convention for sub-environments), the game ``keltis_v0.env().reset(seed=s + g)``
and the learner view's ``reset(seed=s + g)`` deal; each later game of sub-environment ``g``
is the Python engine's deal from a seed drawn from that sub-environment's generator.
``env.deal_seeds`` holds each sub-environment's current game's seed (and
``info["deal_seed"]`` after ``reset``/``step``), so any game seen can be replayed or rendered
from its seed; ``env.position(g)`` is game ``g`` as the Python engine's state (for records,
views, rendering). A game without a compiled core is refused, naming it; without numba the
compiled core refuses in one line naming the extra.

A CleanRL-style loop (``policy`` maps observations to logits, one row per game)::

    env = KeltisVectorEnv(64, num_players=2, reward="shaped", turn_cap="end")
    obs, info = env.reset(seed=0)
    starts = np.zeros(env.num_envs, dtype=bool)  # steps that only deal a new game
    for _ in range(steps):
        logits = policy(obs)
        logits[~info["action_mask"]] = -np.inf  # only legal actions
        actions = sample(logits)  # any value where starts: that game's action is ignored
        next_obs, rewards, terminated, truncated, info = env.step(actions)
        store(obs, actions, rewards, terminated, truncated, valid=~starts)  # a start is no transition
        starts = terminated | truncated
        obs = next_obs

The episode statistics are ``rewards`` summed between starts; ``info["final_scores"]``
gives the scores of the games that ended.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from keltis_env.core.errors import describe_value
from keltis_env.core.game import get_game
from keltis_env.core.learner_game import LearnerGame
from keltis_env.core.match import check_seed
from keltis_env.core.validation import as_integer

#: the largest ``max_turns`` the compiled rows hold (the card game's rows are int32)
MAX_COMPILED_TURNS = 2**31 - 1


def check_num_envs(num_envs: Any, name: str = "num_envs") -> int:
    """``num_envs`` as a plain int >= 1 (any integer type, numpy's included); anything else
    raises a ``ValueError`` naming the argument as ``name``."""
    count = None if isinstance(num_envs, bool) else as_integer(num_envs)
    if count is None or count < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {describe_value(num_envs)}")
    return count


def check_opponents_spec(opponents: Any) -> None:
    """Refuse opponents that are not an agent spec string (the compiled core then checks
    the bot and its options as the bots' registry does)."""
    if not isinstance(opponents, str):
        raise ValueError(f"opponents must be an agent spec string the compiled core plays (random, heuristic with its "
                         f"options, the card game's planner), got {describe_value(opponents)}")


def learner_games(learner: LearnerGame, num_envs: int, *, opponents: str, autoreset: str) -> tuple[Any, Any, spaces.Box,
                                                                                                  spaces.Discrete]:
    """``num_envs`` learner games of ``learner`` on its game's compiled core against
    ``opponents`` (the one driver, :class:`keltis_env.compiled.batch.LearnerBatch`): the
    game's config, the batch, one game's observation and action spaces. ``ValueError`` for a
    game without a compiled core, naming it."""
    from keltis_env.compiled.batch import LearnerBatch

    descriptor = learner.descriptor
    count = check_num_envs(num_envs)
    config = learner.config
    if int(config.max_turns) > MAX_COMPILED_TURNS:
        raise ValueError(f"max_turns must be at most {MAX_COMPILED_TURNS} on the compiled core, got {config.max_turns}")
    check_opponents_spec(opponents)
    batch = LearnerBatch(learner, count, opponents=opponents, autoreset=autoreset)
    size = batch.obs.shape[1]
    observation_space = spaces.Box(descriptor.obs_low, descriptor.obs_high, (size,), np.float32)
    return config, batch, observation_space, spaces.Discrete(descriptor.num_actions)


class KeltisVectorEnv(VectorEnv):
    """``num_envs`` learner games on the compiled core; see the module documentation."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 64, *, game: str = "keltis", num_players: int = 2,
                 opponents: str = "random", reward: str = "win", turn_cap: str = "truncate",
                 features: Sequence[str] | None = (), illegal_action: str = "terminate", copy: bool = True,
                 **game_options: Any) -> None:
        if not isinstance(copy, bool):
            raise ValueError(f"copy must be True or False, got {describe_value(copy)}")
        self.learner = LearnerGame(game=game, num_players=num_players, reward=reward, turn_cap=turn_cap,
                                   features=features, illegal_action=illegal_action, options=game_options)
        self.config, self._batch, self.single_observation_space, self.single_action_space = learner_games(
            self.learner, num_envs, opponents=opponents, autoreset="next-step")
        self.features: tuple[str, ...] = self._batch.features
        self.illegal_action: str = self._batch.illegal_action
        self.num_envs = self._batch.num_games
        self.copy = copy
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.game = get_game(game).name
        self._seeder = random.Random()
        self._seeded = False
        batch = self._batch
        self._info: dict[str, Any] = {"action_mask": batch.bool_masks, "final_scores": batch.final_scores,
                                      "deal_seed": batch.deal_seeds}

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """New games in every sub-environment: game ``g`` the Python engine's deal from
        ``seed + g``; ``seed`` (an integer >= 0) makes them reproducible, later resets
        without one continue from the last seed's sequence."""
        if options:
            raise ValueError(f"reset options are not supported by the vector environment, got {options!r}")
        seed = check_seed(seed, minimum=0)
        if seed is not None:
            self._seeder.seed(seed)
        elif not self._seeded:
            self._seeder.seed(random.SystemRandom().randrange(2**63))
        self._batch.reset(seed if seed is not None else self._seeder.randrange(2**63 - self.num_envs))
        self._seeded = True
        batch = self._batch
        if not self.copy:
            return batch.obs, {"action_mask": batch.bool_masks, "deal_seed": batch.deal_seeds}
        return batch.obs.copy(), {"action_mask": batch.bool_masks.copy(), "deal_seed": batch.deal_seeds.copy()}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action id per game (an array of integers, one per sub-environment). Under
        ``illegal_action="raise"`` an illegal one raises an ``ActionError`` naming its game
        and nothing changes."""
        if not self._seeded:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_envs} integer action ids (one per game), "
                             f"got {describe_value(actions)}")
        obs, rewards, terminated, truncated, _masks = self._batch.step(actions)
        if not self.copy:
            return obs, rewards, terminated, truncated, self._info
        batch = self._batch
        info = {"action_mask": batch.bool_masks.copy(), "final_scores": batch.final_scores.copy(),
                "deal_seed": batch.deal_seeds.copy()}
        return obs.copy(), rewards.copy(), terminated.copy(), truncated.copy(), info

    @property
    def deal_seeds(self) -> np.ndarray:
        """Each sub-environment's current game's seed (int64, ``(num_envs,)``): the Python
        engine deals that game from it (``keltis_v0.env().reset(seed=...)``)."""
        seeds: np.ndarray = self._batch.deal_seeds.copy()
        return seeds

    def position(self, index: int) -> Any:
        """Sub-environment ``index``'s game as the Python engine's state (for records,
        views and rendering); ``index`` is an integer from 0 to ``num_envs - 1``."""
        return self._batch.position(check_index(index, self.num_envs))

    def action_masks(self) -> np.ndarray:
        """Each learner's legal actions (bool, ``(num_envs, num_actions)``); all ``False``
        for a game whose episode just ended."""
        masks: np.ndarray = self._batch.bool_masks
        return masks.copy() if self.copy else masks


def check_index(index: Any, count: int) -> int:
    """``index`` as a plain int from 0 to ``count - 1``; anything else a ``ValueError`` naming
    what is allowed."""
    value = None if isinstance(index, bool) else as_integer(index)
    if value is None or not 0 <= value < count:
        raise ValueError(f"index must be an integer from 0 to {count - 1} (a sub-environment), got "
                         f"{describe_value(index)}")
    return value


__all__ = ["MAX_COMPILED_TURNS", "KeltisVectorEnv", "check_index", "check_num_envs", "learner_games"]
