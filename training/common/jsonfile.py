"""The JSON that the training jobs write (reports, results, run records): standard JSON, which
holds finite numbers only. A NaN or an infinity among the figures (a win rate of no games, a
diverged loss) is refused with a ``ValueError`` that names the file and the key holding it,
rather than written as the bare ``NaN`` or ``Infinity`` that strict JSON readers refuse.

    atomic_write_text(path, finite_json(data, path, indent=1) + "\\n")
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def _non_finite(data: Any, where: str) -> Iterator[tuple[str, Any]]:
    """(key path, value) of every NaN or infinity in ``data`` (mappings, lists, tuples)."""
    if isinstance(data, numbers.Real) and not isinstance(data, numbers.Integral):
        if not math.isfinite(float(data)):
            yield where or "the value", data
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from _non_finite(value, f"{where}.{key}" if where else str(key))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            yield from _non_finite(value, f"{where}[{i}]")


def _nulled(data: Any) -> Any:
    """``data`` with every NaN or infinity replaced by ``None``."""
    if isinstance(data, numbers.Real) and not isinstance(data, numbers.Integral):
        return data if math.isfinite(float(data)) else None
    if isinstance(data, Mapping):
        return {key: _nulled(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_nulled(value) for value in data]
    return data


def finite_json(data: Any, what: str | Path, *, missing_as_null: bool = False, **kwargs: Any) -> str:
    """``json.dumps(data, allow_nan=False, **kwargs)``: the JSON text of ``data``; a
    ``ValueError`` naming ``what`` (the file) and the key of the first NaN or infinity when
    ``data`` holds one. With ``missing_as_null``, for a run's report in which a NaN means
    "not measured" (RLlib's mean return of an iteration in which no episode ended), every
    NaN or infinity is written as ``null`` instead."""
    if missing_as_null:
        data = _nulled(data)
    try:
        return json.dumps(data, allow_nan=False, **kwargs)
    except ValueError as exc:
        found = next(_non_finite(data, ""), None)
        if found is None:  # another JSON error (a circular reference): json's own words
            raise ValueError(f"cannot write {what}: {exc}") from None
        key, value = found
        raise ValueError(f"cannot write {what}: {key} is {float(value)!r}, and JSON holds finite numbers only "
                         f"(a figure that is not a number is refused, not written as NaN)") from None


__all__ = ["finite_json"]
