"""A trained policy (a Stable-Baselines3 / sb3-contrib PPO zip) as a bot.

``make_bot("ppo:policies/keltis_2p.zip")`` loads the policy saved by ``training``
(``MaskablePPO.save`` or the smaller policy-only export); options follow the path:
``ppo:PATH,sample=1,temperature=0.5``.

The bot encodes its :class:`~keltis_env.games.keltis.view.PlayerView` with
:class:`~keltis_env.games.keltis.encoding.ObservationEncoder` (the observation the policy was trained
on), masks the illegal actions and plays the most probable legal action, or samples one
from the masked distribution with ``sample=1`` (its randomness from the bot's ``rng``).
The forward pass runs in numpy for the usual multilayer perceptrons (faster than torch
for one observation); any other architecture runs through torch.

torch and stable-baselines3 are imported only when a bot is made; without them (the
``train`` extra) the bot says how to install them. A policy zip contains pickled Python
objects: load only files you trust.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.games.keltis.encoding import ObservationEncoder

from .base import Bot

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class PolicyLoadError(ValueError):
    """A policy file that is missing, not a policy zip, or not made for this game."""


def _flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
        return value.lower() in _TRUE
    raise ValueError(f"option {name} must be 0/1 or true/false, got {value!r}")


def _import_training_stack() -> tuple[Any, Any]:
    try:
        import torch
        from stable_baselines3.common.save_util import load_from_zip_file
    except ImportError as exc:
        raise ImportError(
            f"the 'ppo' bot needs torch and stable-baselines3 ({exc.name} is missing); "
            "install the train extra: pip install -e '.[train]'"
        ) from None
    return torch, load_from_zip_file


def load_policy(path: str | Path) -> Any:
    """The SB3 policy (a torch module, in eval mode, on the CPU) saved in the zip at ``path``.

    Raises :class:`PolicyLoadError` for a missing or unreadable file.
    """
    path = Path(path)
    if not path.is_file():
        raise PolicyLoadError(f"no policy file at {str(path)!r}")
    if not zipfile.is_zipfile(path):
        raise PolicyLoadError(f"{str(path)!r} is not a policy zip (saved by training or MaskablePPO.save)")
    _torch, load_from_zip_file = _import_training_stack()
    try:
        data, params, _ = load_from_zip_file(path, device="cpu", print_system_info=False)
        if not data or "policy_class" not in data or not params or "policy" not in params:
            raise PolicyLoadError(f"{str(path)!r} holds no policy (no 'policy_class' / 'policy' parameters)")
        kwargs = dict(data.get("policy_kwargs") or {})
        kwargs["ortho_init"] = False  # the weights are loaded next: skip the costly orthogonal initialisation
        policy = data["policy_class"](data["observation_space"], data["action_space"], lambda _: 0.0, **kwargs)
        policy.load_state_dict(params["policy"])
    except PolicyLoadError:
        raise
    except Exception as exc:  # a zip with the wrong members, a broken pickle, a shape mismatch...
        raise PolicyLoadError(f"cannot load the policy in {str(path)!r}: {type(exc).__name__}: {exc}") from None
    policy.set_training_mode(False)
    return policy


class _NumpyMLP:
    """The policy's logits for one observation, computed in numpy; ``None`` when the
    policy is not a plain flatten -> MLP -> linear head."""

    _ACTIVATIONS = {"Tanh": np.tanh, "ReLU": lambda x: np.maximum(x, 0.0)}

    def __init__(self, layers: list[tuple[str, Any]]) -> None:
        self.layers = layers

    @classmethod
    def of(cls, policy: Any) -> _NumpyMLP | None:
        import torch

        extractor = getattr(policy, "pi_features_extractor", None) or getattr(policy, "features_extractor", None)
        if type(extractor).__name__ != "FlattenExtractor" or len(policy.observation_space.shape) != 1:
            return None
        layers: list[tuple[str, Any]] = []
        modules = [*policy.mlp_extractor.policy_net, policy.action_net]
        for module in modules:
            if isinstance(module, torch.nn.Linear):
                w = module.weight.detach().cpu().numpy().astype(np.float32).T.copy()
                b = module.bias.detach().cpu().numpy().astype(np.float32).copy()
                layers.append(("linear", (w, b)))
            elif type(module).__name__ in cls._ACTIVATIONS:
                layers.append(("act", cls._ACTIVATIONS[type(module).__name__]))
            elif isinstance(module, torch.nn.Identity):
                continue
            else:
                return None
        return cls(layers)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        x = obs
        for kind, layer in self.layers:
            if kind == "linear":
                w, b = layer
                x = x @ w + b
            else:
                x = layer(x)
        return x


class PPOBot(Bot):
    """Plays a trained PPO policy. See the module documentation."""

    name = "ppo"
    #: it only reads view fields, so the learner environment may pass a zero-copy LiveView
    accepts_live_view = True

    def __init__(
        self,
        path: str | Path | None = None,
        seed: int | None = None,
        sample: Any = False,
        temperature: float = 1.0,
    ) -> None:
        super().__init__(seed)
        if path is None:
            raise ValueError("the ppo bot needs a policy file: 'ppo:PATH', e.g. ppo:policies/keltis_2p.zip")
        self.sample = _flag("sample", sample)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise ValueError(f"option temperature must be a number > 0, got {temperature!r}")
        self.temperature = float(temperature)
        self.path = str(path)
        self.policy = load_policy(path)
        space = self.policy.observation_space
        self.obs_size = int(space.shape[0]) if len(space.shape) == 1 else -1
        self.num_actions = int(self.policy.action_space.n)
        self._mlp = _NumpyMLP.of(self.policy)
        self._encoders: dict[int, ObservationEncoder] = {}

    def _encoder(self, num_players: int) -> ObservationEncoder:
        encoder = self._encoders.get(num_players)
        if encoder is None:
            encoder = ObservationEncoder(num_players)
            if encoder.size != self.obs_size:
                raise PolicyLoadError(
                    f"the policy {self.path!r} takes observations of size {self.obs_size}, but a "
                    f"{num_players}-player game has {encoder.size}: it was trained for another number of players"
                )
            self._encoders[num_players] = encoder
        return encoder

    def logits(self, view: Any) -> np.ndarray:
        """The policy's unmasked action logits for ``view``."""
        obs = self._encoder(view.num_players).encode(view)
        if self._mlp is not None:
            return self._mlp(obs)
        import torch

        with torch.no_grad():
            dist = self.policy.get_distribution(torch.as_tensor(obs[None]))
            return dist.distribution.logits[0].cpu().numpy()

    def act(self, view: Any) -> int:
        legal = view.legal_actions
        if not legal:
            raise ValueError("PPOBot.act called for a view with no legal action (not this player's turn)")
        logits = self.logits(view)
        legal_logits = logits[list(legal)]
        if not self.sample:
            return int(legal[int(np.argmax(legal_logits))])
        z = legal_logits.astype(np.float64) / self.temperature
        weights = np.exp(z - z.max())
        return int(self.rng.choices(legal, weights=weights.tolist())[0])

    def __repr__(self) -> str:
        extra = f", sample=1, temperature={self.temperature:g}" if self.sample else ""
        return f"PPOBot({self.path!r}{extra})"


__all__ = ["PPOBot", "PolicyLoadError", "load_policy"]
