"""The vectorised learner environments of a training run (any game of the registry: ``env.game``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper

from ..common.run_config import TrainConfig
from .vec import GroupedSubprocVecEnv


def _env_factory(config: TrainConfig, opponents: list[str], weights: list[float]) -> Any:
    env_cfg = config.env

    def make() -> Any:
        from keltis_env.learner import KeltisLearnerEnv

        env = KeltisLearnerEnv(
            num_players=env_cfg.num_players,
            opponents=opponents,
            opponent_weights=weights,
            reward=env_cfg.reward,
            mask_in_info=True,
            game=env_cfg.game,
            features=env_cfg.features,
            **env_cfg.game_options(),
        )
        return Monitor(env)

    return make


def make_vec_env(config: TrainConfig, opponents: list[str], weights: list[float]) -> VecEnv:
    """``config.n_envs`` learner games: for ``vec_env: batched`` the batched self-play
    collector (:class:`training.sb3.collector.BatchedSelfPlayVecEnv`, ``config.workers``
    processes); otherwise learner environments shared by ``config.workers`` processes for
    ``subproc`` (in this process for ``dummy``), with their action masks delivered along
    with each step (:class:`MaskCache`)."""
    if config.vec_env == "batched":
        from .collector import BatchedSelfPlayVecEnv

        env = config.env
        return BatchedSelfPlayVecEnv(config.n_envs, opponents, weights, game=env.game, num_players=env.num_players,
                                     reward=env.reward, workers=config.workers, game_options=env.game_options(),
                                     features=env.features, pipeline=config.pipeline)
    fns = [_env_factory(config, opponents, weights) for _ in range(config.n_envs)]
    if config.vec_env == "subproc":
        # forkserver: workers start clean, never as a copy of a process with torch threads
        venv: VecEnv = GroupedSubprocVecEnv(fns, workers=config.workers, start_method="forkserver")
    else:
        venv = DummyVecEnv(fns)
    return MaskCache(venv)


class MaskCache(VecEnvWrapper):
    """Serves ``env_method("action_masks")`` from the masks that the environments put in
    every step's (and reset's) info, saving MaskablePPO a round trip to the workers per
    step. Any other method call goes to the environments."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self._masks: np.ndarray | None = None

    def reset(self) -> Any:
        obs = self.venv.reset()
        self._masks = np.stack([info["action_mask"] for info in self.venv.reset_infos])
        self.reset_infos = self.venv.reset_infos
        return obs

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        masks = []
        for i, info in enumerate(infos):
            # after a game ends the environment has reset itself: the mask is the new game's
            source = self.venv.reset_infos[i] if dones[i] else info
            masks.append(source["action_mask"])
        self._masks = np.stack(masks)
        self.reset_infos = self.venv.reset_infos
        return obs, rewards, dones, infos

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
        if method_name == "action_masks" and self._masks is not None and indices is None and not args and not kwargs:
            return list(self._masks)
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)


__all__ = ["MaskCache", "make_vec_env"]
