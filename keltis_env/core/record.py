"""Game records: set-up, options and the list of decisions; replaying reproduces a game.

:class:`Record` is written for any game whose state class offers ``new_game(config,
seed)``, ``from_dict``, ``apply``, ``scores()``, ``is_over`` and ``end``: a game plugs in
by subclassing it (its ``GameRecord``), setting the class attributes ``GAME``,
``state_cls`` and ``config_cls`` and overriding the static methods ``action_to_string``
and ``string_to_action``. Standard library only.

The JSON form (``format: "keltis-record"``, ``version: 1``)::

    {"format": "keltis-record", "version": 1, "game": "keltis" | <other game>,
     "options": {...}, "setup": {"seed": 7} | {"state": {...state dict...}},
     "actions": ["play red 3", "draw deck", ...], "final_scores": [..] | null,
     "end": "goal" | "deck" | "truncated" | null, "players": ["heuristic", ...] | null}

``final_scores`` and ``end`` are written for information; replaying recomputes them and
:meth:`Record.replay` refuses a record whose stored result disagrees.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .errors import RecordError

RECORD_FORMAT = "keltis-record"
RECORD_VERSION = 1


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
    start_state: dict[str, Any] | None = None
    actions: list[int] = field(default_factory=list)
    players: list[str] | None = None

    def __post_init__(self) -> None:
        if (self.seed is None) == (self.start_state is None):
            raise RecordError("a record starts from exactly one of a seed or an explicit state")

    @classmethod
    def start(cls, config: Any, seed: int, players: list[str] | None = None) -> tuple[Record, Any]:
        """A new seeded game and the (empty) record that follows it."""
        return cls(config=config, seed=seed, players=players), cls.state_cls.new_game(config, seed)

    def initial_state(self) -> Any:
        if self.start_state is not None:
            try:
                state = self.state_cls.from_dict(self.start_state)
            except ValueError as exc:
                raise RecordError(f"the record's start state is invalid: {exc}") from None
            if state.config != self.config:
                raise RecordError("the record's options differ from its start state's options")
            return state
        assert self.seed is not None
        return self.state_cls.new_game(self.config, self.seed)

    def replay(self, upto: int | None = None) -> Any:
        """The state after the first ``upto`` actions (all of them by default)."""
        state = self.initial_state()
        for i, action in enumerate(self.actions[:upto]):
            try:
                state.apply(action)
            except ValueError as exc:
                raise RecordError(f"action {i} does not replay: {exc}") from None
        return state

    def states(self) -> list[Any]:
        """Every state of the game, the initial one first."""
        state = self.initial_state()
        out = [state.clone()]
        for action in self.actions:
            state.apply(action)
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
        if not isinstance(data, Mapping) or data.get("format") != RECORD_FORMAT:
            raise RecordError(f"not a Keltis game record (expected format {RECORD_FORMAT!r})")
        if data.get("game", cls.GAME) != cls.GAME:
            raise RecordError(f"this is a record of the game {data.get('game')!r}, not {cls.GAME!r}")
        if data.get("version") != RECORD_VERSION:
            raise RecordError(
                f"record version {data.get('version')!r} is not supported; this reads version {RECORD_VERSION}"
            )
        try:
            config = cls.config_cls.from_dict(data["options"])
            setup = data["setup"]
            actions = [cls.string_to_action(a) for a in data["actions"]]
            record = cls(
                config=config,
                seed=setup.get("seed"),
                start_state=setup.get("state"),
                actions=actions,
                players=data.get("players"),
            )
            final = record.replay()
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            if isinstance(exc, RecordError):
                raise
            raise RecordError(f"malformed game record: {exc}") from None
        stored = data.get("final_scores")
        if stored is not None and stored != final.scores():
            raise RecordError(f"the record says final scores {stored}, but replaying it gives {final.scores()}")
        return record

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> Record:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise RecordError(f"no game record at {path}") from None
        except json.JSONDecodeError as exc:
            raise RecordError(f"{path} is not valid JSON: {exc}") from None
        return cls.from_dict(data)


__all__ = ["RECORD_FORMAT", "RECORD_VERSION", "Record", "RecordError"]
