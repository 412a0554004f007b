"""A policy file's weights without torch.

The weights are read straight from ``policy.pth`` (PyTorch's zip format: a pickle that
names its tensors' storages, plus their raw bytes) by a restricted unpickler that accepts
only an ordered dict of tensors, so a process that plays never imports torch; torch is
needed only for a ``policy.pth`` written in a format this reader does not know. A pickle
that is not a weights dictionary, or a tensor holding NaN or infinite values (a network
that diverged in training, or a damaged file: it could only play at random, or not at all),
raises :class:`~keltis_env.policy.format.PolicyLoadError` naming the file and the tensor.
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .format import WEIGHTS_MEMBER, PolicyLoadError, read_member


class _UnsupportedFormatError(Exception):
    """``policy.pth`` uses something the restricted unpickler does not accept."""


_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16, "CharStorage": np.int8,
    "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name: str) -> None:
        self.dtype = np.dtype(_STORAGE_DTYPES[name]).newbyteorder("<")


def _rebuild_tensor(storage: np.ndarray, offset: int, size: tuple[int, ...], stride: tuple[int, ...],
                    *_: Any) -> np.ndarray:
    """``torch._utils._rebuild_tensor_v2`` in numpy: a strided view of the storage, copied."""
    if not size:
        return storage[offset : offset + 1].reshape(()).copy()
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if offset < 0 or any(n < 0 for n in size) or (min(size) > 0 and last >= storage.size):
        raise _UnsupportedFormatError(f"a tensor of shape {tuple(size)} reaches past its storage of {storage.size}")
    view = np.lib.stride_tricks.as_strided(
        storage[offset:], shape=tuple(size), strides=tuple(s * storage.itemsize for s in stride)
    )
    return np.array(view)


class _WeightsUnpickler(pickle.Unpickler):
    """Reads the pickle of a ``torch.save``-d state dict, allowing only what one holds."""

    def __init__(self, data: bytes, storage: Callable[[str, np.dtype], np.ndarray]) -> None:
        super().__init__(io.BytesIO(data))
        self._storage = storage

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise _UnsupportedFormatError(f"the pickle names {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)):
            raise _UnsupportedFormatError(f"unknown storage reference {pid!r}")
        return self._storage(str(pid[2]), pid[1].dtype)


def _numpy_state_dict(raw: bytes) -> dict[str, np.ndarray]:
    """The tensors of a ``torch.save`` zip (``archive/data.pkl`` + ``archive/data/<key>``)."""
    inner = zipfile.ZipFile(io.BytesIO(raw))
    names = inner.namelist()
    pickles = [n for n in names if n.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise _UnsupportedFormatError("no single data.pkl")
    prefix = pickles[0][: -len("data.pkl")]
    byteorder = prefix + "byteorder"
    if byteorder in names and inner.read(byteorder).strip() != b"little":
        raise _UnsupportedFormatError("big-endian tensors")

    def storage(key: str, dtype: np.dtype) -> np.ndarray:
        return np.frombuffer(inner.read(f"{prefix}data/{key}"), dtype=dtype)

    return _check_tensors(_WeightsUnpickler(inner.read(pickles[0]), storage).load())


def _check_tensors(state: Any) -> dict[str, np.ndarray]:
    if not isinstance(state, Mapping) or not all(isinstance(v, np.ndarray) for v in state.values()):
        raise ValueError("the pickle is not a dictionary of tensors")
    return dict(state)


def _torch_state_dict(raw: bytes, path: str, why: str) -> dict[str, np.ndarray]:
    """The fallback for a format the reader does not know: torch's own (safe) loader."""
    try:
        import torch
    except ImportError:
        raise PolicyLoadError(
            f"{path!r}: {WEIGHTS_MEMBER} needs torch to read ({why}); install the train extra: "
            "pip install -e '.[train]'"
        ) from None
    state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    if isinstance(state, Mapping):
        state = {k: v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for k, v in state.items()}
    return _check_tensors(state)


def check_finite(state: Mapping[str, np.ndarray], path: str) -> None:
    """Raise :class:`PolicyLoadError` naming the first tensor of ``state`` (the weights of
    the file at ``path``) that holds a NaN or an infinity; integer and boolean tensors pass."""
    for name, tensor in state.items():
        if tensor.dtype.kind not in "fc" or np.isfinite(tensor).all():
            continue
        nan = int(np.isnan(tensor).sum())
        counts = f"{nan} NaN and {int(np.isinf(tensor).sum())} infinite of its {tensor.size} values"
        raise PolicyLoadError(f"{path!r}: tensor {name} holds NaN/inf values ({counts}); a usable policy has "
                              "finite weights")


def state_dict(zf: zipfile.ZipFile, path: str) -> dict[str, np.ndarray]:
    """The tensors of the policy's weights (``policy.pth``) by name, all finite; a
    :class:`PolicyLoadError` names a member that cannot be read, a pickle that is not a
    dictionary of tensors, or a tensor with NaN or infinite values."""
    state = _read_state_dict(zf, path)
    check_finite(state, path)
    return state


def _read_state_dict(zf: zipfile.ZipFile, path: str) -> dict[str, np.ndarray]:
    raw = read_member(zf, WEIGHTS_MEMBER, path)
    try:
        return _numpy_state_dict(raw)
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError) as exc:
        raise PolicyLoadError(f"{path!r} is corrupt: its weights ({WEIGHTS_MEMBER}) cannot be read ({exc})") from None
    except (pickle.UnpicklingError, ValueError, TypeError, IndexError, AttributeError, OverflowError,
            MemoryError, RecursionError) as exc:  # a damaged pickle fails in any of these ways
        raise PolicyLoadError(f"{path!r} is corrupt: its weights ({WEIGHTS_MEMBER}) are not a tensor "
                              f"dictionary ({type(exc).__name__}: {exc})") from None
    except _UnsupportedFormatError as exc:
        try:
            return _torch_state_dict(raw, path, str(exc))
        except PolicyLoadError:
            raise
        except Exception as torch_exc:  # torch's loader refuses in its own ways, ValueError above included
            first = str(torch_exc).strip().splitlines()[0] if str(torch_exc).strip() else ""
            raise PolicyLoadError(f"{path!r}: its weights ({WEIGHTS_MEMBER}) cannot be read: {exc}; torch: "
                                  f"{type(torch_exc).__name__}: {first}") from None


__all__ = ["check_finite", "state_dict"]
