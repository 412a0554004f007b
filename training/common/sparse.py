"""The first layer of a policy's networks computed over each observation's non-zero inputs,
forward and backward, in training (``first_layer: sparse``).

Observations are mostly zeros (about 13% of the card game's 831 inputs are not), and the
first layer holds most of an MLP's weights: its product ``x @ W.T`` and the gradient of
``W``, ``g.T @ x``, need only the non-zero ``x[r, k]``. :class:`SparseLinear` takes the
place of an ``nn.Linear`` whose inputs need no gradient (observations) and computes both in
the parallel kernels of :mod:`keltis_env.core.sparse_kernels` (numba, the ``fast`` extra, on
as many threads as torch has): the same sums as the dense product up to float rounding (the
terms added in another order). A batch's non-zero entries are found once for the actor's
and the critic's first layers (the same observations): :class:`_Compressions` keeps the
last batch's, row by row for the products and column by column for the gradients.

The layer keeps the ``nn.Linear``'s ``weight`` and ``bias`` parameters, the same objects
(the optimizer's) under the same names and shapes, so a model's state dict, its saved
files and the policy files exported from it are those of SB3's ``MlpPolicy``; only the
weight's memory is laid out column by column (its transpose contiguous, which the kernels
read), and a state dict gets it in the usual row-major layout. :func:`sparsify` puts it in
the actor's and the critic's first layer of a policy (training's ``first_layer``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from torch import nn
from torch.nn import functional


def kernels() -> Any:
    """:mod:`keltis_env.core.sparse_kernels`, or an ``ImportError`` naming the ``fast`` extra."""
    from keltis_env.core import sparse_kernels as module

    return module


class _Compressions:
    """The non-zero entries of the last batch the sparse layers saw: the actor's and the
    critic's first layers read the same observations (the same tensor object, which is
    held here, so that no other can take its identity), forward and backward. Each batch
    compressed gets a new ``token``; a backward pass reuses the columns of its forward
    pass's batch only while that batch is still the one held."""

    def __init__(self) -> None:
        self._x: th.Tensor | None = None
        self._version = -1
        self.token = 0
        self._held: Any = None  # keltis_env.core.sparse_kernels.Compressed
        self._columns = False

    def _new(self, x: th.Tensor, xs: th.Tensor) -> None:
        self._held = kernels().compress_rows(xs.numpy(), self._held)
        self._x, self._version, self._columns = x, x._version, False
        self.token += 1

    def rows(self, x: th.Tensor, xs: th.Tensor) -> tuple[np.ndarray, ...]:
        """The non-zero entries of ``xs`` (``x`` detached, contiguous) row by row: ``ptr,
        idx, val``; found again unless ``x`` is the batch held, unchanged."""
        if not (x is self._x and x._version == self._version):
            self._new(x, xs)
        return self._held.ptr, self._held.idx, self._held.val

    def columns(self, token: int, xs: th.Tensor) -> tuple[np.ndarray, ...]:
        """The non-zero entries of ``xs``, the batch of ``token``, column by column:
        ``cptr, cidx, cval``."""
        if token != self.token:
            self._new(xs, xs)
        if not self._columns:
            kernels().compress_columns(xs.numpy(), self._held)
            self._columns = True
        return self._held.cptr, self._held.cidx, self._held.cval


_COMPRESSIONS = _Compressions()


class _SparseProduct(th.autograd.Function):
    """``x @ weight.T + bias`` over the non-zero ``x``, with the gradients of ``weight`` and
    ``bias`` (none for ``x``). ``wt`` is ``weight.T``, contiguous (a view of it)."""

    @staticmethod
    def forward(ctx: Any, x: th.Tensor, weight: th.Tensor, bias: th.Tensor, wt: th.Tensor) -> th.Tensor:
        xs = x.detach().contiguous()
        k = kernels()
        k.set_threads(th.get_num_threads())
        out = np.empty((xs.shape[0], wt.shape[1]), dtype=np.float32)
        k.rows_product(*_COMPRESSIONS.rows(x, xs), wt.detach().numpy(), bias.detach().numpy(), out)
        ctx.save_for_backward(xs)
        ctx.token = _COMPRESSIONS.token
        return th.from_numpy(out)

    @staticmethod
    def backward(ctx: Any, grad: th.Tensor) -> tuple[None, th.Tensor, th.Tensor, None]:
        (xs,) = ctx.saved_tensors
        g = grad.detach().contiguous()
        k = kernels()
        k.set_threads(th.get_num_threads())
        grad_wt = np.empty((xs.shape[1], g.shape[1]), dtype=np.float32)
        k.columns_product(*_COMPRESSIONS.columns(ctx.token, xs), g.numpy(), grad_wt)
        # weight.T's gradient, transposed: the weight's own column-major layout, no copy
        return None, th.from_numpy(grad_wt).t(), g.sum(dim=0), None


class SparseLinear(nn.Module):
    """``linear`` (an ``nn.Linear`` with a bias, float32) computed over the non-zero inputs
    (see the module doc): the same parameters, its weight's memory laid out column by
    column. Inputs that are not float32 rows on the CPU, or that need a gradient, go through
    the dense product."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        if linear.bias is None or linear.weight.dtype != th.float32:
            raise ValueError("SparseLinear takes an nn.Linear with a bias, in float32")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        with th.no_grad():  # the same Parameter (the optimizer holds it), its transpose made contiguous
            self.weight.data = self.weight.data.t().contiguous().t()

    def forward(self, x: th.Tensor) -> th.Tensor:
        wt = self.weight.t()
        if (x.dim() != 2 or x.dtype != th.float32 or x.device.type != "cpu" or x.requires_grad
                or not wt.is_contiguous()):
            return functional.linear(x, self.weight, self.bias)
        out: th.Tensor = _SparseProduct.apply(x, self.weight, self.bias, wt)
        return out

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if not keep_vars:  # saved files hold nn.Linear's row-major weight
            destination[prefix + "weight"] = self.weight.detach().contiguous()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, sparse inputs"


def sparsify(policy: Any) -> int:
    """Put :class:`SparseLinear` in place of the first layer of the actor's and the critic's
    MLP of an SB3 ``ActorCriticPolicy`` (``mlp_extractor.policy_net`` and ``value_net``, whose
    inputs are the flattened observations); returns how many layers it replaced (0: already
    sparse, or no hidden layers). An ``ImportError`` naming the ``fast`` extra without numba."""
    kernels()
    replaced = 0
    for net in (policy.mlp_extractor.policy_net, policy.mlp_extractor.value_net):
        if len(net) and type(net[0]) is nn.Linear:
            net[0] = SparseLinear(net[0])
            replaced += 1
    return replaced



__all__ = ["SparseLinear", "sparsify"]
