"""The vector environment as a native PufferLib environment (the ``puffer`` extra).

:class:`KeltisPufferEnv`
    :class:`~keltis_env.envs.vector.KeltisVectorEnv` (``num_envs`` learner games on the
    compiled core) as a ``pufferlib.PufferEnv``: one agent per game, and every ``reset``
    and ``step`` writes observations, rewards, terminals, truncations and PufferLib's
    ``masks`` in place into the buffers PufferLib hands over (``buf``), so PufferLib's
    vectorisation (native, ``Serial``, ``Multiprocessing`` over shared memory) and its
    trainer read them without a copy of their own. Its arguments are the vector
    environment's; the games, opponents, seats, rewards, turn caps and auto-reset are
    decided there, the adapter only translates shapes and names.

:class:`MaskedPolicy`
    A small torch policy in PufferLib's policy interface (``forward_eval`` and
    ``forward`` return logits and values) that reads the legal actions from the
    observation and gives illegal actions the logit ``MASKED_LOGIT``.

**Action masks.** PufferLib's trainer (``pufferlib.pufferl.PuffeRL``) hands the policy
nothing but the observation tensor, and its ``masks`` buffer says which agents' rows
count, not which actions are legal; infos are summed into logs. So the legal actions
travel in the observation: its last ``num_actions`` columns are the legal-action mask
(0.0 or 1.0, ``env.action_masks()`` of the vector environment), after the vector
environment's observation (:func:`split_observation`).

**Auto-reset.** The vector environment resets on the next step: the step in which a
game ends returns its last observation (no legal action) with its reward and
``terminals`` (or ``truncations``); the next step deals a new game there and ignores
that game's action. PufferLib's ``masks`` is ``False`` on those rows, the ones whose
action is ignored, so a PufferLib step count (``PuffeRL.global_step``) counts learner
decisions. ``MaskedPolicy`` leaves such a row's logits unmasked (any action is ignored).

**Infos.** A list, as PufferLib expects: empty, or after a step in which games ended one
dict with their mean ``episode_return`` (the rewards summed from the deal to the end)
and mean ``episode_length`` (learner steps), which PufferLib's trainer averages into its
logs.

PufferLib 3.0.16 (``pufferlib-core``; see ``docs/integrations.md`` for the install):
its trainer reads ``terminals`` alone (truncations are not bootstrapped, so
``examples/pufferlib_train.py`` trains with ``turn_cap="end"``), and importing
``pufferlib`` turns ``RuntimeWarning`` into errors and makes Ctrl-C end the process at
once (its ``pufferl`` module does both at import).
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import gymnasium
    import pufferlib
    import torch
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"keltis_env.envs.pufferlib needs PufferLib and torch ({exc.name} is missing); install the "
        "puffer extra (docs/integrations.md): pip install -c constraints.txt torch==2.13.0 'setuptools>=70.1', "
        "then pip install --no-build-isolation -c constraints.txt -e '.[train,fast,puffer]'"
    ) from exc

from keltis_env.envs.vector import KeltisVectorEnv

#: logit given to illegal actions: probability 0 after the softmax, yet finite, so a row
#: without a legal action (a finished game's last observation) stays a distribution
MASKED_LOGIT = -1e9
#: the buffers of a ``PufferEnv`` (``pufferlib.set_buffers``), each one row per agent
BUFFER_NAMES = ("observations", "rewards", "terminals", "truncations", "teacher_actions", "masks", "actions")


def split_observation(observations: Any, num_actions: int) -> tuple[Any, Any]:
    """The vector environment's observation and the legal-action mask (0.0 or 1.0) of
    :class:`KeltisPufferEnv` observations (a NumPy array or a torch tensor, one row per
    game, or one row alone): ``(observations[..., :-num_actions], observations[..., -num_actions:])``."""
    return observations[..., :-num_actions], observations[..., -num_actions:]


class KeltisPufferEnv(pufferlib.PufferEnv):
    """``num_envs`` learner games on the compiled core as a native PufferLib environment;
    see the module documentation.

    ``buf``: PufferLib's buffers (a dict of the arrays ``pufferlib.set_buffers`` makes, one
    row per game); ``None`` makes them. ``seed``: the seed of a first ``reset`` that names
    none (PufferLib's vectorisation passes each environment its seed). The other arguments
    are :class:`~keltis_env.envs.vector.KeltisVectorEnv`'s.
    """

    def __init__(self, num_envs: int = 64, *, buf: dict[str, np.ndarray] | None = None, seed: int | None = None,
                 **options: Any) -> None:
        # its buffers are read once a step, into PufferLib's: no copy of its own (copy=False)
        self.vector_env = KeltisVectorEnv(num_envs, **{"copy": False, **options})
        space = self.vector_env.single_observation_space
        self.num_actions = int(self.vector_env.single_action_space.n)
        self.single_observation_space = gymnasium.spaces.Box(
            np.concatenate([space.low, np.zeros(self.num_actions, np.float32)]),
            np.concatenate([space.high, np.ones(self.num_actions, np.float32)]),
            dtype=np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(self.num_actions)
        self.num_agents = num_envs
        if buf is not None:
            _check_buffers(buf, num_envs, self.single_observation_space.shape[0])
        super().__init__(buf)
        self._size = space.shape[0]
        self._seed = seed
        self._returns = np.zeros(num_envs, np.float64)
        self._lengths = np.zeros(num_envs, np.int64)
        self._starts = np.zeros(num_envs, dtype=bool)  # games whose next action only deals a new game

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, list[dict[str, float]]]:
        """New games in every row (the vector environment's ``reset``: an integer >= 0
        makes them reproducible); returns the observation buffer and no infos."""
        if seed is None:
            seed, self._seed = self._seed, None
        obs, info = self.vector_env.reset(seed=seed)
        self._write(obs, info["action_mask"])
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        self._returns[:] = 0
        self._lengths[:] = 0
        self._starts[:] = False
        return self.observations, []

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[dict[str, float]]]:
        """One action id per game, written into the actions buffer and played; returns the
        buffers (observations, rewards, terminals, truncations) and the infos."""
        actions = np.asarray(actions)
        if actions.shape != self.actions.shape or actions.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_agents} integer action ids (one per game, shape "
                             f"{self.actions.shape}), got an array of shape {actions.shape} and dtype {actions.dtype}")
        self.actions[:] = actions
        obs, rewards, terminated, truncated, info = self.vector_env.step(self.actions)
        self._write(obs, info["action_mask"])
        self.rewards[:] = rewards
        self.terminals[:] = terminated
        self.truncations[:] = truncated
        played = ~self._starts  # a new game's deal is no learner step
        self._returns[played] += rewards[played]
        self._lengths[played] += 1
        ended = terminated | truncated
        infos: list[dict[str, float]] = []
        if ended.any():
            infos.append({"episode_return": float(self._returns[ended].mean()),
                          "episode_length": float(self._lengths[ended].mean())})
            self._returns[ended] = 0
            self._lengths[ended] = 0
        self._starts[:] = ended
        self.masks[:] = ~ended
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def action_masks(self) -> np.ndarray:
        """Each game's legal actions (bool, ``(num_envs, num_actions)``), read from the
        observation buffer; all ``False`` for a game whose episode just ended."""
        return split_observation(self.observations, self.num_actions)[1] > 0.5

    def close(self) -> None:
        self.vector_env.close()

    def _write(self, obs: np.ndarray, masks: np.ndarray) -> None:
        self.observations[:, :self._size] = obs
        self.observations[:, self._size:] = masks


def _check_buffers(buf: dict[str, np.ndarray], rows: int, size: int) -> None:
    """``ValueError`` naming the first of PufferLib's buffers that is missing or of the
    wrong shape or dtype for ``rows`` games and observations of ``size`` values."""
    expected = {"observations": ((rows, size), np.float32), "rewards": ((rows,), np.float32),
                "terminals": ((rows,), np.bool_), "truncations": ((rows,), np.bool_),
                "teacher_actions": ((rows,), None), "masks": ((rows,), np.bool_), "actions": ((rows,), None)}
    missing = [name for name in BUFFER_NAMES if name not in buf]
    if missing:
        raise ValueError(f"buf misses the buffers {', '.join(missing)}; a PufferEnv's buffers are "
                         f"{', '.join(BUFFER_NAMES)} (pufferlib.set_buffers)")
    for name, (shape, dtype) in expected.items():
        array = buf[name]
        if not isinstance(array, np.ndarray) or array.shape != shape or (dtype is not None and array.dtype != dtype):
            want = f"shape {shape}" + (f" and dtype {np.dtype(dtype)}" if dtype is not None else "")
            got = (f"shape {array.shape} and dtype {array.dtype}" if isinstance(array, np.ndarray)
                   else type(array).__name__)
            raise ValueError(f"buf[{name!r}] must be a NumPy array of {want} ({rows} games), got {got}")


class MaskedPolicy(torch.nn.Module):
    """An MLP in PufferLib's policy interface for :class:`KeltisPufferEnv`: a shared
    encoder of the vector environment's observation, a policy head whose illegal actions
    get ``MASKED_LOGIT`` and a value head. ``env``: the environment (or PufferLib's
    ``vecenv.driver_env``), for the sizes."""

    def __init__(self, env: KeltisPufferEnv, hidden_size: int = 128) -> None:
        super().__init__()
        self.num_actions = int(env.single_action_space.n)
        self.hidden_size = hidden_size
        size = int(env.single_observation_space.shape[0]) - self.num_actions
        self.encoder = torch.nn.Sequential(torch.nn.Linear(size, hidden_size), torch.nn.GELU(),
                                           torch.nn.Linear(hidden_size, hidden_size), torch.nn.GELU())
        self.decoder = torch.nn.Linear(hidden_size, self.num_actions)
        self.value = torch.nn.Linear(hidden_size, 1)

    def forward_eval(self, observations: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (illegal actions at ``MASKED_LOGIT``, unless no action is legal) and values."""
        obs, mask = split_observation(observations.float(), self.num_actions)
        hidden = self.encoder(obs)
        illegal = (mask < 0.5) & (mask > 0.5).any(dim=-1, keepdim=True)
        return self.decoder(hidden).masked_fill(illegal, MASKED_LOGIT), self.value(hidden)

    def forward(self, observations: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_eval(observations, state)


__all__ = ["MASKED_LOGIT", "KeltisPufferEnv", "MaskedPolicy", "split_observation"]
