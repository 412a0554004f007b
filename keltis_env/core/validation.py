"""Validation helpers shared by the games' option, action and state parsers (standard
library only). Each raises the error type it is given, with a message naming the field
and what is allowed."""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from .errors import ActionError, ConfigError, StateError


def fail_state(message: str) -> NoReturn:
    """Refuse a state dict."""
    raise StateError(f"invalid state: {message}")


def state_int(value: Any, field: str, lo: int, hi: int | None = None) -> int:
    """``value`` if it is an integer in ``lo..hi`` (no upper bound when ``hi`` is None)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo or (hi is not None and value > hi):
        bounds = f"in {lo}..{hi}" if hi is not None else f">= {lo}"
        fail_state(f"'{field}' must be an integer {bounds}, got {value!r}")
    return value


def state_bool(value: Any, field: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (not 0, 1 or a string)."""
    if not isinstance(value, bool):
        fail_state(f"'{field}' must be true or false, got {value!r}")
    return value


def state_list(value: Any, field: str, what: str = "values") -> list[Any]:
    """``value`` if it is a list (a JSON array)."""
    if not isinstance(value, list):
        fail_state(f"'{field}' must be a list of {what}, got {type(value).__name__} {value!r}")
    return value


def state_mapping(value: Any, field: str) -> Mapping[str, Any]:
    """``value`` if it is a mapping (a JSON object)."""
    if not isinstance(value, Mapping):
        fail_state(f"'{field}' must be a dict, got {type(value).__name__} {value!r}")
    return value


def per_name(data: Mapping[str, Any], field: str, names: Sequence[str], what: str = "a value") -> list[Any]:
    """``data[field]`` as a mapping with exactly the keys ``names``, as a list in that order."""
    value = data[field]
    if not isinstance(value, Mapping) or set(value) != set(names):
        got = sorted(map(str, value)) if isinstance(value, Mapping) else type(value).__name__
        fail_state(f"'{field}' must map each of {', '.join(names)} to {what}, got {got}")
    return [value[name] for name in names]


def state_name(value: Any, field: str, names: Mapping[Any, Any]) -> Any:
    """``names[value]`` for one of the names listed (null included where it is a key)."""
    if not (value is None or isinstance(value, str)) or value not in names:
        allowed = ", ".join("null" if k is None else repr(k) for k in names)
        fail_state(f"'{field}' must be one of {allowed}, got {value!r}")
    return names[value]


def check_state_header(data: Any, state_format: str, version: int, keys: Sequence[str]) -> Mapping[str, Any]:
    """``data`` if it is a dict of the game's state format and version with exactly ``keys``."""
    if not isinstance(data, Mapping):
        fail_state(f"a state must be a dict, got {type(data).__name__}")
    if data.get("format") != state_format or data.get("version") != version:
        got = f"{data.get('format')!r} version {data.get('version')!r}"
        fail_state(f"expected format {state_format!r} version {version}, got {got}")
    check_keys(data, keys, "the state", required=True)
    return data


_S = TypeVar("_S")
_C = TypeVar("_C")


def parse_state(
    build: Callable[[Mapping[str, Any], _C], _S],
    data: Mapping[str, Any],
    cls: _C,
    *,
    what: str = "state",
    options: str = "",
) -> _S:
    """``build(data, cls)``, every error it meets as a :class:`StateError`: a refused
    option as ``invalid state: {options}...``, a malformed part as ``malformed {what} dict``."""
    try:
        return build(data, cls)
    except StateError:
        raise
    except ConfigError as exc:
        raise StateError(f"invalid state: {options}{exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise StateError(f"malformed {what} dict: {type(exc).__name__}: {exc}") from None


def check_keys(data: Mapping[str, Any], allowed: Sequence[str], where: str, *, required: bool = False) -> None:
    """Refuse keys of ``data`` outside ``allowed`` (a typo must not pass silently) and,
    when ``required``, keys of ``allowed`` that ``data`` lacks."""
    unknown = [k for k in data if k not in allowed]
    if unknown:
        fail_state(f"unknown key(s) {sorted(map(str, unknown))} in {where}; allowed keys are {', '.join(allowed)}")
    if required:
        missing = [k for k in allowed if k not in data]
        if missing:
            fail_state(f"{where} lacks the key(s) {', '.join(missing)}; it needs {', '.join(allowed)}")


def parse_name(text: str, names: Sequence[str], what: str) -> int:
    """Index of ``text`` (case-insensitive, surrounding blanks ignored) in ``names``."""
    if not isinstance(text, str):
        raise ValueError(f"a {what} is a name ({', '.join(names)}), got {text!r}")
    try:
        return list(names).index(text.strip().lower())
    except ValueError:
        raise ValueError(f"unknown {what} {text!r}; {what}s are {', '.join(names)}") from None


def as_finite(value: object) -> float | None:
    """``value`` as a float if it is a finite number (an int or a float, not a bool), else
    ``None``: NaN, the infinities and integers too large for a float are not finite here."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return number if math.isfinite(number) else None


def as_integer(value: object) -> int | None:
    """``value`` as a plain int if it is an integer of any type (numpy's included, through
    ``__index__``), else ``None``: bools, floats and strings are not integers here."""
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        return None
    return operator.index(value)


def game_seed(seed: object) -> int:
    """A new game's seed as a plain int; ``None`` draws one from the operating system."""
    if seed is None:
        return random.SystemRandom().randrange(2**63)
    value = as_integer(seed)
    if value is None:
        raise TypeError(f"seed must be an integer or None, got {seed!r}")
    return value


def check_game_options(config: Any, min_players: int, max_players: int) -> None:
    """Check the options every game's config has, ``num_players`` and ``max_turns``, and
    store them as plain ints (a frozen dataclass is set through ``object.__setattr__``)."""
    n = as_integer(config.num_players)
    if n is None or not min_players <= n <= max_players:
        raise ConfigError(
            f"num_players must be an integer from {min_players} to {max_players}, got {config.num_players!r}"
        )
    t = as_integer(config.max_turns)
    if t is None or t < 1:
        raise ConfigError(f"max_turns must be a positive integer, got {config.max_turns!r}")
    object.__setattr__(config, "num_players", n)
    object.__setattr__(config, "max_turns", t)


def check_option_names(data: object, options: Sequence[str]) -> Mapping[str, Any]:
    """``data`` if it is a mapping of game options whose keys are all in ``options``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"game options must be a mapping, got {type(data).__name__}")
    unknown = ", ".join(sorted(repr(k) for k in data if k not in options))
    if unknown:
        raise ConfigError(f"unknown game option(s) {unknown}; options are {', '.join(options)}")
    return data


def as_action_id(action: object, num_actions: int) -> int:
    """``action`` as a plain int: any integer type is accepted (numpy's included), but
    not bools, floats or strings."""
    value = as_integer(action)
    if value is None:
        raise ActionError(f"action ids are integers 0..{num_actions - 1}, got {action!r}")
    return value


__all__ = [
    "as_action_id",
    "as_integer",
    "check_game_options",
    "check_keys",
    "check_option_names",
    "check_state_header",
    "fail_state",
    "game_seed",
    "parse_name",
    "parse_state",
    "per_name",
    "state_bool",
    "state_int",
    "state_list",
    "state_mapping",
    "state_name",
]
