"""RLlib's PPO learner with one finiteness check of the gradients an update: :class:`PPOLearner`.

RLlib's torch learner checks every parameter's gradient for ``nan``/``inf`` twice an update
(``torch.isfinite(grad).all()``, once when the gradients are set and once before the
optimizer steps): on the recipe's network that is 24 small reductions, each a wait for the
result, for every minibatch, and about a tenth of the learner steps per second on two cores
(``python -m training.bench.rllib``). This learner asks once: the total norm of the
gradients (one fused reduction) is finite exactly when every gradient is. When it is, the
update is RLlib's (set the gradients, step every optimizer); when it is not, or the run uses
what the fast path leaves out (gradient scalers, learning-rate schedulers,
``torch_skip_nan_gradients``), RLlib's own ``apply_gradients`` does the update, with its
warnings and its treatment of the bad gradients.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner


class PPOLearner(PPOTorchLearner):
    """:class:`PPOTorchLearner` whose ``apply_gradients`` checks the gradients once (see the module doc)."""

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


__all__ = ["PPOLearner"]
