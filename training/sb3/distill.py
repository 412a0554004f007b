"""Reinforcement learning that keeps what imitation taught: a KL anchor to the distilled policy.

After a warm start (:mod:`training.imitate`: behaviour cloning and DAgger from a teacher
bot, on the teacher's action values where it gives them), self-play PPO could forget the
teacher's play before it finds better play of its own. With ``pretrain.anchor = c > 0``
the PPO loss gets a term

    w(t) * KL(anchor || policy)   averaged over the minibatch's positions (legal actions only),

the anchor being the policy as it was when imitation ended, frozen. Its weight decays
linearly from ``c`` at the start of reinforcement learning to 0 after
``pretrain.anchor_steps`` learner steps, so that the policy is first held near its teacher,
then free to improve past it. This is the regulariser of AlphaStar's supervised-policy KL
and of "kickstarting" (Schmitt et al., 2018), here in sb3-contrib's MaskablePPO.

:class:`AnchoredMaskablePPO` is MaskablePPO with that term (its update is
:class:`training.sb3.pipeline.PipelinedMaskablePPO`'s, sb3-contrib 2.9's update, plus the
term; with no anchor or a weight of 0 it computes exactly that update). The anchor is
saved with the run as ``checkpoints/anchor.zip`` (a policy file, as ``ppo:`` bots read)
and reloaded on resume; TensorBoard gets ``train/anchor_kl`` and ``train/anchor_weight``.

The league (``pool.weights``) is the opponent pool's: snapshots of the learner (``self``)
and any agent spec, e.g. ``planner``, ``ismcts:iterations=8`` and ``heuristic``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO

from ..common.masked import forward, kl_to
from .pipeline import PipelinedMaskablePPO


def anchor_weight(coef: float, steps: int, timesteps: int) -> float:
    """The anchor's weight after ``timesteps`` learner steps of reinforcement learning:
    ``coef`` decaying linearly to 0 at ``steps``."""
    if coef <= 0 or steps <= 0:
        return 0.0
    return coef * max(0.0, 1.0 - timesteps / steps)


class AnchoredMaskablePPO(PipelinedMaskablePPO):
    """MaskablePPO whose loss also pulls the policy towards a frozen anchor policy with a
    decaying weight (see the module doc). ``anchor_coef``, ``anchor_steps`` and
    ``anchor_start`` (the learner step where the decay starts) are saved with the model; the
    anchor network itself is not (:func:`load_anchor` reloads it)."""

    anchor_coef: float = 0.0
    anchor_steps: int = 0
    anchor_start: int = 0
    anchor_policy: Any = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "anchor_policy"]

    def set_anchor(self, policy: Any, coef: float, steps: int, start: int) -> None:
        """Anchor to ``policy`` (frozen here) with weight ``coef`` decaying over ``steps``
        learner steps from ``start``."""
        if policy is not None:
            policy.set_training_mode(False)
            for p in policy.parameters():
                p.requires_grad_(False)
        self.anchor_policy = policy
        self.anchor_coef, self.anchor_steps, self.anchor_start = float(coef), int(steps), int(start)

    def current_anchor_weight(self) -> float:
        if self.anchor_policy is None:
            return 0.0
        return anchor_weight(self.anchor_coef, self.anchor_steps, self.num_timesteps - self.anchor_start)

    def train(self) -> None:
        """PPO's update (:meth:`PipelinedMaskablePPO.train`) with the anchor's KL term in the
        loss of every minibatch, weighted by :meth:`current_anchor_weight`."""
        self._weight = self.current_anchor_weight()
        self._anchor_kls: list[float] = []
        super().train()
        self.logger.record("train/anchor_weight", self._weight)
        if self._anchor_kls:
            self.logger.record("train/anchor_kl", np.mean(self._anchor_kls))

    def _extra_loss(self, obs: th.Tensor, legal: th.Tensor, log_probs: th.Tensor) -> th.Tensor | None:
        if self._weight <= 0:
            return None
        with th.no_grad():
            _, anchor_log_probs, _ = forward(self.anchor_policy, obs, legal)
        anchor_kl = kl_to(anchor_log_probs, log_probs, legal).mean()
        self._anchor_kls.append(anchor_kl.item())
        return self._weight * anchor_kl


def load_anchor(path: Path) -> Any:
    """The policy network saved at ``path`` (a policy zip), as a frozen torch module."""
    return MaskablePPO.load(path, device="cpu", print_system_info=False).policy


__all__ = ["AnchoredMaskablePPO", "anchor_weight", "kl_to", "load_anchor"]
