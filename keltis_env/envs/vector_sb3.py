"""Stable-Baselines3's ``VecEnv`` of learner games on the compiled core (the ``fast`` and
``train`` extras), for SB3 and sb3-contrib's ``MaskablePPO``.

``KeltisSB3VecEnv(num_envs=64, *, game="keltis", num_players=2, opponents="random",
reward="win", turn_cap="truncate", features=(), illegal_action="terminate",
**game_options)``: the games, seats, opponents (inside the compiled step), rewards, turn
caps, observation features and illegal-action modes of
:class:`keltis_env.envs.vector.KeltisVectorEnv`, under SB3's own conventions instead of
Gymnasium's:

* a game whose episode ends is dealt again within the same step: ``step_wait`` returns the
  new game's first observation, ``done`` for that game, and in its info the ended game's
  last observation (``"terminal_observation"``), ``"TimeLimit.truncated"`` (a game cut at
  its turn cap under ``turn_cap="truncate"``) and ``"scores"``;
* ``seed(s)`` applies at the next ``reset()``: game ``g`` is then the Python engine's deal
  from ``s + g``, as in the vector environment (``deal_seeds`` holds each game's current
  seed); without a seed a reset draws one;
* ``env_method("action_masks")`` (what ``MaskablePPO`` calls) gives each game's legal
  actions, as does ``action_masks()``.

An illegal action ends that game's episode with reward ``-1`` (``illegal_action="terminate"``),
or (``"raise"``) makes ``step_wait`` raise an ``ActionError`` naming the game and the
action, with no game stepped.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from keltis_env.core.errors import describe_value
from keltis_env.core.learner_game import LearnerGame
from keltis_env.core.match import check_seed
from keltis_env.envs.vector import check_index, learner_games


class KeltisSB3VecEnv(VecEnv):
    """``num_envs`` learner games on the compiled core, under SB3's ``VecEnv`` API; see the
    module documentation."""

    def __init__(self, num_envs: int = 64, *, game: str = "keltis", num_players: int = 2, opponents: str = "random",
                 reward: str = "win", turn_cap: str = "truncate", features: Sequence[str] | None = (),
                 illegal_action: str = "terminate", **game_options: Any) -> None:
        self.learner = LearnerGame(game=game, num_players=num_players, reward=reward, turn_cap=turn_cap,
                                   features=features, illegal_action=illegal_action, options=game_options)
        self.config, self._batch, observation_space, action_space = learner_games(
            self.learner, num_envs, opponents=opponents, autoreset="same-step")
        super().__init__(self._batch.num_games, observation_space, action_space)
        self._actions: np.ndarray | None = None

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """The seed of the next ``reset``: game ``g`` is then the Python engine's deal from
        ``seed + g``. ``seed`` is an integer >= 0 (any integer type) or ``None`` (seeds from the
        operating system); anything else raises a ``TypeError`` or ``ValueError`` naming it."""
        value = check_seed(seed, minimum=0)
        return super().seed(value)

    # ------------------------------------------------------------------ SB3's VecEnv API
    def reset(self) -> np.ndarray:
        seed = self._seeds[0] if self._seeds and self._seeds[0] is not None else None
        if seed is None:
            seed = random.SystemRandom().randrange(2**63 - self.num_envs)
        self._batch.reset(int(seed))
        self._reset_seeds()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._batch.obs.copy()

    def step_async(self, actions: np.ndarray) -> None:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,) or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_envs} integer action ids (one per game), "
                             f"got {describe_value(actions)}")
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait() needs step_async(actions) first")
        actions, self._actions = self._actions, None
        obs, rewards, terminated, truncated, _masks = self._batch.step(actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        n = self.config.num_players
        for g in np.flatnonzero(dones):
            infos[g] = {"terminal_observation": self._batch.final_obs[g].copy(),
                        "TimeLimit.truncated": bool(truncated[g]),
                        "scores": self._batch.final_scores[g, :n].tolist()}
        return obs.copy(), rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        pass

    def position(self, index: int) -> Any:
        """Game ``index`` (an integer from 0 to ``num_envs - 1``) as the Python engine's state
        (for records, views and rendering)."""
        return self._batch.position(check_index(index, self.num_envs))

    @property
    def deal_seeds(self) -> np.ndarray:
        """Each game's current deal seed: the Python engine deals that game from it."""
        seeds: np.ndarray = self._batch.deal_seeds.copy()
        return seeds

    def action_masks(self) -> np.ndarray:
        """Each game's legal actions (bool, ``(num_envs, num_actions)``)."""
        masks: np.ndarray = self._batch.bool_masks.copy()
        return masks

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """Per game: ``"action_masks"`` (a method), ``"render_mode"`` (``None``) or an
        attribute of the game's options; anything else raises ``AttributeError``."""
        games = self._indices(indices)
        if attr_name == "action_masks":
            return [lambda g=g: self.action_masks()[g] for g in games]
        if attr_name == "render_mode":
            return [None for _ in games]
        if hasattr(self.config, attr_name):
            return [getattr(self.config, attr_name) for _ in games]
        raise AttributeError(f"the games of KeltisSB3VecEnv have no attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"the games of KeltisSB3VecEnv are set up once; {attr_name!r} cannot be set")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        """Per game: ``"action_masks"`` (what ``MaskablePPO`` calls); anything else raises
        ``AttributeError``."""
        if method_name != "action_masks":
            raise AttributeError(f"the games of KeltisSB3VecEnv have no method {method_name!r}")
        masks = self.action_masks()
        return [masks[g] for g in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def _indices(self, indices: int | Iterable[int] | None) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return list(indices)


__all__ = ["KeltisSB3VecEnv"]
