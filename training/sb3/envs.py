"""The vectorised learner games of a training run (any game of the registry: ``env.game``):
the batched self-play collector, the one vectoriser of training."""

from __future__ import annotations

from typing import Any

from .config import TrainConfig


def make_vec_env(config: TrainConfig, opponents: list[str], weights: list[float]) -> Any:
    """``config.n_envs`` learner games stepped by the batched self-play collector
    (:class:`training.sb3.collector.BatchedSelfPlayVecEnv`) in ``config.workers`` processes
    (0: in this process)."""
    from .collector import BatchedSelfPlayVecEnv

    env = config.env
    return BatchedSelfPlayVecEnv(config.n_envs, opponents, weights, game=env.game, num_players=env.num_players,
                                 reward=env.reward, workers=config.workers, game_options=env.game_options(),
                                 features=env.features, pipeline=config.pipeline, turn_cap=env.turn_cap,
                                 backend=config.collector_backend, relabel=config.relabel,
                                 relabel_seed=config.seed, privileged=config.critic == "full")


__all__ = ["make_vec_env"]
