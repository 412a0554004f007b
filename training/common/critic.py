"""A critic that reads what the seat does not see, in training only (``critic: full``).

In a game of hidden cards the outcome depends on the other hands; a value head that sees
only the seat's view must average over them, and its errors are noise in every advantage.
Asymmetric actor-critic methods (PerfectDou, Suphx's oracle guiding, "asymmetric actor
critic" in robotics) give the critic the hidden information during training while the
actor, the part that plays, still reads the seat's view alone.

Here the collector appends what the learner's seat does not see to each of its
observation rows (:meth:`keltis_env.core.game.GameDescriptor.make_privileged`: for the card
game the other hands and the removed cards; ``BatchedSelfPlayVecEnv(privileged=True)``),
and :class:`PrivilegedCriticPolicy` is sb3-contrib's MaskablePPO policy whose actor network
takes the first ``seat_size`` values of a row and whose critic takes all of them. The actor
cannot read the rest: its first layer has ``seat_size`` inputs and is fed a slice
(``tests/test_privileged_critic.py`` holds its logits and their gradients independent of
the hidden part). A run writes the actor as an ordinary policy file for the seat's
observation (:func:`copy_actor` into a seat-view network; ``ppo:PATH`` plays it like any
other); its value head, which could not read a seat's view, is left out (the file declares
no value head). A run's checkpoints hold the whole network, for resuming only.
"""

from __future__ import annotations

from typing import Any

import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor

#: state-dict prefixes of the actor: what a played policy file keeps
ACTOR_PREFIXES = ("mlp_extractor.policy_net.", "action_net.")


class SeatActorExtractor(MlpExtractor):
    """SB3's ``MlpExtractor`` whose actor network reads only the first ``seat_size``
    features and whose critic network reads all ``feature_dim`` of them."""

    def __init__(self, feature_dim: int, net_arch: Any, activation_fn: type[th.nn.Module], device: Any = "auto",
                 *, seat_size: int) -> None:
        if not 0 < seat_size < feature_dim:
            raise ValueError(f"seat_size must be from 1 to {feature_dim - 1} (the features), got {seat_size}")
        super().__init__(seat_size, net_arch, activation_fn, device)  # the actor on the seat's part
        self.value_net = MlpExtractor(feature_dim, net_arch, activation_fn, device).value_net
        self.seat_size = seat_size

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        out: th.Tensor = self.policy_net(features[..., :self.seat_size])
        return out


class PrivilegedCriticPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's MLP policy with the actor on the first ``seat_size`` observation values
    (the seat's view) and the critic on the whole row (see the module doc)."""

    def __init__(self, *args: Any, seat_size: int = 0, **kwargs: Any) -> None:
        self.seat_size = int(seat_size)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SeatActorExtractor(self.features_dim, self.net_arch, self.activation_fn, self.device,
                                                seat_size=self.seat_size)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()
        data["seat_size"] = self.seat_size
        return data


def privileged(model: Any) -> bool:
    """Whether ``model``'s policy has a critic that reads more than the seat's view."""
    return isinstance(model.policy, PrivilegedCriticPolicy)


def copy_actor(source: Any, target: Any) -> None:
    """The actor's weights of ``source``'s policy into ``target``'s (the same actor network;
    the critics are left as they are)."""
    state = {k: v for k, v in source.policy.state_dict().items() if k.startswith(ACTOR_PREFIXES)}
    missing = [k for k in target.policy.state_dict() if k.startswith(ACTOR_PREFIXES) and k not in state]
    if missing:
        raise ValueError(f"the actors differ: {', '.join(missing)} missing")
    target.policy.load_state_dict(state, strict=False)


def init_from(model: Any, played: Any) -> None:
    """Start ``model`` (a privileged critic) from the policy file loaded as ``played`` (a
    seat-view policy of the same network): its actor as it is, its critic's layers as they
    are, the first one reading the seat's part with the file's weights and the hidden part
    with zeros, so that the critic starts as the file's value head."""
    target = model.policy.state_dict()
    source = played.policy.state_dict()
    first = "mlp_extractor.value_net.0.weight"
    for key, value in source.items():
        if key not in target:
            raise ValueError(f"{key} is not in the network")
        if key == first:
            weight = th.zeros_like(target[key])
            weight[:, :value.shape[1]] = value
            target[key] = weight
        elif target[key].shape != value.shape:
            raise ValueError(f"{key} has shape {tuple(value.shape)}, the network {tuple(target[key].shape)}")
        else:
            target[key] = value
    model.policy.load_state_dict(target)


__all__ = ["ACTOR_PREFIXES", "PrivilegedCriticPolicy", "SeatActorExtractor", "copy_actor", "init_from",
           "privileged"]
