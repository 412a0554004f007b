"""A policy file's network in numpy: the forward pass of SB3's multilayer perceptron
(flatten, hidden layers with tanh or ReLU, linear head), so that a bot loads in
milliseconds and plays without torch.

Both of SB3's heads are read: the actor (``mlp_extractor.policy_net`` then
``action_net``: the action logits, :meth:`NumpyPolicy.__call__`) and, where the file has
one, the critic (``mlp_extractor.value_net`` then ``value_net``: the value,
:meth:`NumpyPolicy.values`, whose meaning the metadata records,
:attr:`~keltis_env.policy.format.PolicyInfo.value_target`). Both take one observation or
a batch (rows).

:meth:`NumpyPolicy.sparse_logits` is the actor's forward pass that the ``ppo`` bot plays by
(its ``forward=sparse``): the first layer sums each observation's non-zero inputs in order,
row by row (observations are mostly zeros: about 13% of the card game's are not), in the
compiled kernel :func:`keltis_env.core.kernels.sparse_rows` where numba is installed and in
numpy otherwise, with the same bits. A row's logits then never depend on the rows computed
beside it, which a BLAS product of many rows does not promise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

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
    followed by ``activation``) then the action head; ``value_layers`` the same for the
    critic, ending in its one-output value head (``None``: the file has no critic)."""

    def __init__(self, info: PolicyInfo, layers: list[tuple[np.ndarray, np.ndarray]],
                 value_layers: list[tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.info = info
        self.layers = layers
        self.value_layers = value_layers
        self._act = _ACTIVATIONS[info.activation]

    @property
    def has_value(self) -> bool:
        """Whether the file holds a critic (:meth:`values` works)."""
        return self.value_layers is not None

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
        layers = _mlp(state, path, info.observation_size, "mlp_extractor.policy_net.", "action_net")
        if layers[-1][1].shape[0] != info.num_actions:
            raise PolicyLoadError(f"{path!r}: the action head has {layers[-1][1].shape[0]} outputs for "
                                  f"{info.num_actions} actions")
        value_layers = None
        if "value_net.weight" in state and info.value_head:
            value_layers = _mlp(state, path, info.observation_size, "mlp_extractor.value_net.", "value_net")
            if value_layers[-1][1].shape[0] != 1:
                raise PolicyLoadError(f"{path!r}: the value head has {value_layers[-1][1].shape[0]} outputs; "
                                      "expected 1")
        return cls(info, layers, value_layers)

    def _run(self, layers: list[tuple[np.ndarray, np.ndarray]], obs: np.ndarray) -> np.ndarray:
        x = obs
        *hidden, (w, b) = layers
        for hw, hb in hidden:
            x = self._act(x @ hw + hb)
        return x @ w + b

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """The action logits of one observation (a vector) or of a batch (rows)."""
        return self._run(self.layers, obs)

    def sparse_logits(self, obs: np.ndarray) -> np.ndarray:
        """The action logits as :meth:`__call__` gives them up to rounding, with the first
        layer computed by :func:`sparse_rows` (float32): one observation (a vector) or rows
        with any leading dimensions; the later layers' products are numpy's, one per matrix
        of the leading dimensions as :meth:`__call__` runs them."""
        x = np.asarray(obs, dtype=np.float32)
        (w, b), rest = self.layers[0], self.layers[1:]
        flat = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
        x = (sparse_rows(flat, w) + b).reshape(*x.shape[:-1], w.shape[1])
        if not rest:
            return x
        return self._run(rest, self._act(x))

    def sparse_logits_gathered(self, obs: np.ndarray, gather: np.ndarray) -> np.ndarray:
        """:meth:`sparse_logits` of the rows ``obs[r, gather[g]]`` for every row ``r`` of
        ``obs`` and index map ``g`` of ``gather`` (``(k, size)``: a row's relabellings), as an
        ``(n, k, actions)`` array, bit for bit what :meth:`sparse_logits` gives those ``k``
        rows of each row alone, without making the ``n * k`` rows."""
        x = np.ascontiguousarray(obs, dtype=np.float32)
        n, k = x.shape[0], gather.shape[0]
        (w, b), rest = self.layers[0], self.layers[1:]
        first = (sparse_rows_gathered(x, gather, w) + b).reshape(n, k, w.shape[1])
        if not rest:
            return first
        return self._run(rest, self._act(first))

    def values(self, obs: np.ndarray) -> np.ndarray:
        """The critic's value of one observation (a 0-d array) or of a batch of rows (a
        vector; any leading dimensions, as numpy's matrix product broadcasts them): the
        estimate of :attr:`~keltis_env.policy.format.PolicyInfo.value_target` for the
        observing player. A :class:`PolicyLoadError` if the file has no critic."""
        if self.value_layers is None:
            raise PolicyLoadError(f"{self.info.path!r} holds no value head (value_net); a search needs one "
                                  "to evaluate positions")
        return self._run(self.value_layers, obs)[..., 0]


def _mlp(state: Mapping[str, np.ndarray], path: str, width: int, prefix: str,
         head: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The layers ``prefix<i>`` (SB3's hidden layers, every other module) then ``head``, each
    checked to take the previous one's outputs."""
    indices = sorted(int(k[len(prefix):].split(".")[0]) for k in state if k.startswith(prefix)
                     and k.endswith(".weight"))
    layers = []
    for name in [f"{prefix}{i}" for i in indices] + [head]:
        w, b = state.get(f"{name}.weight"), state.get(f"{name}.bias")
        if w is None or b is None or w.ndim != 2 or b.shape != (w.shape[0],) or w.shape[1] != width:
            raise PolicyLoadError(
                f"{path!r}: the weights {name}.weight/.bias are missing or do not fit (expected a layer "
                f"taking {width} inputs); not an SB3 MlpPolicy of this observation size"
            )
        layers.append((np.ascontiguousarray(w.T, dtype=np.float32), b.astype(np.float32)))
        width = w.shape[0]
    return layers


_KERNELS: list[Any] = []  # [the kernel module, or None without numba], once looked up


def _sparse_kernel() -> Any:
    """:mod:`keltis_env.core.kernels` (its :func:`~keltis_env.core.kernels.sparse_rows` and
    :func:`~keltis_env.core.kernels.sparse_rows_gathered`), or ``None`` where numba is not
    installed."""
    if not _KERNELS:
        try:
            from keltis_env.core import kernels
        except ImportError:
            _KERNELS.append(None)
        else:
            _KERNELS.append(kernels)
    return _KERNELS[0]


def sparse_rows(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w`` for float32 rows ``x`` (a C-contiguous matrix), each row's terms of its
    non-zero inputs summed in order (:func:`keltis_env.core.kernels.sparse_rows`; in numpy,
    :func:`sparse_rows_numpy`, where numba is not installed: the same bits, slower)."""
    kernel = _sparse_kernel()
    if kernel is None:
        return sparse_rows_numpy(x, w)
    out = np.empty((x.shape[0], w.shape[1]), dtype=np.float32)
    kernel.sparse_rows(x, w, out)
    return out


def sparse_rows_gathered(x: np.ndarray, gather: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`sparse_rows` of the rows ``x[r, gather[g]]`` in the order ``r * k + g``
    (:func:`keltis_env.core.kernels.sparse_rows_gathered`; in numpy, the rows made first)."""
    kernel = _sparse_kernel()
    if kernel is None:
        return sparse_rows_numpy(x[:, gather].reshape(-1, x.shape[1]), w)
    out = np.empty((x.shape[0] * gather.shape[0], w.shape[1]), dtype=np.float32)
    kernel.sparse_rows_gathered(x, np.ascontiguousarray(gather, dtype=np.int64), w, out)
    return out


def sparse_rows_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`keltis_env.core.kernels.sparse_rows` in numpy, bit for bit: step ``j`` adds
    every row's ``j``-th non-zero term (a rounded product, then a rounded sum, as the kernel
    does); a row with fewer terms adds ``0 * w[0]``, a signed zero, which changes no sum
    (a sum that starts at +0 is never -0)."""
    rows = x.shape[0]
    acc = np.zeros((rows, w.shape[1]), dtype=np.float32)
    nonzero = x != 0
    counts = nonzero.sum(axis=1)
    steps = int(counts.max()) if rows else 0
    order = np.argsort(~nonzero, axis=1, kind="stable")[:, :steps]  # each row's non-zero columns first, in order
    values = np.take_along_axis(x, order, axis=1)
    values[np.arange(steps)[None, :] >= counts[:, None]] = 0
    for j in range(steps):
        acc += values[:, j, None] * w[order[:, j]]
    return acc


def unusable_logits(logits: np.ndarray) -> str:
    """What makes ``logits`` (of the legal actions) useless for choosing an action: ``""``
    where they are usable (finite, or some of them ``-inf`` beside a finite one), else a
    phrase such as ``"hold NaN values"``. Finite weights can still give these, by overflow."""
    top = float(np.max(logits)) if logits.size else float("nan")
    if np.isfinite(top):
        return ""
    if not logits.size:
        return "are empty"
    if np.isnan(logits).any():
        return "hold NaN values"
    if np.isposinf(logits).any():
        return "hold +inf values"
    return "are all -inf (no legal action has a probability)"


def load_policy(path: str | Path) -> NumpyPolicy:
    """The policy in the zip at ``path``, in numpy (see the module doc): the one check of a
    policy file that everything loading one shares. Raises :class:`PolicyLoadError` for a
    missing, truncated or corrupt file, metadata the game it names cannot play
    (:func:`~keltis_env.policy.format.check_fits_game`), weights that are NaN or infinite
    (:func:`~keltis_env.policy.weights.check_finite`), missing or of the wrong shape, or a
    network this module does not run (an unsupported activation, a feature extractor)."""
    with open_policy_zip(path) as zf:
        info = policy_info(zf, str(path))
        state = state_dict(zf, str(path))
    return NumpyPolicy.fromstate_dict(info, state)


__all__ = ["NumpyPolicy", "load_policy", "sparse_rows", "sparse_rows_gathered", "sparse_rows_numpy", "unusable_logits"]
