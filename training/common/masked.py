"""The masked policy math that imitation and PPO share: one pass of a MaskablePPO
``MlpPolicy`` giving values and the masked log-probabilities of every action, and the
entropy over the legal actions.

The log-probabilities are sb3-contrib's ``MaskableCategorical`` ones (masked logits,
normalised), computed by one ``log_softmax`` without building distribution objects.
"""

from __future__ import annotations

from typing import Any

import torch as th

#: the logit of an illegal action, as sb3-contrib's masking gives it
MASKED_LOGIT = -1e8
#: log-probabilities are raised to at least this before ``exp``: its exponential, 1.6e-38,
#: is float32's least normal number or about; ``exp`` of numbers below that (the illegal
#: actions' -1e8, or -100) takes the slow path of the vectorised exponential, 15-30 times
#: slower on 1,024 x 187 log-probabilities
LOWEST_LOG_PROB = -87.0


def probabilities(log_probs: th.Tensor) -> th.Tensor:
    """``log_probs.exp()`` computed quickly, as 1.6e-38 where it is less
    (:data:`LOWEST_LOG_PROB`: the illegal actions, which callers mask)."""
    return log_probs.clamp(min=LOWEST_LOG_PROB).exp()


def forward(policy: Any, obs: th.Tensor, masks: Any) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
    """One pass of a MaskablePPO MlpPolicy: values, the masked log-probabilities of every
    action (``(N, actions)``; illegal ones about -1e8) and the masks as a bool tensor."""
    features = policy.extract_features(obs)
    if policy.share_features_extractor:
        latent_pi, latent_vf = policy.mlp_extractor(features)
    else:
        pi_features, vf_features = features
        latent_pi = policy.mlp_extractor.forward_actor(pi_features)
        latent_vf = policy.mlp_extractor.forward_critic(vf_features)
    legal = th.as_tensor(masks).bool()
    log_probs = th.log_softmax(policy.action_net(latent_pi).masked_fill(~legal, MASKED_LOGIT), dim=-1)
    return policy.value_net(latent_vf), log_probs, legal


def masked_entropy(log_probs: th.Tensor, legal: th.Tensor) -> th.Tensor:
    """Per position, the entropy over the legal actions (``MaskableCategorical.entropy``)."""
    return -th.where(legal, probabilities(log_probs) * log_probs, th.zeros_like(log_probs)).sum(dim=-1)


def kl_to(target_log_probs: th.Tensor, log_probs: th.Tensor, masks: th.Tensor) -> th.Tensor:
    """Per position, KL(target || policy) over the legal actions (``masks``, bool)."""
    p = probabilities(target_log_probs)
    terms = th.where(masks, p * (target_log_probs - log_probs), th.zeros_like(log_probs))
    return terms.sum(dim=1)


__all__ = ["LOWEST_LOG_PROB", "MASKED_LOGIT", "forward", "kl_to", "masked_entropy", "probabilities"]
