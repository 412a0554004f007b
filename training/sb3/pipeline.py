"""MaskablePPO whose rollouts overlap the learner's forward passes with the games' steps.

sb3-contrib's ``MaskablePPO.collect_rollouts`` alternates: this process chooses the
learner's actions in every game (one forward pass), then waits while the environments
step. On the batched collector (:class:`training.sb3.collector.BatchedSelfPlayVecEnv`) the
workers are idle during the first and this process during the second.
:class:`PipelinedMaskablePPO` splits the games into the collector's ``parts`` (a slice of
every worker's games each) and keeps them in flight in turn: while the workers step one
part, this process chooses the actions of the next part that came back, so that the
forward passes, the rollout buffer and the callbacks run while the games move.

What reaches the rollout buffer is what ``collect_rollouts`` records, step by step: the
same observations, actions, values, log-probabilities, action masks, rewards (truncated
games bootstrapped with the value of their final observation) and episode starts, with
the last step's values for the returns; callbacks see ``dones``, ``infos``, ``rewards``,
``new_obs`` and ``actions`` of each whole step, and ``on_step`` is called once per step.
Only the order in which actions are sampled differs (one forward pass per part), so runs
are reproducible but not draw for draw those of the unpipelined loop. When a callback
stops training, the parts already sent are waited for and their games' last observations
kept for the next ``learn``; that step's transitions are not recorded.

On any other environment (``SubprocVecEnv``, a wrapped collector, a collector in this
process) its rollouts are ``MaskablePPO``'s.

Its update (:meth:`PipelinedMaskablePPO.train`) is sb3-contrib 2.9's, with the masked
distribution's log-probabilities and entropy computed by
:func:`training.common.masked.forward` (one
``log_softmax``) instead of three ``MaskableCategorical`` objects per minibatch, a tenth of
the update's time; ``tests/test_pipeline.py`` checks that it moves the weights as
sb3-contrib's does. :meth:`PipelinedMaskablePPO._extra_loss` lets a subclass add a term
(:class:`training.sb3.distill.AnchoredMaskablePPO`'s KL anchor).

A regulariser toward a slowly updated copy of the policy (``ppo.slow_kl``,
:meth:`PipelinedMaskablePPO.set_slow`): the loss of every minibatch gets
``slow_kl * KL(slow || policy)`` over the legal actions, and after each update the slow
copy's weights move ``slow_tau`` of the way to the policy's (an exponential average). The
policy may move far over many updates but not jump in one, the idea of magnet mirror
descent and R-NaD's regularisation toward a slowly changing reference policy in games of
imperfect information. TensorBoard gets ``train/slow_kl``; a run saves the copy beside its
checkpoint (``checkpoints/slow.pt``, :func:`training.sb3.checkpoints.save_slow`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.utils import explained_variance, obs_as_tensor
from torch.nn import functional

from ..common.masked import forward, kl_to, masked_entropy, probabilities
from .collector import BatchedSelfPlayVecEnv


class PipelinedMaskablePPO(MaskablePPO):
    """``MaskablePPO`` with pipelined rollouts on the batched collector (see the module doc)."""

    slow_coef: float = 0.0
    slow_tau: float = 0.01
    slow_policy: Any = None

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "slow_policy"]

    def set_slow(self, coef: float, tau: float) -> None:
        """Regularise toward a slow copy of the policy with weight ``coef`` (0: none; the
        copy is dropped), moved ``tau`` of the way to the policy after each update. A new
        copy starts as the policy is now."""
        self.slow_coef, self.slow_tau = float(coef), float(tau)
        if coef <= 0:
            self.slow_policy = None
        elif self.slow_policy is None:
            slow = type(self.policy)(**self.policy._get_constructor_parameters())
            slow.load_state_dict(self.policy.state_dict())
            slow.set_training_mode(False)
            for p in slow.parameters():
                p.requires_grad_(False)
            self.slow_policy = slow

    def _slow_term(self, obs: th.Tensor, legal: th.Tensor, log_probs: th.Tensor, kls: list[float]) -> th.Tensor:
        """A minibatch's ``slow_kl * KL(slow || policy)`` (its KL appended to ``kls``)."""
        with th.no_grad():
            _, slow_log_probs, _ = forward(self.slow_policy, obs, legal)
        kl = kl_to(slow_log_probs, log_probs, legal).mean()
        kls.append(kl.item())
        return self.slow_coef * kl

    def _follow(self) -> None:
        """The slow copy's step toward the policy (after an update)."""
        now = self.policy.state_dict()
        with th.no_grad():
            for key, slow in self.slow_policy.state_dict().items():
                if slow.dtype.is_floating_point:
                    slow.mul_(1.0 - self.slow_tau).add_(now[key], alpha=self.slow_tau)

    def collect_rollouts(  # type: ignore[override]
        self,
        env: Any,
        callback: BaseCallback,
        rollout_buffer: Any,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        if not (type(env) is BatchedSelfPlayVecEnv and env.parts and use_masking
                and isinstance(self.action_space, spaces.Discrete) and isinstance(self._last_obs, np.ndarray)):
            return bool(super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps, use_masking))
        return self._pipelined_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def _pipelined_rollouts(self, env: BatchedSelfPlayVecEnv, callback: BaseCallback, rollout_buffer: Any,
                            n_rollout_steps: int) -> bool:
        assert self._last_obs is not None and self._last_episode_starts is not None
        self.policy.set_training_mode(False)
        rollout_buffer.reset()
        callback.on_rollout_start()
        parts = env.parts
        n = env.num_envs
        obs = np.array(self._last_obs, dtype=np.float32)
        masks = np.stack(env.env_method("action_masks")).astype(bool)
        episode_starts = np.asarray(self._last_episode_starts)
        # step t's choices (filled part by part), then step t+1's as parts come back
        actions = np.zeros(n, dtype=np.int64)
        values = th.zeros(n)
        log_probs = th.zeros(n)
        next_actions = np.zeros(n, dtype=np.int64)
        next_values = th.zeros(n)
        next_log_probs = th.zeros(n)

        def choose(idx: np.ndarray, o: np.ndarray, m: np.ndarray, a: np.ndarray, v: th.Tensor, lp: th.Tensor,
                   part: int) -> None:
            act, val, logp = self.sample_actions(o, m)
            a[idx] = act.numpy()
            v[idx] = val.flatten()
            lp[idx] = logp
            env.step_part_async(part, a[idx])

        for p, idx in enumerate(parts):
            choose(idx, obs[idx], masks[idx], actions, values, log_probs, p)
        n_steps = 0
        while True:
            last = n_steps + 1 >= n_rollout_steps
            new_obs = np.empty_like(obs)
            new_masks = np.empty_like(masks)
            rewards = np.empty(n, dtype=np.float32)
            dones = np.empty(n, dtype=bool)
            infos: list[dict[str, Any]] = [{}] * n
            for p, idx in enumerate(parts):
                o, m, r, d, part_infos = env.step_part_wait(p)
                new_obs[idx], new_masks[idx], rewards[idx], dones[idx] = o, m, r, d
                for j, info in zip(idx.tolist(), part_infos, strict=True):
                    infos[j] = info
                if not last:  # the next step of this part moves while the other parts come back
                    choose(idx, o, m, next_actions, next_values, next_log_probs, p)
            self.num_timesteps += n
            callback.update_locals({"self": self, "env": env, "callback": callback, "rollout_buffer": rollout_buffer,
                                    "n_rollout_steps": n_rollout_steps, "n_steps": n_steps, "actions": actions,
                                    "values": values, "log_probs": log_probs, "action_masks": masks,
                                    "new_obs": new_obs, "rewards": rewards, "dones": dones, "infos": infos})
            if not callback.on_step():
                if not last:
                    self._drain(env, new_obs, dones)
                return False
            self._update_info_buffer(infos, dones)
            n_steps += 1
            for i in np.flatnonzero(dones).tolist():  # truncated games: bootstrap with the value (SB3 issue #633)
                info = infos[i]
                if info.get("terminal_observation") is not None and info.get("TimeLimit.truncated", False):
                    terminal_obs = self.policy.obs_to_tensor(info["terminal_observation"])[0]
                    with th.no_grad():
                        rewards[i] += self.gamma * float(self.policy.predict_values(terminal_obs)[0])
            rollout_buffer.add(obs, actions.reshape(-1, 1), rewards, episode_starts, values, log_probs,
                               action_masks=masks)
            obs, masks, episode_starts = new_obs, new_masks, dones
            self._last_obs = obs
            self._last_episode_starts = dones
            if last:
                break
            actions, next_actions = next_actions, actions
            values, next_values = next_values, values
            log_probs, next_log_probs = next_log_probs, log_probs
        with th.no_grad():
            last_values = self.policy.predict_values(obs_as_tensor(obs, self.device))
        rollout_buffer.compute_returns_and_advantage(last_values=last_values, dones=dones)
        callback.update_locals({"rollout_buffer": rollout_buffer, "values": last_values, "dones": dones})
        callback.on_rollout_end()
        return True

    def train(self) -> None:
        """sb3-contrib 2.9's ``MaskablePPO.train`` with the masked distribution's
        log-probabilities and entropy computed directly (:func:`forward`: a tenth of an
        update went into building distribution objects), and :meth:`_extra_loss` added to
        the loss of every minibatch."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = self.clip_range(self._current_progress_remaining)  # type: ignore[operator]
        if self.clip_range_vf is not None:
            clip_range_vf = self.clip_range_vf(self._current_progress_remaining)  # type: ignore[operator]

        entropy_losses, pg_losses, value_losses, clip_fractions, slow_kls = [], [], [], [], []
        continue_training = True
        for _ in range(self.n_epochs):
            approx_kl_divs = []
            for rollout_data in self.rollout_buffer.get(self.batch_size):
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = rollout_data.actions.long().flatten()
                masks = rollout_data.action_masks
                values, log_probs, legal = forward(self.policy, rollout_data.observations, masks)
                log_prob = log_probs.gather(1, actions[:, None]).squeeze(1)
                entropy = masked_entropy(log_probs, legal)
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
                entropy_loss = -th.mean(entropy)
                entropy_losses.append(entropy_loss.item())
                loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
                extra = self._extra_loss(rollout_data.observations, legal, log_probs)
                if extra is not None:
                    loss = loss + extra
                if self.slow_policy is not None:
                    loss = loss + self._slow_term(rollout_data.observations, legal, log_probs, slow_kls)
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
        if self.slow_policy is not None:
            self._follow()
            self.logger.record("train/slow_kl", np.mean(slow_kls))
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
        if self.clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)


    def _extra_loss(self, obs: th.Tensor, legal: th.Tensor, log_probs: th.Tensor) -> th.Tensor | None:
        """A term added to the PPO loss of a minibatch (``obs``, its legal actions and the
        policy's masked log-probabilities of every action); none here."""
        return None

    def sample_actions(self, obs: np.ndarray, masks: np.ndarray) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """The policy's forward pass for rollouts: actions sampled from the masked
        categorical distribution, values and log-probabilities, as ``policy(obs,
        action_masks=masks)`` computes them, without building distribution objects (a
        third of the forward pass's time for a few dozen rows): the masked logits are
        normalised once and each action drawn by inverting its cumulative distribution
        with one uniform number."""
        with th.no_grad():
            values, log_p, legal = forward(self.policy, obs_as_tensor(obs, self.device), masks)
            cdf = th.where(legal, probabilities(log_p), 0.0).cumsum(dim=-1)
            u = th.rand(len(obs), 1, dtype=cdf.dtype) * cdf[:, -1:]
            actions = (cdf <= u).sum(dim=-1).clamp_(max=log_p.shape[-1] - 1)
            chosen_legal = legal.gather(1, actions[:, None]).squeeze(1)
            if not bool(chosen_legal.all()):  # u at the very top of the cdf, in float32: the most likely action
                actions = th.where(chosen_legal, actions, log_p.argmax(dim=-1))
            log_probs = log_p.gather(1, actions[:, None]).squeeze(1)
        return actions, values, log_probs

    def _drain(self, env: BatchedSelfPlayVecEnv, obs: np.ndarray, dones: np.ndarray) -> None:
        """Training stops with every part sent once more: wait for them and keep their
        games' observations (that step is not recorded)."""
        obs = obs.copy()
        dones = dones.copy()
        for p, idx in enumerate(env.parts):
            o, _, _, d, _ = env.step_part_wait(p)
            obs[idx], dones[idx] = o, d
        self._last_obs = obs
        self._last_episode_starts = dones


__all__ = ["PipelinedMaskablePPO"]
