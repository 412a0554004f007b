"""RLlib's PPO learner with one finiteness check of the gradients an update: :class:`PPOLearner`.

RLlib's torch learner checks every parameter's gradient for ``nan``/``inf`` twice an update
(``torch.isfinite(grad).all()``, once when the gradients are set and once before the
optimizer steps): on the run's network that is 24 small reductions, each a wait for the
result, for every minibatch, and about a tenth of the learner steps per second on two cores
(``python -m training.bench.rllib``). This learner asks once: the total norm of the
gradients (one fused reduction) is finite exactly when every gradient is. When it is, the
update is RLlib's (set the gradients, step every optimizer); when it is not, or the run uses
what the fast path leaves out (gradient scalers, learning-rate schedulers,
``torch_skip_nan_gradients``), RLlib's own ``apply_gradients`` does the update, with its
warnings and its treatment of the bad gradients.

Its update makes ``ceil(epochs x steps / minibatch)`` minibatches of a batch of ``steps``
learner steps, as SB3's does (RLlib's own iterator also counts the step its learner
connector adds to every episode chunk, and makes one minibatch more).

It also carries the SB3 trainer's KL anchor to the warm start (``pretrain.anchor``,
:mod:`training.sb3.distill`): with an anchor set (:meth:`PPOLearner.set_anchor`: the warm
start's policy network, sharpened as the learner starts, frozen) and a weight ``w > 0``, the
loss of ``main`` gains ``w * KL(anchor || policy)`` over the legal actions, averaged over the
minibatch's positions as RLlib averages its other terms (its loss mask honoured). The run
sets the weight before every iteration, decaying linearly from ``anchor.coeff`` to 0 over
``anchor.steps`` learner steps; with no anchor or a weight of 0 the loss is RLlib's. The
learner logs ``anchor_kl`` and ``anchor_weight`` under ``main``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.utils.minibatch_utils import MiniBatchCyclicIterator

#: the learner's module id (``keltis_env.integrations.rllib.MAIN``)
MAIN = "main"


def anchor_weight(coeff: float, steps: int, learner_steps: int) -> float:
    """The anchor's weight after ``learner_steps`` decisions of ``main``: ``coeff`` decaying
    linearly to 0 at ``steps`` (the SB3 trainer's :func:`training.sb3.distill.anchor_weight`)."""
    if coeff <= 0 or steps <= 0:
        return 0.0
    return coeff * max(0.0, 1.0 - learner_steps / steps)


class PPOLearner(PPOTorchLearner):
    """:class:`PPOTorchLearner` whose ``apply_gradients`` checks the gradients once, with the
    KL anchor to the warm start (see the module doc)."""

    anchor: torch.nn.Module | None = None
    anchor_weight: float = 0.0

    def _create_iterator_if_necessary(self, *, training_data: Any, num_total_minibatches: int = 0, num_epochs: int = 1,
                                      minibatch_size: int | None = None, **kwargs: Any) -> Any:
        """RLlib's minibatch iterator, stopped after ``ceil(epochs x steps / minibatch)``
        minibatches, ``steps`` being the batch's learner steps: RLlib's learner connector adds
        one artificial step to every episode chunk (for the value bootstrap, out of the loss),
        and its iterator would otherwise run until those rows too were seen ``epochs`` times,
        one minibatch more than SB3's update of the same batch."""
        iterator = super()._create_iterator_if_necessary(
            training_data=training_data, num_total_minibatches=num_total_minibatches, num_epochs=num_epochs,
            minibatch_size=minibatch_size, **kwargs)
        if num_total_minibatches == 0 and minibatch_size and isinstance(iterator, MiniBatchCyclicIterator):
            steps = max(int(b[Columns.LOSS_MASK].sum()) if Columns.LOSS_MASK in b else len(b)
                        for b in iterator._batch.policy_batches.values())
            iterator._num_total_minibatches = max(1, math.ceil(num_epochs * steps / minibatch_size))
        return iterator

    def set_anchor(self, state: Mapping[str, np.ndarray] | None = None, weight: float = 0.0) -> None:
        """Anchor ``main`` to the policy network ``state`` (``pi.*`` weights under the module's
        names; ``None``: keep the anchor set before) with weight ``weight`` from now on."""
        if state is not None:
            anchor = copy.deepcopy(self.module[MAIN].unwrapped().pi)
            anchor.load_state_dict({k[len("pi."):]: torch.as_tensor(np.asarray(v)) for k, v in state.items()
                                    if k.startswith("pi.")})
            for parameter in anchor.parameters():
                parameter.requires_grad_(False)
            self.anchor = anchor.eval()
        self.anchor_weight = float(weight)

    def compute_loss_for_module(self, *, module_id: Any, config: Any, batch: dict[str, Any],
                                fwd_out: dict[str, Any]) -> Any:
        loss = super().compute_loss_for_module(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
        if module_id != MAIN or self.anchor is None:
            return loss
        if self.anchor_weight <= 0:  # decayed: the loss is RLlib's
            self.metrics.log_value((module_id, "anchor_weight"), 0.0, window=1)
            return loss
        obs = batch[Columns.OBS]
        legal = obs["action_mask"] > 0.5
        log_probs = torch.log_softmax(fwd_out[Columns.ACTION_DIST_INPUTS], dim=-1)
        with torch.no_grad():
            anchor_logits = self.anchor(obs["observations"]).masked_fill(~legal, -1e9)
            anchor_log_probs = torch.log_softmax(anchor_logits, dim=-1)
        terms = torch.where(legal, anchor_log_probs.exp() * (anchor_log_probs - log_probs), torch.zeros_like(log_probs))
        kl = terms.sum(dim=-1)
        if Columns.LOSS_MASK in batch:
            mask = batch[Columns.LOSS_MASK]
            mean_kl = torch.sum(kl[mask]) / torch.sum(mask)
        else:
            mean_kl = kl.mean()
        self.metrics.log_dict({"anchor_kl": mean_kl.detach(), "anchor_weight": self.anchor_weight}, key=module_id,
                              window=1)
        return loss + self.anchor_weight * mean_kl

    def apply_gradients(self, gradients_dict: dict[Any, torch.Tensor]) -> None:
        grads = [g for g in gradients_dict.values() if g is not None]
        plain = (not self.config.torch_skip_nan_gradients and self._grad_scalers is None
                 and self._lr_scheduler_classes is None and grads)
        if not plain or not bool(torch.isfinite(torch.nn.utils.get_total_norm(grads))):
            super().apply_gradients(gradients_dict)
            return
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id, names in self._module_optimizers.items():
            for name in names:
                self.get_optimizer(module_id, name).step()


__all__ = ["MAIN", "PPOLearner", "anchor_weight"]
