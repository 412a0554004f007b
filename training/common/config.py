"""The one config loader of every training command: YAML files into typed, checked dataclasses.

A command declares its config as nested dataclasses (sections are fields whose type is a
dataclass) and loads it with :func:`load`. Every command's files then read the same way:

* a file may name another one to start from with ``base: other.yaml`` (relative to the
  file, else a repository path such as ``configs/train/default.yaml``); sections are merged key
  by key, any other value (lists, mappings such as ``pool.weights``) replaces the base's;
* a config file (``--config configs/train/smoke.yaml``), a ``base:`` file and a key marked
  ``path=True`` (a policy file such as ``init: policies/keltis_2p.zip``) that does not exist
  from the working folder is the file the package ships at that repository path
  (:func:`keltis_env.data.resolve`), so the shipped configs and policies work from any
  working folder and from an installed wheel;
* command-line overrides use dotted keys and YAML values (``--set ppo.lr=1e-4``,
  :func:`apply_override`);
* unknown keys and wrong types fail at once with a :class:`ConfigError` naming the key and
  what is allowed; an integer key takes any exact integer however it is written
  (``3000000``, ``3_000_000``, ``3e6``, ``3.0e6``; ``3.5`` is refused), a float key any
  finite number (``3e-4`` included, which YAML 1.1 reads as a string; ``.inf``, ``.nan``
  and numbers too large for a float are refused for every float key, the values of a
  mapping such as ``pool.weights`` included: no key of a config has a use for them);
* a key may appear once in a mapping: a file (or a ``--set`` value such as
  ``{self: 1, self: 2}``) that repeats a key is refused, naming the key and its line,
  where YAML would silently keep the last value;
* a file with no keys (empty, or only blanks and comments) is refused, as it is surely
  not the file meant; ``{}`` says "every default" explicitly;
* reading is bounded: a config file is a regular file of at most :data:`MAX_YAML_BYTES`,
  and a document (a file or a ``--set`` value) whose aliases would expand it past
  :data:`MAX_YAML_VALUES` values (an "alias bomb": a few hundred bytes that stand for
  billions of values) or that refers to itself is refused before it is built, naming the
  file.
* a shipped config lives in the folder of the command that reads it (``configs/train/``,
  ``configs/exit/``, ``configs/rllib/``, ``configs/recipes/``); a missing file at one of the
  earlier paths (``configs/main.yaml``, :data:`MOVED`) is refused naming where it is now.

A field's ``metadata`` may hold its one-line ``help`` and its checks: ``choices``, ``lo``
(``lo_open`` for a strict bound) and ``hi`` (:func:`option` builds such a field), and
``path=True`` for a file path that may name a shipped file (its default too). A field
whose name ends in ``_`` (``lambda_``) is written without it in YAML.
"""

from __future__ import annotations

import dataclasses
import decimal
import types
import typing
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

import yaml

# The one ConfigError of the project (a KeltisError): a training config (file, key or
# value) that is not allowed raises it as game options do, naming the key and what is allowed.
from keltis_env.core.errors import ConfigError
from keltis_env.core.input_files import FileTooLargeError, NotRegularFileError, read_bounded
from keltis_env.core.validation import as_finite
from keltis_env.yaml_files import (
    MAX_YAML_BYTES,
    MAX_YAML_VALUES,
    BoundedLoader,
    YamlTooLargeError,
    expanded_size,
    load_yaml,
)


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A YAML mapping that gives a key twice (:class:`UniqueKeyLoader`)."""

    def __init__(self, key: Any, line: int) -> None:
        super().__init__(problem=f"key {key!r} is given twice (line {line})")
        self.key = key
        self.line = line


class UniqueKeyLoader(BoundedLoader):
    """The package's bounded safe loader (:class:`~keltis_env.yaml_files.BoundedLoader`:
    no alias bombs), refusing a mapping that gives a key twice (keys brought in by a ``<<``
    merge may be overridden, as YAML intends)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if duplicate:
                raise DuplicateKeyError(key, key_node.start_mark.line + 1)
        return super().construct_mapping(node, deep=deep)


#: The shipped configs that lived directly under ``configs/`` before each moved into the
#: folder of the command that reads it: file name -> that folder. Recorded commands and
#: dated logs still name the old paths, so a missing file there is refused naming the new one.
MOVED = {
    **dict.fromkeys(("default.yaml", "main.yaml", "scratch.yaml", "scratch_dice.yaml", "smoke.yaml"), "train"),
    **dict.fromkeys(("exit_2p.yaml", "exit_2p_both.yaml", "exit_dice_2p.yaml", "exit_scratch_2p.yaml",
                     "exit_tiny.yaml"), "exit"),
    # rllib_warm_2p.yaml named backend: rllib in python -m training.train's keys; configs/rllib/ holds
    # the same run in the RLlib command's own keys
    **dict.fromkeys(("rllib_2p.yaml", "rllib_warm_2p.yaml"), "rllib"),
}
#: the command that reads the configs of each folder of ``configs/``
READERS = {"train": "python -m training.train", "exit": "python -m training.exit", "rllib": "python -m training.rllib",
           "recipes": "python -m training.recipe", "zero": "python -m training.zero"}


def moved_to(path: str | Path) -> str | None:
    """The path a config has moved to when ``path`` names one of :data:`MOVED` at its earlier
    place (``configs/main.yaml``, however it is prefixed: ``../configs/main.yaml`` gives
    ``../configs/train/main.yaml``); else None."""
    given = Path(path)
    if given.parent.name != "configs" or given.name not in MOVED:
        return None
    return (given.parent / MOVED[given.name] / given.name).as_posix()


def check_moved(path: str | Path, what: str = "config file") -> None:
    """A :class:`ConfigError` when ``path`` does not exist (nor ships) and names a config at
    its earlier place, saying where it is now."""
    new = moved_to(path)
    if new is not None and not find_file(path).is_file():
        reader = READERS[MOVED[Path(path).name]]
        raise ConfigError(f"{what} {str(path)!r} has moved: it is {new} now, which {reader} reads")


def read_yaml(text: str) -> Any:
    """The YAML document ``text`` (safe types only; a repeated key is an error, and so is a
    document its aliases expand past :data:`MAX_YAML_VALUES` values)."""
    return load_yaml(text, UniqueKeyLoader)


def read_yaml_file(path: str | Path, what: str = "config") -> Any:
    """The YAML document in the file ``path`` (:func:`read_yaml`), read only when it is a
    regular file of at most :data:`MAX_YAML_BYTES` (a FIFO, a device or a huge file is
    refused before it is read); a :class:`ConfigError` naming ``what`` and the file for
    anything that cannot be read or is not YAML."""
    shown = f"{what} {str(path)!r}"
    try:
        data = read_bounded(path, MAX_YAML_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{what} file {str(path)!r} not found") from None
    except NotRegularFileError:
        raise ConfigError(f"{shown} is not a regular file; give a YAML file") from None
    except FileTooLargeError as exc:
        size = f"{exc.size:,} bytes" if exc.size is not None else f"over {MAX_YAML_BYTES:,} bytes"
        raise ConfigError(f"{shown} is {size}; a config file may have at most {MAX_YAML_BYTES:,}") from None
    except OSError as exc:
        raise ConfigError(f"{shown} cannot be read: {exc.strerror or exc}") from None
    try:
        return read_yaml(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown} is not UTF-8 text: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{shown} is not valid YAML: {yaml_problem(exc)}") from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error on one line."""
    if isinstance(exc, DuplicateKeyError):
        return f"{exc.problem}; give each key once"
    return " ".join(str(exc).split())


def option(default: Any, help: str, **checks: Any) -> Any:
    """A config field: its default, a one-line help, and its checks (choices, lo, lo_open, hi;
    ``path=True``: a file path, found as :func:`find_file` finds it)."""
    return field(default=default, metadata={"help": help, **checks})


def yaml_key(name: str) -> str:
    """A field's key in YAML (``lambda_`` is written ``lambda``)."""
    return name.rstrip("_")


def load(cls: type, path: str | Path | None, overrides: list[str] | tuple[str, ...] = (),
         renamed: Mapping[str, str] | None = None, removed: Mapping[str, str] | None = None) -> Any:
    """The config ``cls`` read from the YAML file ``path`` (following ``base:``; ``None``:
    every default), then ``overrides`` (``"section.key=value"``), built and type-checked.
    ``renamed`` maps keys of earlier versions to what they are now: a file or override
    that gives one is refused with the new name, and one of ``removed`` with why it is gone
    (:func:`check_renamed`)."""
    data = {} if path is None else read_with_base(Path(path), sections(cls))
    check_renamed(data, renamed or {}, f"config {str(path)!r}", removed)
    for item in overrides:
        apply_override(data, item)
        check_renamed(data, renamed or {}, f"--set {item.partition('=')[0].strip()}", removed)
    return build(cls, data)


def _dotted(data: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted keys of the nested mapping ``data`` (sections and their keys)."""
    out = []
    for key, value in data.items():
        out.append(f"{prefix}{key}")
        if isinstance(value, Mapping):
            out += _dotted(value, f"{prefix}{key}.")
    return out


def check_renamed(data: Mapping[str, Any], renamed: Mapping[str, str], where: str,
                  removed: Mapping[str, str] | None = None) -> None:
    """Refuse a key of an earlier version: one of ``renamed``, naming what it is now, or one
    of ``removed``, saying why it is gone."""
    for key in _dotted(data):
        if key in renamed:
            raise ConfigError(f"{where}: {key} is no longer a key; it is {renamed[key]} now")
        if removed and key in removed:
            raise ConfigError(f"{where}: {key} is no longer a key: {removed[key]}")


def translate_renamed(data: dict[str, Any], moves: Mapping[str, str | None]) -> dict[str, Any]:
    """``data`` (the resolved ``config.yaml`` of a run folder made by an earlier version) with
    every key of ``moves`` moved to its new dotted key (``None``: dropped). A key already at
    its new place wins over an old one moved there."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for old, new in moves.items():
        *path, last = old.split(".")
        node: Any = out
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or last not in node:
            continue
        value = node.pop(last)
        if new is None:
            continue
        *path, last = new.split(".")
        target = out
        for part in path:
            target = target.setdefault(part, {})
        target.setdefault(last, value)
    return out


def sections(cls: type) -> tuple[str, ...]:
    """The keys of ``cls`` that are sections (their values merge key by key over a base)."""
    hints = typing.get_type_hints(cls)
    return tuple(yaml_key(f.name) for f in dataclasses.fields(cls) if dataclasses.is_dataclass(hints[f.name]))


def find_file(path: str | Path) -> Path:
    """``path`` when it exists from the working folder (or is absolute); else the file the package
    ships at that repository path (``configs/...``, ``policies/...``, ``benchmarks/...``: see
    :func:`keltis_env.data.resolve`); else ``path`` as given, for the caller's "not found"."""
    from keltis_env.data import resolve

    return resolve(path)


def _base_file(path: Path, base: str) -> Path:
    """The file that ``base:`` in the config file ``path`` names: relative to that file, else a
    repository path (from the working folder, else shipped); a :class:`ConfigError` naming
    where it was looked for when it is none of them."""
    beside = path.parent / base
    if beside.is_file():
        return beside
    found = find_file(base)
    if found.is_file():
        return found
    check_moved(base, f"config {str(path)!r}: its base file")
    raise ConfigError(f"config {str(path)!r}: its base file {base!r} is not found (looked for {str(beside)!r}, "
                      f"{base!r} in the working folder and the package's shipped {base!r})")


def read_with_base(path: Path, section_keys: tuple[str, ...], seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The mapping in the YAML file ``path`` (:func:`find_file`: a shipped config by its
    repository path too) merged over the files its ``base:`` names."""
    check_moved(path)
    path = find_file(path)
    if not path.exists():  # a folder, FIFO or device: refused by read_yaml_file
        raise ConfigError(f"config file {str(path)!r} not found")
    resolved = path.resolve()
    if resolved in seen:
        raise ConfigError(f"config {str(path)!r}: 'base' files form a cycle")
    data = read_yaml_file(path)
    if data is None:
        raise ConfigError(f"config {str(path)!r} is empty (no keys); give at least one key, or {{}} for every "
                          "default")
    if not isinstance(data, dict):
        raise ConfigError(f"config {str(path)!r} must be a mapping of keys to values, got {type(data).__name__}")
    base = data.pop("base", None)
    if base is None:
        return data
    if not isinstance(base, str):
        raise ConfigError(f"config {str(path)!r}: base must be a file name, got {base!r}")
    merged = read_with_base(_base_file(path, base), section_keys, (*seen, resolved))
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key in section_keys:
            merged[key].update(value)
        else:
            merged[key] = value
    return merged


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply ``"a.b.c=value"`` (value in YAML syntax) to the nested dict ``data``."""
    key, eq, text = item.partition("=")
    key = key.strip()
    if not eq or not key:
        raise ConfigError(f"bad override {item!r}; expected key=value, e.g. ppo.learning_rate=1e-4")
    try:
        value = read_yaml(text) if text.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override {key}: cannot read value {text!r}: {yaml_problem(exc)}") from None
    parts = key.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"override {key}: {'.'.join(parts[: i + 1])} is not a section")
        node = child
    node[parts[-1]] = value


def build(cls: type, data: Any, prefix: str = "", base: Any = None) -> Any:
    """``cls`` built from the mapping ``data``: every key known, every value of its field's
    type and within its checks; a missing key keeps its default (``base``'s value where
    given: a section whose defaults are not its class's, as ``fit`` of expert iteration)."""
    where = prefix.rstrip(".") or "the config"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where} must be a mapping, got {data!r}")
    fields = {yaml_key(f.name): f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise ConfigError(
            f"unknown key {prefix + str(unknown[0])!r} in {where}; allowed keys: {', '.join(fields)}"
        )
    values = {}
    for name, value in data.items():
        f = fields[name]
        hint = hints[f.name]
        key = f"{prefix}{name}"
        if dataclasses.is_dataclass(hint):
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
            values[f.name] = build(typing.cast(type, hint), value, f"{key}.", default)
        else:
            values[f.name] = check_value(key, value, hint, f.metadata)
    for name, f in fields.items():  # a default file path: shipped by the package when it is not here
        if name not in data and f.metadata.get("path"):
            default = getattr(base, f.name) if base is not None else f.default
            if isinstance(default, str) and default:
                values[f.name] = str(find_file(default))
    return dataclasses.replace(base, **values) if base is not None else cls(**values)


def check_value(key: str, value: Any, hint: Any, meta: Mapping[str, Any]) -> Any:
    """``value`` as the type ``hint`` of the key ``key`` wants, within ``meta``'s checks."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if value is None:
            return None
        hint = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, got {value!r}")
        return value
    if hint is int:
        value = as_int(key, value)
        check_range(key, value, {"lo": -MAX_INTEGER, "hi": MAX_INTEGER, **meta})  # no key needs more
        return value
    if hint is float:
        value = as_float(key, value)
        check_range(key, value, meta)
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r}")
        choices = meta.get("choices")
        if choices and value not in choices:
            raise ConfigError(f"{key} must be one of {', '.join(choices)}; got {value!r}")
        return str(find_file(value)) if meta.get("path") and value else value
    if origin is list:
        (item,) = args
        if not isinstance(value, list):
            raise ConfigError(f"{key} must be a list, got {value!r}")
        return [check_value(f"{key}[{i}]", v, item, {"lo": 1} if item is int else {}) for i, v in enumerate(value)]
    if origin is dict:
        _, item = args
        if not isinstance(value, dict):
            raise ConfigError(f"{key} must be a mapping, got {value!r}")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or not k:
                raise ConfigError(f"{key} keys must be non-empty strings, got {k!r}")
            out[k] = v if item is Any else check_value(f"{key}.{k}", v, item, {"lo": 0.0} if item is float else {})
        return out
    raise ConfigError(f"{key}: unsupported type {hint!r}")  # pragma: no cover - a bug in a config schema


_MAX_EXACT_FLOAT = 2**53  # every integer up to this is exact as a float
#: the largest integer any key takes (one without a bound of its own too): exact as a float,
#: within 64 bits, so that no count overflows numpy, torch or a progress bar
MAX_INTEGER = _MAX_EXACT_FLOAT


def as_int(key: str, value: Any) -> int:
    """An integer however YAML read it: ``3000000``, ``3_000_000`` (int), ``3.0e6`` (float)
    or ``3e6`` (a string: YAML 1.1 wants a dot in a float); only exact integers pass."""
    if isinstance(value, bool):
        raise ConfigError(f"{key} must be an integer, got {value!r}")
    if isinstance(value, int):
        return value
    exact: decimal.Decimal | None = None
    if isinstance(value, float):
        if value == value and abs(value) < _MAX_EXACT_FLOAT:
            exact = decimal.Decimal(value)
    elif isinstance(value, str):
        try:
            exact = decimal.Decimal(value.strip())  # accepts 3e6, 3_000_000, 3.0E+6
        except decimal.InvalidOperation:
            exact = None
    if exact is None or not exact.is_finite():
        raise ConfigError(f"{key} must be an integer (e.g. 3000000, 3_000_000 or 3e6), got {value!r}")
    if exact != exact.to_integral_value():
        raise ConfigError(f"{key} must be an integer, got {value!r}: it is not a whole number")
    return int(exact)


def as_float(key: str, value: Any) -> float:
    """A finite number however YAML read it (``3e-4`` is a string in YAML 1.1); NaN, the
    infinities and integers too large for a float are refused."""
    read = value
    if isinstance(value, str):
        try:
            read = float(value)
        except ValueError:
            raise ConfigError(f"{key} must be a number, got {value!r}") from None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key} must be a number, got {value!r}")
    number = as_finite(read)
    if number is None:
        raise ConfigError(f"{key} must be a finite number, got {value!r} (nan and infinite values are not allowed)")
    return number


def check_range(key: str, value: float, meta: Mapping[str, Any]) -> None:
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is not None and (value <= lo if meta.get("lo_open") else value < lo):
        raise ConfigError(f"{key} must be {'>' if meta.get('lo_open') else '>='} {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise ConfigError(f"{key} must be <= {hi}, got {value!r}")


def to_dict(config: Any) -> Any:
    """``config`` as the nested mapping its YAML file holds (keys as written in YAML)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {yaml_key(f.name): to_dict(getattr(config, f.name)) for f in dataclasses.fields(config)}
    return config


class SavedConfig:
    """A run's config dataclass as its run folder saves it (``config.yaml``)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = to_dict(self)
        return out

    def to_yaml(self) -> str:
        return str(yaml.safe_dump(self.to_dict(), sort_keys=False))


def describe(cls: type) -> str:
    """Every key of ``cls`` with its default, its choices and its help, one per line."""
    lines = []

    def walk(c: Any, prefix: str) -> None:
        hints = typing.get_type_hints(type(c))
        for f in dataclasses.fields(c):
            default = getattr(c, f.name)
            if dataclasses.is_dataclass(hints[f.name]):
                walk(default, f"{prefix}{yaml_key(f.name)}.")
                continue
            extra = f" [{', '.join(f.metadata['choices'])}]" if f.metadata.get("choices") else ""
            lines.append(f"{prefix}{yaml_key(f.name)} = {default!r}{extra}: {f.metadata.get('help', '')}")

    walk(cls(), "")
    return "\n".join(lines)


__all__ = [
    "MAX_INTEGER",
    "MAX_YAML_BYTES",
    "MAX_YAML_VALUES",
    "MOVED",
    "READERS",
    "ConfigError",
    "DuplicateKeyError",
    "SavedConfig",
    "UniqueKeyLoader",
    "YamlTooLargeError",
    "apply_override",
    "as_float",
    "as_int",
    "build",
    "check_moved",
    "check_range",
    "check_renamed",
    "check_value",
    "describe",
    "expanded_size",
    "find_file",
    "load",
    "moved_to",
    "option",
    "read_with_base",
    "read_yaml",
    "read_yaml_file",
    "sections",
    "to_dict",
    "translate_renamed",
    "yaml_key",
    "yaml_problem",
]
