"""Fitting a policy to demonstrations: behaviour cloning of a teacher (cross-entropy over
the legal actions to its moves or soft targets, the value network to each decision's final
reward), and sharpening the fitted policy before reinforcement learning.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np

from ..common.masked import forward
from ..common.sections import EnvConfig
from .config import FitConfig
from .demonstrations import Demonstrations


def fit_demonstrations(model: Any, data: Demonstrations, p: FitConfig, env: EnvConfig, seed: int, log: Any = print,
                       held_out: Demonstrations | None = None, select: Callable[[int], float] | None = None,
                       select_start: bool = False) -> dict[str, float]:
    """Fit ``model.policy`` to the demonstrations with the settings ``p`` (relabelled as
    ``p.augment`` says for the game of ``env``; shuffled from ``seed``) (cross-entropy to the teacher's soft
    targets where recorded, to its moves otherwise); returns the held-out accuracy (the
    teacher's move is the policy's most probable), the losses, and the value loss of always
    guessing the mean reward of the training part (``value_loss_mean_guess``).

    Held out: ``held_out`` when given (all of ``data`` is fitted), else a random 5% of the
    decisions. Decisions of one game share its outcome, so only games held out whole (as
    whole recordings are) measure how the value head does on games it never saw.

    ``select`` (see :func:`training.imitate.select.play_selector`): called with the epoch's
    number after each epoch (and with 0 before the first when ``select_start``: the weights
    the fit starts from compete too), it scores the policy as it stands (a win rate); the fit
    ends with the weights of the best-scoring epoch, the later one among ties, and its
    statistics (``selected_epoch``, ``selected_score``). The held-out loss hardly tells the
    epochs apart, while their play differs by many points."""
    import torch

    policy = model.policy
    rng = np.random.default_rng(seed)
    if held_out is None:
        order = rng.permutation(len(data))
        n_val = max(1, len(data) // 20)
        val, train = order[:n_val], order[n_val:]
        val_data = data
    else:
        if held_out.targets.shape[1] != data.targets.shape[1]:
            raise ValueError("the held-out decisions and the fitted ones must have targets of the same kind")
        val, train, val_data = np.arange(len(held_out)), np.arange(len(data)), held_out
    optimizer = torch.optim.Adam(policy.parameters(), lr=p.learning_rate)
    steps = max(1, p.epochs * -(-len(train) // p.batch_size))
    decay = (lambda k: 1.0 - k / steps) if p.lr_schedule == "linear" else (lambda k: 1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, decay)
    policy.set_training_mode(True)

    soft = data.targets.shape[1] > 0
    # the value loss of a predictor that always says the mean reward of the training part:
    # a value head that learned anything does better on the held-out part
    mean_guess = float(np.mean((val_data.returns[val] - data.returns[train].mean()) ** 2)) if len(train) else 0.0

    batch, val_batch = _batches(data, soft), _batches(val_data, soft)
    if p.augment != "none":
        batch = _relabelled(batch, _symmetry(p.augment, env), rng, soft)

    stats: dict[str, float] = {}
    best = _BestEpoch(policy, select)
    if select is not None and select_start:
        stats = dict(validate(policy, val_batch, val), value_loss_mean_guess=mean_guess)
        best.consider(0, stats)
    for epoch in range(p.epochs):
        rng.shuffle(train)
        for start in range(0, len(train), p.batch_size):
            obs, actions, masks, returns, targets = batch(train[start : start + p.batch_size])
            values, log_probs, _ = forward(policy, obs, masks)
            loss = _policy_loss(log_probs, masks, actions, targets) + p.value_coef * torch.nn.functional.mse_loss(
                values.flatten(), returns)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            schedule.step()
        stats = validate(policy, val_batch, val)
        stats["value_loss_mean_guess"] = mean_guess
        log(f"fit epoch {epoch + 1}/{p.epochs}: teacher's action {stats['accuracy']:.1%} of held-out decisions, "
            f"policy loss {stats['policy_loss']:.3f}, value loss {stats['value_loss']:.3f} (guessing the mean: "
            f"{mean_guess:.3f})")
        best.consider(epoch + 1, stats)
    policy.set_training_mode(False)
    return best.restore(stats, p.epochs, log)


def _batches(d: Demonstrations, soft: bool) -> Any:
    """A function of decision indices that gives their tensors: observations, moves, masks,
    final rewards and (``soft``) the policy targets."""
    import torch

    def batch(idx: np.ndarray) -> tuple[Any, ...]:
        return (
            torch.as_tensor(d.obs[idx].astype(np.float32)),
            torch.as_tensor(d.actions[idx]),
            torch.as_tensor(d.masks[idx]),
            torch.as_tensor(d.returns[idx]),
            torch.as_tensor(d.targets[idx].astype(np.float32)) if soft else None,
        )

    return batch


class _BestEpoch:
    """The weights and statistics of the best-scoring epoch so far (``fit_demonstrations``'s
    ``select``; nothing when it is ``None``)."""

    def __init__(self, policy: Any, select: Callable[[int], float] | None) -> None:
        self.policy, self.select = policy, select
        self.best: tuple[float, int, dict[str, float], Any] | None = None

    def consider(self, epoch: int, stats: dict[str, float]) -> None:
        """Score the policy as it plays after ``epoch``; keep it if it is the best (the later among ties)."""
        if self.select is None:
            return
        self.policy.set_training_mode(False)
        score = float(self.select(epoch))
        self.policy.set_training_mode(True)
        if self.best is None or score >= self.best[0]:
            self.best = (score, epoch, dict(stats), copy.deepcopy(self.policy.state_dict()))

    def restore(self, stats: dict[str, float], epochs: int, log: Any) -> dict[str, float]:
        """Load the best epoch's weights into the policy; its statistics (``stats`` without a selection)."""
        if self.best is None:
            return stats
        score, epoch, kept, state = self.best
        self.policy.load_state_dict(state)
        kept.update(selected_epoch=float(epoch), selected_score=score)
        log(f"fit: kept epoch {epoch} of {epochs} (score {score:.1%})")
        return kept


def _symmetry(name: str, env: EnvConfig) -> Any:
    """The game's relabellings named ``name`` for the players and features of ``env``."""
    from keltis_env.core.game import get_game

    return get_game(env.game).make_symmetry(name, env.num_players, env.features)


def _relabelled(batch: Any, symmetry: Any, rng: np.random.Generator, soft: bool) -> Any:
    """``batch`` with each decision under a relabelling drawn from ``rng`` (data augmentation)."""
    import torch

    def relabelled(idx: np.ndarray) -> tuple[Any, ...]:
        obs, actions, masks, returns, targets = batch(idx)
        which = rng.integers(symmetry.size, size=len(idx))
        obs, masks, actions, targets = symmetry.relabel(which, obs.numpy(), masks.numpy(), actions.numpy(),
                                                         targets.numpy() if soft else None)
        return (torch.as_tensor(obs), torch.as_tensor(actions), torch.as_tensor(masks), returns,
                torch.as_tensor(targets) if soft else None)

    return relabelled


def _policy_loss(log_probs: Any, masks: Any, actions: Any, targets: Any) -> Any:
    """Mean cross-entropy to the soft targets (legal actions only), or to the moves."""
    import torch

    if targets is None:
        return -log_probs.gather(1, actions[:, None]).mean()
    return -torch.where(masks, targets * log_probs, torch.zeros_like(log_probs)).sum(dim=1).mean()


def sharpen(model: Any, temperature: float) -> None:
    """Divide the policy's logits by ``temperature``: the output layer's weights and bias
    (masked actions stay masked, the most probable action stays the same)."""
    import torch

    with torch.no_grad():
        model.policy.action_net.weight.div_(temperature)
        model.policy.action_net.bias.div_(temperature)


def validate(policy: Any, batch: Any, val: np.ndarray) -> dict[str, float]:
    import torch

    hits = policy_loss = value_loss = 0.0
    with torch.no_grad():
        for start in range(0, len(val), 4096):
            obs, actions, masks, returns, targets = batch(val[start : start + 4096])
            values, log_probs, _ = forward(policy, obs, masks)
            values = values.flatten()
            hits += float((log_probs.argmax(dim=1) == actions).sum())
            policy_loss += float(_policy_loss(log_probs, masks, actions, targets)) * len(actions)
            value_loss += float(((values - returns) ** 2).sum())
    n = len(val)
    return {"accuracy": hits / n, "policy_loss": policy_loss / n, "value_loss": value_loss / n, "decisions": n}


__all__ = ["fit_demonstrations", "sharpen", "validate"]
