"""Reinforcement learning that keeps what imitation taught: a KL anchor to the distilled policy.

After a warm start (:mod:`training.pretrain`: behaviour cloning and DAgger from a teacher
bot, on the teacher's action values where it gives them), self-play PPO could forget the
teacher's play before it finds better play of its own. With ``pretrain.anchor = c > 0``
the PPO loss gets a term

    w(t) * KL(anchor || policy)   averaged over the minibatch's positions (legal actions only),

the anchor being the policy as it was when imitation ended, frozen. Its weight decays
linearly from ``c`` at the start of reinforcement learning to 0 after
``pretrain.anchor_steps`` learner steps, so that the policy is first held near its teacher,
then free to improve past it. This is the regulariser of AlphaStar's supervised-policy KL
and of "kickstarting" (Schmitt et al., 2018), here in sb3-contrib's MaskablePPO.

:class:`AnchoredMaskablePPO` is MaskablePPO with that term (its ``train`` is sb3-contrib
2.9's, plus the term; with no anchor or a weight of 0 it computes exactly the same
update). The anchor is saved with the run as ``checkpoints/anchor.zip`` (a policy file, as
``ppo:`` bots read) and reloaded on resume; TensorBoard gets ``train/anchor_kl`` and
``train/anchor_weight``.

The league (``pool.weights``) is the opponent pool's: snapshots of the learner (``self``)
and any agent spec, e.g. ``planner``, ``ismcts:iterations=8`` and ``heuristic``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.utils import explained_variance
from torch.nn import functional

from .pipeline import PipelinedMaskablePPO


def anchor_weight(coef: float, steps: int, timesteps: int) -> float:
    """The anchor's weight after ``timesteps`` learner steps of reinforcement learning:
    ``coef`` decaying linearly to 0 at ``steps``."""
    if coef <= 0 or steps <= 0:
        return 0.0
    return coef * max(0.0, 1.0 - timesteps / steps)


def forward(policy: Any, obs: th.Tensor, masks: Any) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
    """One pass of a MaskablePPO MlpPolicy: values, the masked log-probabilities of every
    action (``(N, actions)``, about -1e8 for illegal ones) and the masked distribution."""
    features = policy.extract_features(obs)
    if policy.share_features_extractor:
        latent_pi, latent_vf = policy.mlp_extractor(features)
    else:
        pi_features, vf_features = features
        latent_pi = policy.mlp_extractor.forward_actor(pi_features)
        latent_vf = policy.mlp_extractor.forward_critic(vf_features)
    distribution = policy._get_action_dist_from_latent(latent_pi)
    distribution.apply_masking(masks)
    return policy.value_net(latent_vf), distribution.distribution.logits, distribution


def kl_to(anchor_log_probs: th.Tensor, log_probs: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Per position, KL(anchor || policy) over the legal actions (``masks``, bool)."""
    p = anchor_log_probs.exp()
    terms = th.where(masks, p * (anchor_log_probs - log_probs), th.zeros_like(log_probs))
    return terms.sum(dim=1)


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
        """sb3-contrib 2.9's ``MaskablePPO.train`` with the anchor term added to the loss."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)  # type: ignore[operator]
        if self.clip_range_vf is not None:
            clip_range_vf = self.clip_range_vf(self._current_progress_remaining)  # type: ignore[operator]
        weight = self.current_anchor_weight()

        entropy_losses, pg_losses, value_losses, clip_fractions, anchor_kls = [], [], [], [], []
        continue_training = True
        for _ in range(self.n_epochs):
            approx_kl_divs = []
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = rollout_data.actions.long().flatten()
                masks = rollout_data.action_masks
                values, log_probs, distribution = forward(self.policy, rollout_data.observations, masks)
                log_prob = distribution.log_prob(actions)
                entropy = distribution.entropy()
                values = values.flatten()
                advantages = rollout_data.advantages
                if self.normalize_advantage:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                ratio = th.exp(log_prob - rollout_data.old_log_prob)
                policy_loss_1 = advantages * ratio
                policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
                policy_loss = -th.min(policy_loss_1, policy_loss_2).mean()
                pg_losses.append(policy_loss.item())
                clip_fractions.append(th.mean((th.abs(ratio - 1) > clip_range).float()).item())
                if self.clip_range_vf is None:
                    values_pred = values
                else:
                    values_pred = rollout_data.old_values + th.clamp(
                        values - rollout_data.old_values, -clip_range_vf, clip_range_vf
                    )
                value_loss = functional.mse_loss(rollout_data.returns, values_pred)
                value_losses.append(value_loss.item())
                entropy_loss = -th.mean(-log_prob) if entropy is None else -th.mean(entropy)
                entropy_losses.append(entropy_loss.item())
                loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
                if weight > 0:
                    with th.no_grad():
                        _, anchor_log_probs, _ = forward(self.anchor_policy, rollout_data.observations, masks)
                    anchor_kl = kl_to(anchor_log_probs, log_probs, masks.bool()).mean()
                    anchor_kls.append(anchor_kl.item())
                    loss = loss + weight * anchor_kl
                with th.no_grad():
                    log_ratio = log_prob - rollout_data.old_log_prob
                    approx_kl_div = th.mean((th.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
                    approx_kl_divs.append(approx_kl_div)
                if self.target_kl is not None and approx_kl_div > 1.5 * self.target_kl:
                    continue_training = False
                    break
                self.policy.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
            self._n_updates += 1
            if not continue_training:
                break
        explained_var = explained_variance(self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten())
        self.logger.record("train/entropy_loss", np.mean(entropy_losses))
        self.logger.record("train/policy_gradient_loss", np.mean(pg_losses))
        self.logger.record("train/value_loss", np.mean(value_losses))
        self.logger.record("train/approx_kl", np.mean(approx_kl_divs))
        self.logger.record("train/clip_fraction", np.mean(clip_fractions))
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/explained_variance", explained_var)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        self.logger.record("train/anchor_weight", weight)
        if anchor_kls:
            self.logger.record("train/anchor_kl", np.mean(anchor_kls))
        if self.clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)


def load_anchor(path: Path) -> Any:
    """The policy network saved at ``path`` (a policy zip), as a frozen torch module."""
    return MaskablePPO.load(path, device="cpu", print_system_info=False).policy


__all__ = ["AnchoredMaskablePPO", "anchor_weight", "forward", "kl_to", "load_anchor"]
