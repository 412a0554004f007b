"""Validation helpers shared by the games' option, action and state parsers (standard
library only). Each raises the error type it is given, with a message naming the field
and what is allowed."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from .errors import ActionError, StateError


def fail_state(message: str) -> NoReturn:
    """Refuse a state dict."""
    raise StateError(f"invalid state: {message}")


def state_int(value: Any, field: str, lo: int, hi: int | None = None) -> int:
    """``value`` if it is an integer in ``lo..hi`` (no upper bound when ``hi`` is None)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        bounds = f"in {lo}..{hi}" if hi is not None else f">= {lo}"
        fail_state(f"'{field}' must be an integer {bounds}, got {value!r}")
    return value


def per_name(data: Mapping[str, Any], field: str, names: Sequence[str], what: str = "a value") -> list[Any]:
    """``data[field]`` as a mapping with exactly the keys ``names``, as a list in that order."""
    value = data[field]
    if not isinstance(value, Mapping) or set(value) != set(names):
        fail_state(f"'{field}' must map each of {', '.join(names)} to {what}")
    return [value[name] for name in names]


def check_keys(data: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    """Refuse keys of ``data`` outside ``allowed`` (a typo must not pass silently)."""
    unknown = [k for k in data if k not in allowed]
    if unknown:
        fail_state(f"unknown key(s) {sorted(map(str, unknown))} in {where}; allowed keys are {', '.join(allowed)}")


def parse_name(text: str, names: Sequence[str], what: str) -> int:
    """Index of ``text`` (case-insensitive, surrounding blanks ignored) in ``names``."""
    try:
        return list(names).index(text.strip().lower())
    except ValueError:
        raise ValueError(f"unknown {what} {text!r}; {what}s are {', '.join(names)}") from None


def as_action_id(action: object, num_actions: int) -> int:
    """``action`` as a plain int: any integer type is accepted (numpy's included), but
    not bools, floats or strings."""
    if isinstance(action, bool) or not hasattr(action, "__index__"):
        raise ActionError(f"action ids are integers 0..{num_actions - 1}, got {action!r}")
    return operator.index(action)


__all__ = ["as_action_id", "check_keys", "fail_state", "parse_name", "per_name", "state_int"]
