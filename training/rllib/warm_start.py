"""The RLlib trainer's warm start: a policy file's network copied into the learner ``main``.

A policy file (an SB3 MaskablePPO zip with the project's metadata, :mod:`keltis_env.policy`)
holds an actor MLP (``mlp_extractor.policy_net`` then ``action_net``) and a critic MLP
(``mlp_extractor.value_net`` then ``value_net``). :class:`~keltis_env.integrations.rllib.MaskedActorCritic`
holds the same two MLPs as ``pi`` and ``vf``, layer for layer, so the file's weights are
its weights: the warm-started module gives the file's logits (masked as the adapter masks
them) and its values on every observation. ``warm_start.sharpen`` divides the logits by
itself (the action head's weights and bias are scaled), as the SB3 run's ``pretrain.sharpen``
does.

:func:`training.rllib.config.check_warm_start_file` refuses, before Ray starts, a file the adapter cannot play as it was
trained: another game or number of players, observation features (the adapter observes
without them), another network (``model.hidden``, ``model.activation``). Its play-time
relabellings (``symmetry`` in its metadata) become the module's ``model.symmetry`` unless the
config names its own: the trained module plays averaged over them as a bot, while training
samples from the network alone, as the SB3 learner does.

:func:`apply` writes the weights into the learner's module and pushes them to every env
runner, waiting until each has them: RLlib's own sync is asynchronous and may be dropped, and
runners left with their untrained weights would train from them unseen (ray-project/ray issue
#32751). The run then copies ``main`` into every snapshot slot, so the league starts from
the warm start too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.config import ConfigError
from .config import RLlibConfig, warm_start_policy


def play_symmetry(config: RLlibConfig) -> str:
    """The relabellings the trained module plays averaged over: ``model.symmetry`` where
    given (``none``: none), else the warm start file's (``""``: none)."""
    if config.model.symmetry:
        return "" if config.model.symmetry == "none" else config.model.symmetry
    if not config.warm_start.file:
        return ""
    return str(warm_start_policy(config).info.symmetry)


def module_state(config: RLlibConfig) -> dict[str, np.ndarray]:
    """The warm start's weights under the names of the module's parameters (``pi.0.weight``
    ...; torch's ``Linear`` weight is ``(out, in)``), the action head divided by
    ``warm_start.sharpen``. Without a critic in the file, only ``pi.*``."""
    policy = warm_start_policy(config)
    state: dict[str, np.ndarray] = {}
    heads = [("pi", policy.layers)] + ([("vf", policy.value_layers)] if policy.value_layers is not None else [])
    for name, layers in heads:
        for i, (w, b) in enumerate(layers):
            scale = 1.0 / config.warm_start.sharpen if name == "pi" and i == len(layers) - 1 else 1.0
            # Sequential indices: Linear, activation, Linear, ...: the i-th Linear is module 2 * i
            state[f"{name}.{2 * i}.weight"] = np.ascontiguousarray(w.T * scale, dtype=np.float32)
            state[f"{name}.{2 * i}.bias"] = np.asarray(b * scale, dtype=np.float32)
    return state


def apply(algo: Any, config: RLlibConfig) -> None:
    """Write the warm start into the learner's ``main`` module and sync every env runner."""
    import torch

    from keltis_env.integrations.rllib import MAIN

    weights = dict(algo.learner_group.get_weights(module_ids=[MAIN])[MAIN])
    for key, value in module_state(config).items():
        if key not in weights or tuple(weights[key].shape) != value.shape:
            have = tuple(weights[key].shape) if key in weights else "none"
            raise ConfigError(f"warm_start.file: its layer {key} is {value.shape}; the module's is {have}")
        weights[key] = torch.as_tensor(value) if isinstance(weights[key], torch.Tensor) else value
    algo.set_state({"learner_group": {"learner": {"rl_module": {MAIN: weights}}}})
    from .sampling import push_weights

    push_weights(algo, MAIN, weights)  # waited for: RLlib's own sync may not reach every runner


__all__ = ["apply", "module_state", "play_symmetry"]
