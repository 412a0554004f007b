"""A network's first layer over the non-zero inputs, for training (numba, the ``fast`` extra).

Observations are mostly zeros (about 13% of the card game's 831 inputs are not). These
kernels compute ``x @ w + bias`` and the weights' gradient ``x.T @ g`` over a batch's
non-zero inputs only, in parallel over numba's threads, with fast-math arithmetic: the
sums come in another order than the dense product's, so they agree with it within float
rounding, not bit for bit (the ``ppo`` bot's bit-exact layer is :func:`keltis_env.core.
kernels.sparse_rows`). Training's sparse first layer (:mod:`training.common.sparse`) calls them.

A batch is compressed once (:func:`compress_rows`: the non-zero entries row by row, CSR;
:func:`compress_columns`: also column by column, CSC, for the gradient), into arrays the
next batch may reuse, then multiplied (:func:`rows_product`, :func:`columns_product`).

These kernels depend on no other file: they are cached on disk by numba alone, and are
not part of the games' kernels' stamp (:data:`keltis_env.core.kernels.STAMPED`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .kernels import require_numba

_numba = require_numba()


def _parallel(fn: Any) -> Any:
    """``fn`` compiled in nopython mode, its ``prange`` loops on numba's threads, cached on disk."""
    return _numba.njit(cache=True, parallel=True, fastmath=True)(fn)


def _serial(fn: Any) -> Any:
    """``fn`` compiled in nopython mode, cached on disk."""
    return _numba.njit(cache=True)(fn)


class Compressed(NamedTuple):
    """A batch's non-zero inputs: row by row (``ptr``, ``idx``, ``val``: row ``r``'s entries
    are ``ptr[r]:ptr[r + 1]``) and, once :func:`compress_columns` made them, column by column
    (``cptr``, ``cidx``, ``cval``); ``nnz`` entries in all. The arrays may be longer than
    the entries (a later batch reuses them)."""

    ptr: np.ndarray
    idx: np.ndarray
    val: np.ndarray
    cptr: np.ndarray
    cidx: np.ndarray
    cval: np.ndarray
    nnz: int


def set_threads(n: int) -> None:
    """The kernels run on ``n`` threads (at most numba's, at least 1)."""
    _numba.set_num_threads(max(1, min(int(n), _numba.config.NUMBA_NUM_THREADS)))


@_parallel
def _count_rows(x: Any, counts: Any) -> None:
    rows, size = x.shape
    for r in _numba.prange(rows):
        n = 0
        for k in range(size):
            if x[r, k] != 0.0:
                n += 1
        counts[r] = n


@_parallel
def _fill_rows(x: Any, ptr: Any, idx: Any, val: Any) -> None:
    rows, size = x.shape
    for r in _numba.prange(rows):
        n = ptr[r]
        for k in range(size):
            v = x[r, k]
            if v != 0.0:
                idx[n] = k
                val[n] = v
                n += 1


def compress_rows(x: np.ndarray, reuse: Compressed | None = None) -> Compressed:
    """``x``'s (float32, C-contiguous rows) non-zero entries row by row, in ``reuse``'s
    arrays where they are long enough (new ones otherwise: as long as the entries, which
    a batch of mostly zeros keeps small)."""
    rows, size = x.shape
    ptr = reuse.ptr if reuse is not None and len(reuse.ptr) == rows + 1 else np.empty(rows + 1, np.int64)
    _count_rows(x, ptr[1:])
    ptr[0] = 0
    np.cumsum(ptr[1:], out=ptr[1:])
    nnz = int(ptr[rows])
    if reuse is None or len(reuse.idx) < nnz or len(reuse.cptr) != size + 1:
        cap = max(nnz, 1)
        reuse = Compressed(ptr, np.empty(cap, np.int32), np.empty(cap, np.float32), np.empty(size + 1, np.int64),
                           np.empty(cap, np.int32), np.empty(cap, np.float32), 0)
    _fill_rows(x, ptr, reuse.idx, reuse.val)
    return reuse._replace(ptr=ptr, nnz=nnz)


@_serial
def _transpose(ptr: Any, idx: Any, val: Any, size: int, cptr: Any, cidx: Any, cval: Any) -> None:
    rows = ptr.shape[0] - 1
    for k in range(size + 1):
        cptr[k] = 0
    for j in range(ptr[rows]):
        cptr[idx[j] + 1] += 1
    for k in range(size):
        cptr[k + 1] += cptr[k]
    fill = cptr[:size].copy()
    for r in range(rows):
        for j in range(ptr[r], ptr[r + 1]):
            k = idx[j]
            cidx[fill[k]] = r
            cval[fill[k]] = val[j]
            fill[k] += 1


def compress_columns(x: np.ndarray, rows: Compressed) -> Compressed:
    """The entries of ``rows`` (:func:`compress_rows` of ``x``) column by column too (each
    column's rows in order)."""
    _transpose(rows.ptr, rows.idx, rows.val, x.shape[1], rows.cptr, rows.cidx, rows.cval)
    return rows


@_parallel
def rows_product(ptr: Any, idx: Any, val: Any, wt: Any, bias: Any, out: Any) -> None:
    """``out[r] = bias + sum over row r's entries (k, v) of v * wt[k]`` (``wt``: the
    layer's weight transposed, ``(inputs, outputs)``, C-contiguous)."""
    rows = ptr.shape[0] - 1
    width = wt.shape[1]
    for r in _numba.prange(rows):
        acc = bias.copy()
        for j in range(ptr[r], ptr[r + 1]):
            v = val[j]
            k = idx[j]
            for h in range(width):
                acc[h] += v * wt[k, h]
        out[r, :] = acc


@_parallel
def columns_product(cptr: Any, cidx: Any, cval: Any, g: Any, out: Any) -> None:
    """``out[k] = sum over column k's entries (r, v) of v * g[r]``: ``x.T @ g``, the
    gradient of ``wt`` given the gradient ``g`` of :func:`rows_product`'s output."""
    size = cptr.shape[0] - 1
    width = g.shape[1]
    for k in _numba.prange(size):
        acc = np.zeros(width, np.float32)
        for j in range(cptr[k], cptr[k + 1]):
            v = cval[j]
            r = cidx[j]
            for h in range(width):
                acc[h] += v * g[r, h]
        out[k, :] = acc


__all__ = ["Compressed", "columns_product", "compress_columns", "compress_rows", "rows_product", "set_threads"]
