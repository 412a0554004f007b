"""A Gymnasium vector environment of learner games on the compiled core (the ``fast`` extra).

==================  ==========================================================
Import              ``from keltis_env.vector import KeltisVectorEnv``
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
reward="win", turn_cap="truncate", features=(), illegal_action="terminate",
**game_options)``: the learner of game ``g`` sits in
seat ``g % num_players``; the other seats are played inside the compiled step by
``opponents``: ``"random"`` (uniformly random legal actions), ``"heuristic"`` with its
options (the card game's ``"heuristic:paths=3,gap=3"``, the dice game's
``"heuristic:extra_turn_value=4"``) or, in the card game, ``"planner"`` (the plan model's
best action; it has no options), the same decisions as the game's Python bot at every
seat and player count. ``reward``, ``turn_cap``, ``features`` and ``illegal_action`` are
the learner view's (:class:`~keltis_env.learner.KeltisLearnerEnv`):

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

Next-step auto-reset: the step in which a game's episode ends returns that game's last
observation (its mask all ``False``) with ``terminated`` or ``truncated``; the next step
deals a new game there, ignores that game's action, and returns reward 0 and the new
game's first observation. ``info["final_scores"]`` (``(num_envs, 4)``, zeros past the
player count) holds the scores of the games that ended in a step.

Deals come from the seed of ``reset`` (one generator per game), so the same seed and
actions give the same games; they are not the games the Python engine deals from that
seed. ``env.position(g)`` is game ``g`` as the Python engine's state (for records, views,
rendering). A game without a compiled core is refused, naming it; without numba the
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

import importlib
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from keltis_env.core.errors import describe_value
from keltis_env.core.game import get_game
from keltis_env.core.match import check_seed


def compiled_learner_batch(game: str) -> Callable[..., Any] | None:
    """The ``learner_batch`` of ``game``'s compiled core (its package's ``kernels_batch``),
    or ``None`` for a game without one (it runs on the Python engine alone). Without numba
    the kernels' one-line ``ImportError`` is raised."""
    package = get_game(game).state_cls.__module__.rpartition(".")[0]
    try:
        module = importlib.import_module(f"{package}.kernels_batch")
    except ModuleNotFoundError as exc:
        if exc.name == f"{package}.kernels_batch":
            return None
        raise
    factory: Callable[..., Any] = module.learner_batch
    return factory


def learner_games(game: str, num_envs: int, num_players: int, game_options: dict[str, Any],
                  **batch_options: Any) -> tuple[Any, Any, spaces.Box, spaces.Discrete]:
    """``num_envs`` learner games of ``game`` on its compiled core (``batch_options``: reward,
    turn_cap, autoreset, opponents, features, illegal_action): the game's config, the batch,
    one game's observation and action spaces. ``ValueError`` for a game without a compiled
    core."""
    descriptor = get_game(game)
    learner_batch = compiled_learner_batch(descriptor.name)
    if learner_batch is None:
        raise ValueError(f"the game {descriptor.name!r} has no compiled core (keltis_env.games.<game>."
                         "kernels_batch); use its learner view, keltis_env.learner.KeltisLearnerEnv")
    config = descriptor.make_config(num_players=num_players, **game_options)
    batch = learner_batch(num_envs, config, **batch_options)
    size = batch.obs.shape[1]
    observation_space = spaces.Box(descriptor.obs_low, descriptor.obs_high, (size,), np.float32)
    return config, batch, observation_space, spaces.Discrete(descriptor.num_actions)


class KeltisVectorEnv(VectorEnv):
    """``num_envs`` learner games on the compiled core; see the module documentation."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 64, *, game: str = "keltis", num_players: int = 2,
                 opponents: str = "random", reward: str = "win", turn_cap: str = "truncate",
                 features: Sequence[str] | None = (), illegal_action: str = "terminate",
                 **game_options: Any) -> None:
        self.config, self._batch, self.single_observation_space, self.single_action_space = learner_games(
            game, num_envs, num_players, game_options, reward=reward, turn_cap=turn_cap, autoreset="next-step",
            opponents=opponents, features=features, illegal_action=illegal_action)
        self.features: tuple[str, ...] = self._batch.features
        self.illegal_action: str = self._batch.illegal_action
        self.num_envs = num_envs
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.game = get_game(game).name
        self._seeder = random.Random()
        self._seeded = False

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """New games in every sub-environment; ``seed`` (an integer >= 0) makes them
        reproducible, later resets without one continue from the last seed's sequence."""
        if options:
            raise ValueError(f"reset options are not supported by the vector environment, got {options!r}")
        seed = check_seed(seed, minimum=0)
        if seed is not None:
            self._seeder.seed(seed)
        elif not self._seeded:
            self._seeder.seed(random.SystemRandom().randrange(2**63))
        self._batch.reset(seed if seed is not None else self._seeder.randrange(2**63))
        self._seeded = True
        return self._batch.obs.copy(), {"action_mask": self.action_masks()}

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
        ended = terminated | truncated
        info = {"action_mask": self.action_masks(),
                "final_scores": np.where(ended[:, None], self._batch.final_scores, 0)}
        return obs.copy(), rewards.copy(), terminated.copy(), truncated.copy(), info

    def position(self, index: int) -> Any:
        """Sub-environment ``index``'s game as the Python engine's state (for records,
        views and rendering)."""
        return self._batch.position(index)

    def action_masks(self) -> np.ndarray:
        """Each learner's legal actions (bool, ``(num_envs, num_actions)``); all ``False``
        for a game whose episode just ended."""
        masks: np.ndarray = self._batch.masks.astype(bool)
        return masks


__all__ = ["KeltisVectorEnv", "compiled_learner_batch", "learner_games"]
