"""Game records: set-up, options and the list of decisions; replaying reproduces a game.

:class:`Record` is written for any game whose state class offers ``new_game(config,
seed)``, ``from_dict``, ``apply``, ``scores()``, ``is_over`` and ``end``: a game plugs in
by subclassing it (its ``GameRecord``), setting the class attributes ``GAME``,
``state_cls`` and ``config_cls``, and its action codec as the static methods
``action_to_string`` and ``string_to_action``. Standard library only.

The JSON form (``format: "keltis-record"``, ``version: 1``)::

    {"format": "keltis-record", "version": 1, "game": "keltis" | <other game>,
     "options": {...}, "setup": {"seed": 7} | {"state": {...state dict...}},
     "actions": ["play red 3", "draw deck", ...], "final_scores": [..] | null,
     "end": "goal" | "deck" | "truncated" | null, "players": ["heuristic", ...] | null}

``format``, ``version``, ``options``, ``setup`` and ``actions`` are required; ``game``,
``players``, ``final_scores`` and ``end`` may be left out. ``final_scores`` and ``end``
are written for information; reading a record replays it and refuses one whose stored
result disagrees. Every refusal is a :class:`RecordError` naming the field (e.g.
``actions[3]``) and what is allowed.

A record file is read by :func:`read_record_json` alone, bounded: only a regular file (a
FIFO or a device such as ``/dev/zero`` is refused before anything is read) of at most
:data:`MAX_RECORD_BYTES` (the server's limit too), whose numbers have at most
:data:`MAX_NUMBER_DIGITS` digits and whose text is valid Unicode (no lone surrogate such
as ``"\ud800"``, which no terminal or file can write).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .errors import RecordError

RECORD_FORMAT = "keltis-record"
RECORD_VERSION = 1
#: the keys of a record dict, in to_dict's order, and those it must have
RECORD_KEYS = ("format", "version", "game", "options", "setup", "actions", "players", "final_scores", "end")
REQUIRED_KEYS = ("format", "version", "options", "setup", "actions")
SETUP_KEYS = ("seed", "state")
#: the largest record file read (bytes; ``keltis serve`` reads no larger one either), and the
#: most digits of a number in it (a seed has at most 20)
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_NUMBER_DIGITS = 40


def _bounded_int(text: str) -> int:
    """``json.loads``' hook for integers: one with more than :data:`MAX_NUMBER_DIGITS` digits
    is refused before it is converted (Python refuses 4,300 digits with a bare ``ValueError``)."""
    digits = len(text.lstrip("-"))
    if digits > MAX_NUMBER_DIGITS:
        raise RecordError(f"it holds a number of {digits:,} digits; a record's numbers have at most "
                          f"{MAX_NUMBER_DIGITS}")
    return int(text)


def _check_text(value: Any, where: str = "the record") -> None:
    """Refuse a lone surrogate in any string (key or value) of the JSON ``value``, naming where."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = ord(item[exc.start])
                raise RecordError(f"{at} holds a lone surrogate (\\u{bad:04x}), which is not text; a record's "
                                  "strings must be valid Unicode") from None
        elif isinstance(item, Mapping):
            for key, child in item.items():
                stack.append((key, f"a key of {at}"))
                stack.append((child, f"{at}.{key}" if at != where else str(key)))
        elif isinstance(item, list):
            stack.extend((child, f"{at}[{i}]") for i, child in enumerate(item))


def read_record_json(path: str | Path) -> Any:
    """The JSON of the game record file ``path``, read bounded; a one-line
    :class:`RecordError` for a missing or unreadable file, one that is not a regular file or
    is larger than :data:`MAX_RECORD_BYTES`, bytes that are not UTF-8 JSON, a number of more
    than :data:`MAX_NUMBER_DIGITS` digits, a lone surrogate, or nesting too deep."""
    from .input_files import FileTooLargeError, NotRegularFileError, read_bounded

    if str(path) == "":
        raise RecordError("the record path is empty; give a game record (a JSON file)")
    try:
        data = read_bounded(path, MAX_RECORD_BYTES)
    except FileNotFoundError:
        raise RecordError(f"no game record at {path}") from None
    except (IsADirectoryError, NotRegularFileError) as exc:
        if isinstance(exc, IsADirectoryError) or exc.folder:
            raise RecordError(f"{path} is a folder, not a game record; give a record file (JSON)") from None
        raise RecordError(f"{path} is not a regular file (a pipe or a device); give a record file (JSON)") from None
    except FileTooLargeError as exc:
        size = f"{exc.size:,} bytes" if exc.size is not None else f"over {MAX_RECORD_BYTES:,} bytes"
        raise RecordError(f"{path} is {size}; a game record may have at most {MAX_RECORD_BYTES:,}") from None
    except OSError as exc:
        raise RecordError(f"cannot read the game record {path}: {exc.strerror or exc}") from None
    try:
        parsed = json.loads(data.decode("utf-8"), parse_int=_bounded_int)
    except RecordError as exc:
        raise RecordError(f"{path} is not a game record: {exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RecordError(f"{path} is not a JSON game record: {exc}") from None
    except RecursionError:
        raise RecordError(f"{path} is not a game record: its JSON is nested too deeply") from None
    except ValueError as exc:  # a float or integer Python cannot convert
        raise RecordError(f"{path} is not a game record: {exc}") from None
    try:
        _check_text(parsed)
    except RecordError as exc:
        raise RecordError(f"{path}: {exc}") from None
    return parsed


@dataclass
class Record:
    """How a game started and every decision made in it."""

    #: set by each game's subclass: its registered name, state and config classes
    GAME: ClassVar[str]
    state_cls: ClassVar[Any]
    config_cls: ClassVar[Any]

    @staticmethod
    def action_to_string(action: int) -> str:
        """Readable form of an action of this game (subclasses override)."""
        raise NotImplementedError

    @staticmethod
    def string_to_action(text: str) -> int:
        """Action id of a readable action of this game (subclasses override)."""
        raise NotImplementedError

    config: Any
    seed: int | None = None
    start_state: Mapping[str, Any] | None = None
    actions: list[int] = field(default_factory=list)
    players: list[str] | None = None

    def __post_init__(self) -> None:
        if (self.seed is None) == (self.start_state is None):
            raise RecordError("a record starts from exactly one of a seed or an explicit state")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise RecordError(f"a record's seed must be an integer, got {self.seed!r}")
        if self.start_state is not None and not isinstance(self.start_state, Mapping):
            raise RecordError(f"a record's start state must be a state dict, got {type(self.start_state).__name__}")

    @classmethod
    def start(cls, config: Any, seed: int, players: list[str] | None = None) -> tuple[Record, Any]:
        """A new seeded game and the (empty) record that follows it."""
        return cls(config=config, seed=seed, players=players), cls.state_cls.new_game(config, seed)

    def initial_state(self) -> Any:
        if self.start_state is not None:
            try:
                state = self.state_cls.from_dict(self.start_state)
            except ValueError as exc:
                raise RecordError(f"the record's start state (setup.state) is invalid: {exc}") from None
            if state.config != self.config:
                raise RecordError("the record's options differ from its start state's options")
            return state
        assert self.seed is not None
        return self.state_cls.new_game(self.config, self.seed)

    def _check_upto(self, upto: object) -> int:
        """``upto`` as a number of actions, 0..len(actions)."""
        total = len(self.actions)
        if upto is None:
            return total
        if isinstance(upto, bool) or not hasattr(upto, "__index__") or not 0 <= operator.index(upto) <= total:
            raise RecordError(
                f"upto counts the record's actions to replay: an integer from 0 to {total}, got {upto!r}"
            )
        return operator.index(upto)

    def _apply(self, state: Any, i: int) -> None:
        action = self.actions[i]
        try:
            state.apply(action)
        except ValueError as exc:
            raise RecordError(f"actions[{i}] does not replay: {exc}") from None

    def replay(self, upto: int | None = None) -> Any:
        """The state after the first ``upto`` actions (all of them by default); ``upto``
        must be an integer from 0 to ``len(actions)``."""
        count = self._check_upto(upto)
        state = self.initial_state()
        for i in range(count):
            self._apply(state, i)
        return state

    def states(self) -> list[Any]:
        """Every state of the game, the initial one first."""
        state = self.initial_state()
        out = [state.clone()]
        for i in range(len(self.actions)):
            self._apply(state, i)
            out.append(state.clone())
        return out

    def to_dict(self) -> dict[str, Any]:
        final = self.replay()
        return {
            "format": RECORD_FORMAT,
            "version": RECORD_VERSION,
            "game": self.GAME,
            "options": self.config.to_dict(),
            "setup": {"seed": self.seed} if self.seed is not None else {"state": self.start_state},
            "actions": [self.action_to_string(a) for a in self.actions],
            "players": self.players,
            "final_scores": final.scores() if final.is_over else None,
            "end": final.end.name.lower() if final.is_over else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Record:
        """Read and replay a record; a :class:`RecordError` names what is wrong."""
        if not isinstance(data, Mapping) or data.get("format") != RECORD_FORMAT:
            raise RecordError(f"not a Keltis game record (expected format {RECORD_FORMAT!r})")
        if data.get("game", cls.GAME) != cls.GAME:
            raise RecordError(f"this is a record of the game {data.get('game')!r}, not {cls.GAME!r}")
        if data.get("version") != RECORD_VERSION:
            raise RecordError(
                f"record version {data.get('version')!r} is not supported; this reads version {RECORD_VERSION}"
            )
        unknown = sorted(str(k) for k in data if k not in RECORD_KEYS)
        if unknown:
            raise RecordError(f"unknown key(s) {unknown} in the record; allowed keys are {', '.join(RECORD_KEYS)}")
        missing = [k for k in REQUIRED_KEYS if k not in data]
        if missing:
            raise RecordError(
                f"the record lacks the key(s) {', '.join(missing)}; a record needs {', '.join(REQUIRED_KEYS)} "
                "(game, players, final_scores and end are optional)"
            )
        try:
            config = cls.config_cls.from_dict(data["options"])
        except ValueError as exc:
            raise RecordError(f"the record's options are invalid: {exc}") from None
        seed, start_state = cls._read_setup(data["setup"])
        record = cls(
            config=config,
            seed=seed,
            start_state=start_state,
            actions=cls._read_actions(data["actions"]),
            players=cls._read_players(data.get("players"), config.num_players),
        )
        final = record.replay()
        stored = data.get("final_scores")
        if stored is not None and (not final.is_over or stored != final.scores()):
            got = final.scores() if final.is_over else "a game that is not over"
            raise RecordError(f"the record says final scores {stored!r}, but replaying it gives {got}")
        end = data.get("end")
        expected = final.end.name.lower() if final.is_over else None
        if end is not None and end != expected:
            raise RecordError(f"the record says the game ended by {end!r}, but replaying it gives {expected!r}")
        return record

    @staticmethod
    def _read_setup(setup: Any) -> tuple[int | None, Mapping[str, Any] | None]:
        if not isinstance(setup, Mapping) or len(setup) != 1 or next(iter(setup)) not in SETUP_KEYS:
            got = sorted(map(str, setup)) if isinstance(setup, Mapping) else repr(setup)
            raise RecordError(
                f"the record's setup must be {{'seed': <integer>}} or {{'state': <state dict>}}, got {got}"
            )
        seed, state = setup.get("seed"), setup.get("state")
        if "seed" in setup and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise RecordError(f"setup.seed must be an integer, got {seed!r}")
        if "state" in setup and not isinstance(state, Mapping):
            raise RecordError(f"setup.state must be a state dict, got {type(state).__name__}")
        return seed, state

    @classmethod
    def _read_actions(cls, actions: Any) -> list[int]:
        example = cls.action_to_string(0)
        if not isinstance(actions, list):
            raise RecordError(f"the record's actions must be a list of actions such as {example!r}, got {actions!r}")
        out = []
        for i, text in enumerate(actions):
            if not isinstance(text, str):
                raise RecordError(
                    f"actions[{i}] must be an action written as text, such as {example!r}, "
                    f"got {text!r} ({type(text).__name__})"
                )
            try:
                out.append(cls.string_to_action(text))
            except ValueError as exc:
                raise RecordError(f"actions[{i}]: {exc}") from None
        return out

    @staticmethod
    def _read_players(players: Any, num_players: int) -> list[str] | None:
        if players is None:
            return None
        if (
            not isinstance(players, list)
            or len(players) != num_players
            or not all(isinstance(name, str) for name in players)
        ):
            raise RecordError(f"the record's players must be null or a list of {num_players} names, got {players!r}")
        return list(players)

    def save(self, path: str | Path) -> None:
        """Write the record as JSON, atomically (:mod:`keltis_env.core.output_files`)."""
        from .output_files import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> Record:
        """The record in the file ``path`` (:func:`read_record_json`), checked and replayed."""
        data = read_record_json(path)
        try:
            return cls.from_dict(data)
        except RecursionError:
            raise RecordError(f"{path} is not a game record: it is nested too deeply") from None


__all__ = ["MAX_NUMBER_DIGITS", "MAX_RECORD_BYTES", "RECORD_FORMAT", "RECORD_KEYS", "RECORD_VERSION", "Record",
           "RecordError", "read_record_json"]
