"""The RLlib recipe's warm start: a policy file's network copied into the learner ``main``.

A policy file (an SB3 MaskablePPO zip with the project's metadata, :mod:`keltis_env.policy`)
holds an actor MLP (``mlp_extractor.policy_net`` then ``action_net``) and a critic MLP
(``mlp_extractor.value_net`` then ``value_net``). :class:`~keltis_env.integrations.rllib.MaskedActorCritic`
holds the same two MLPs as ``pi`` and ``vf``, layer for layer, so the file's weights are
its weights: the warm-started module gives the file's logits (masked as the adapter masks
them) and its values on every observation. ``warm_start.sharpen`` divides the logits by
itself (the action head's weights and bias are scaled), as the SB3 run's ``pretrain.sharpen``
does.

:func:`check_file` refuses, before Ray starts, a file the adapter cannot play as it was
trained: another game or number of players, observation features (the adapter observes
without them), another network (``model.hidden``, ``model.activation``). Its play-time
relabellings (``symmetry`` in its metadata) become the module's ``model.symmetry`` unless the
config names its own: the trained module plays averaged over them as a bot, while training
samples from the network alone, as the SB3 learner does.

:func:`apply` writes the weights into the learner's module and pushes them to every env
runner, waiting until each has them: RLlib's own sync is asynchronous and may be dropped, and
runners left with their untrained weights would train from them unseen (ray-project/ray issue
#32751). The recipe then copies ``main`` into every snapshot slot, so the league starts from
the warm start too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.config import ConfigError
from .config import RLlibConfig


def _load(config: RLlibConfig) -> Any:
    """The warm start's file as a :class:`~keltis_env.policy.NumpyPolicy`; a file that is
    missing or unusable is a :class:`ConfigError` naming ``warm_start.file``."""
    from keltis_env.policy import PolicyLoadError, load_policy

    from ..common.config import find_file

    path = find_file(config.warm_start.file)
    if not path.is_file():
        raise ConfigError(f"warm_start.file: no policy file at {config.warm_start.file!r}")
    try:
        policy = load_policy(path)
        policy.info.check(config.env.game, config.env.num_players)
    except PolicyLoadError as exc:
        raise ConfigError(f"warm_start.file: {exc}") from None
    return policy


def check_file(config: RLlibConfig) -> None:
    """The warm start's file is one the RLlib module can take (see the module doc)."""
    policy = _load(config)
    info = policy.info
    if info.features:
        raise ConfigError(
            f"warm_start.file: {info.describe()} observing the features {', '.join(info.features)}; the RLlib "
            "environment adapter observes the game's encoder alone: warm-start from a file trained without "
            "env.features")
    activation = {"Tanh": "tanh", "ReLU": "relu"}.get(info.activation, info.activation)
    hidden = [int(w.shape[1]) for w, _ in policy.layers[:-1]]
    if hidden != list(config.model.hidden) or activation != config.model.activation:
        raise ConfigError(
            f"warm_start.file: {info.describe()} with hidden layers {hidden} ({activation}); model.hidden is "
            f"{list(config.model.hidden)} ({config.model.activation}): give the file's network")
    if policy.value_layers is not None:
        value_hidden = [int(w.shape[1]) for w, _ in policy.value_layers[:-1]]
        if value_hidden != hidden:
            raise ConfigError(f"warm_start.file: {info.describe()} whose value network's hidden layers are "
                              f"{value_hidden}, not its policy's {hidden}; the module's are the same sizes")


def play_symmetry(config: RLlibConfig) -> str:
    """The relabellings the trained module plays averaged over: ``model.symmetry`` where
    given (``none``: none), else the warm start file's (``""``: none)."""
    if config.model.symmetry:
        return "" if config.model.symmetry == "none" else config.model.symmetry
    if not config.warm_start.file:
        return ""
    return str(_load(config).info.symmetry)


def module_state(config: RLlibConfig) -> dict[str, np.ndarray]:
    """The warm start's weights under the names of the module's parameters (``pi.0.weight``
    ...; torch's ``Linear`` weight is ``(out, in)``), the action head divided by
    ``warm_start.sharpen``. Without a critic in the file, only ``pi.*``."""
    policy = _load(config)
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
    from .recipe import push_learner_weights

    push_learner_weights(algo, [MAIN])  # waited for: RLlib's own sync may not reach every runner


__all__ = ["apply", "check_file", "module_state", "play_symmetry"]
