"""A policy file's network in numpy: the forward pass of SB3's multilayer perceptron
(flatten, hidden layers with tanh or ReLU, linear head), so that a bot loads in
milliseconds and plays without torch."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from .format import PolicyInfo, PolicyLoadError, open_policy_zip, policy_info
from .weights import state_dict

_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
}


class NumpyPolicy:
    """The logits of an SB3 multilayer-perceptron policy, computed in numpy.

    ``layers`` are ``(weight (in, out), bias (out,))`` pairs: the hidden layers (each
    followed by ``activation``) then the action head."""

    def __init__(self, info: PolicyInfo, layers: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.info = info
        self.layers = layers
        self._act = _ACTIVATIONS[info.activation]

    @classmethod
    def fromstate_dict(cls, info: PolicyInfo, state: Mapping[str, np.ndarray]) -> NumpyPolicy:
        path = info.path
        extra = [k for k in state if k.startswith(("features_extractor.", "pi_features_extractor."))]
        if extra:
            raise PolicyLoadError(f"{path!r}: the policy has a learned feature extractor ({extra[0]}); this bot "
                                  "runs SB3's MlpPolicy (flatten, hidden layers, linear head)")
        if info.activation not in _ACTIVATIONS:
            raise PolicyLoadError(f"{path!r}: hidden activation {info.activation!r} is not supported; "
                                  f"expected one of {', '.join(_ACTIVATIONS)}")
        prefix = "mlp_extractor.policy_net."
        indices = sorted(int(k[len(prefix):].split(".")[0]) for k in state if k.startswith(prefix)
                         and k.endswith(".weight"))
        names = [f"{prefix}{i}" for i in indices] + ["action_net"]
        layers = []
        width = info.observation_size
        for name in names:
            w, b = state.get(f"{name}.weight"), state.get(f"{name}.bias")
            if w is None or b is None or w.ndim != 2 or b.shape != (w.shape[0],) or w.shape[1] != width:
                raise PolicyLoadError(
                    f"{path!r}: the weights {name}.weight/.bias are missing or do not fit (expected a layer "
                    f"taking {width} inputs); not an SB3 MlpPolicy of this observation size"
                )
            layers.append((np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32)))
            width = w.shape[0]
        if width != info.num_actions:
            raise PolicyLoadError(f"{path!r}: the action head has {width} outputs for {info.num_actions} actions")
        return cls(info, layers)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = obs
        *hidden, (w, b) = self.layers
        for hw, hb in hidden:
            x = self._act(x @ hw + hb)
        return x @ w + b


def load_policy(path: str | Path) -> NumpyPolicy:
    """The policy in the zip at ``path``, in numpy (see the module doc); raises
    :class:`PolicyLoadError` for a missing, truncated, corrupt or unsupported file."""
    with open_policy_zip(path) as zf:
        info = policy_info(zf, str(path))
        state = state_dict(zf, str(path))
    return NumpyPolicy.fromstate_dict(info, state)


__all__ = ["NumpyPolicy", "load_policy"]
