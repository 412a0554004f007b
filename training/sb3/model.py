"""The network of an SB3 run: the algorithm class, a new model built from the config, how
its first layers are computed (``first_layer``), and its update's settings."""

from __future__ import annotations

from typing import Any

from .config import PPOConfig, TrainConfig


def algorithm(config: TrainConfig) -> Any:
    """MaskablePPO (its rollouts pipelined on the batched collector, its update without
    distribution objects: :mod:`training.sb3.pipeline`), with the teacher anchor's loss term
    when the run has one (:mod:`training.sb3.distill`)."""
    if config.pretrain.anchor > 0:
        from .distill import AnchoredMaskablePPO

        return AnchoredMaskablePPO
    from .pipeline import PipelinedMaskablePPO

    return PipelinedMaskablePPO


def new_model(config: TrainConfig, venv: Any) -> Any:
    """A model with fresh weights (seeded by ``seed``) for the environments ``venv``."""
    import torch

    p, net = config.ppo, config.network
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[net.activation]
    policy: Any = "MlpPolicy"
    policy_kwargs: dict[str, Any] = {"net_arch": {"pi": list(net.net_arch), "vf": list(net.net_arch)},
                                     "activation_fn": activation}
    if config.critic == "full":  # the critic reads the whole row, the actor the seat's part
        from ..common.critic import PrivilegedCriticPolicy

        policy, policy_kwargs["seat_size"] = PrivilegedCriticPolicy, int(venv.get_attr("seat_size")[0])
    model = algorithm(config)(
        policy,
        venv,
        learning_rate=learning_rate(p),
        n_steps=p.n_steps,
        batch_size=p.batch_size,
        n_epochs=p.n_epochs,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        clip_range=p.clip_range,
        ent_coef=p.ent_coef,
        vf_coef=p.vf_coef,
        max_grad_norm=p.max_grad_norm,
        target_kl=p.target_kl,
        policy_kwargs=policy_kwargs,
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    set_first_layer(model, config)
    return model


def set_first_layer(model: Any, config: TrainConfig) -> None:
    """The first layer of the actor and the critic computed over the observations' non-zero
    inputs where ``first_layer`` is ``sparse`` (:mod:`training.common.sparse`). Models built
    or loaded for training pass here; saved files are the same either way."""
    if config.first_layer == "sparse":
        from ..common.sparse import sparsify

        sparsify(model.policy)


def learning_rate(p: PPOConfig) -> Any:
    """A constant, or SB3's picklable linear schedule (from the learning rate to 0 over the run)."""
    if p.lr_schedule == "linear":
        from stable_baselines3.common.utils import LinearSchedule

        return LinearSchedule(p.learning_rate, 0.0, 1.0)
    return p.learning_rate


def apply_ppo_settings(model: Any, p: PPOConfig) -> None:
    """The update's hyperparameters, which a resumed run may change (the rollout's own,
    n_steps, gamma and gae_lambda, stay as saved: a resume refuses changes), and the slow
    copy's regulariser (a copy made now where there is none)."""
    from stable_baselines3.common.utils import FloatSchedule

    model.n_epochs, model.batch_size, model.ent_coef, model.vf_coef = p.n_epochs, p.batch_size, p.ent_coef, p.vf_coef
    model.max_grad_norm, model.target_kl = p.max_grad_norm, p.target_kl
    model.learning_rate = learning_rate(p)
    model._setup_lr_schedule()
    model.clip_range = FloatSchedule(p.clip_range)
    model.set_slow(p.slow_kl, p.slow_tau)


__all__ = ["algorithm", "apply_ppo_settings", "learning_rate", "new_model", "set_first_layer"]
