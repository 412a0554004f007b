"""The toy race's rules (standard library only): a one-colour ascending-card race.

Twenty cards, values 0..9 twice, are shuffled; each of 2 to 4 players holds three. On
their turn a player either plays a card onto their own row, which must be higher than
the row's last card, or discards one; then draws the deck's top card. The game ends when
a row holds four cards (``goal``) or the deck is empty (``deck``); a game reaching
``max_turns`` turns is truncated. A player's score is the length of their row. Hands and
the deck order are hidden.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import pairwise
from typing import Any, ClassVar

from keltis_env.core.errors import ActionError, ConfigError
from keltis_env.core.record import Record
from keltis_env.core.state import TurnBasedState
from keltis_env.core.validation import (
    as_action_id,
    check_game_options,
    check_keys,
    fail_state,
    game_seed,
    state_int,
    state_list,
    state_mapping,
)

VALUES = 10
COPIES = 2
HAND_SIZE = 3
GOAL = 4
MIN_PLAYERS, MAX_PLAYERS = 2, 4
DEFAULT_MAX_TURNS = 100
NUM_ACTIONS = 2 * VALUES
ACTION_RANGES = {"play": (0, VALUES), "discard": (VALUES, 2 * VALUES)}
_KINDS = ("play", "discard")


class EndReason(IntEnum):
    NONE = 0
    GOAL = 1
    DECK = 2
    TRUNCATED = 3


def action_to_string(action: int) -> str:
    a = as_action_id(action, NUM_ACTIONS)
    if not 0 <= a < NUM_ACTIONS:
        raise ActionError(f"action ids are integers 0..{NUM_ACTIONS - 1}, got {a}")
    return f"{_KINDS[a // VALUES]} {a % VALUES}"


def string_to_action(text: str) -> int:
    kind, _, value = str(text).strip().lower().partition(" ")
    if kind not in _KINDS or not value.strip().isdigit() or not 0 <= int(value) < VALUES:
        raise ActionError(f"unknown action {text!r}; actions are 'play V' and 'discard V' with V in 0..{VALUES - 1}")
    return _KINDS.index(kind) * VALUES + int(value)


@dataclass(frozen=True)
class GameConfig:
    """Options: ``num_players`` (2 to 4) and ``max_turns`` (truncation, at least 1)."""

    num_players: int = 2
    max_turns: int = DEFAULT_MAX_TURNS

    def __post_init__(self) -> None:
        check_game_options(self, MIN_PLAYERS, MAX_PLAYERS)

    def to_dict(self) -> dict[str, Any]:
        return {"num_players": self.num_players, "max_turns": self.max_turns}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameConfig:
        if not isinstance(data, Mapping) or any(k not in ("num_players", "max_turns") for k in data):
            raise ConfigError(f"game options are num_players and max_turns, got {data!r}")
        return cls(**data)


@dataclass(frozen=True)
class PlayerView:
    """What ``seat`` may know: its own hand, every row, the discards, how many cards the
    others hold and the deck holds."""

    config: GameConfig
    player: int
    num_players: int
    current_player: int
    turn: int
    end: EndReason
    hand: tuple[int, ...]
    rows: tuple[tuple[int, ...], ...]
    discards: tuple[int, ...]
    hand_sizes: tuple[int, ...]
    deck_size: int
    legal_actions: list[int]

    @property
    def is_over(self) -> bool:
        return self.end != EndReason.NONE


class GameState(TurnBasedState):
    """A toy race in progress; the deck's top card is its last element."""

    TRUNCATED: ClassVar[IntEnum] = EndReason.TRUNCATED

    def __init__(self, config: GameConfig, hands: list[list[int]], rows: list[list[int]], discards: list[int],
                 deck: list[int], current: int, turn: int = 0, end: EndReason = EndReason.NONE) -> None:
        self.config = config
        self.num_players = config.num_players
        self.hands, self.rows, self.discards, self.deck = hands, rows, discards, deck
        self.current, self.turn, self.end = current, turn, end

    @classmethod
    def new_game(cls, config: GameConfig, seed: int) -> GameState:
        rng = random.Random(game_seed(seed))
        deck = [v for v in range(VALUES) for _ in range(COPIES)]
        rng.shuffle(deck)
        hands = [sorted(deck.pop() for _ in range(HAND_SIZE)) for _ in range(config.num_players)]
        return cls(config, hands, [[] for _ in hands], [], deck, rng.randrange(config.num_players))

    def score(self, player: int) -> int:
        return len(self.rows[player])

    def _top(self) -> int:
        row = self.rows[self.current]
        return row[-1] if row else -1

    def legal_actions(self) -> list[int]:
        if self.is_over:
            return []
        hand = set(self.hands[self.current])
        return sorted(v for v in hand if v > self._top()) + sorted(VALUES + v for v in hand)

    def illegal_reason(self, action: int) -> str | None:
        try:
            action = as_action_id(action, NUM_ACTIONS)
        except ActionError as exc:
            return str(exc)
        if not 0 <= action < NUM_ACTIONS:
            return f"action ids are integers 0..{NUM_ACTIONS - 1}, got {action}"
        if self.is_over:
            return "the game is over"
        value = action % VALUES
        if value not in self.hands[self.current]:
            return f"player {self.current} holds no {value}"
        if action < VALUES and value <= self._top():
            return f"{value} is not higher than the row's last card {self._top()}"
        return None

    def action_text(self, action: int) -> str:
        return action_to_string(action)

    def apply(self, action: int) -> None:
        if type(action) is not int:
            action = as_action_id(action, NUM_ACTIONS)
        reason = self.illegal_reason(action)
        if reason is not None:
            self.refuse(action, reason)
        a = action
        hand = self.hands[self.current]
        hand.remove(a % VALUES)
        (self.rows[self.current] if a < VALUES else self.discards).append(a % VALUES)
        if self.deck:
            hand.append(self.deck.pop())
            hand.sort()
        self.turn += 1
        if self.turn >= self.config.max_turns:
            self.end = EndReason.TRUNCATED
        elif len(self.rows[self.current]) >= GOAL:
            self.end = EndReason.GOAL
        elif not self.deck:
            self.end = EndReason.DECK
        else:
            self.current = (self.current + 1) % self.num_players

    def view(self, seat: int) -> PlayerView:
        return PlayerView(
            config=self.config, player=seat, num_players=self.num_players, current_player=self.current,
            turn=self.turn, end=self.end, hand=tuple(self.hands[seat]),
            rows=tuple(map(tuple, self.rows)), discards=tuple(sorted(self.discards)),
            hand_sizes=tuple(map(len, self.hands)), deck_size=len(self.deck),
            legal_actions=self.legal_actions() if seat == self.current else [],
        )

    def clone(self) -> GameState:
        return GameState(self.config, [list(h) for h in self.hands], [list(r) for r in self.rows],
                         list(self.discards), list(self.deck), self.current, self.turn, self.end)

    def to_dict(self) -> dict[str, Any]:
        return {
            "options": self.config.to_dict(), "hands": [list(h) for h in self.hands],
            "rows": [list(r) for r in self.rows], "discards": list(self.discards), "deck": list(self.deck),
            "current": self.current, "turn": self.turn, "end": self.end.name.lower() if self.end else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameState:
        keys = ("options", "hands", "rows", "discards", "deck", "current", "turn", "end")
        check_keys(state_mapping(data, "state"), keys, "the state", required=True)
        config = GameConfig.from_dict(state_mapping(data["options"], "options"))
        n = config.num_players

        def cards(value: Any, field: str) -> list[int]:
            return [state_int(v, field, 0, VALUES - 1) for v in state_list(value, field, "card values")]

        hands = [sorted(cards(h, "hands")) for h in state_list(data["hands"], "hands", "hands")]
        rows = [cards(r, "rows") for r in state_list(data["rows"], "rows", "rows")]
        if len(hands) != n or len(rows) != n:
            fail_state(f"'hands' and 'rows' need one entry per player ({n})")
        if any(len(h) > HAND_SIZE for h in hands) or any(len(r) > GOAL for r in rows):
            fail_state(f"a hand holds at most {HAND_SIZE} cards and a row at most {GOAL}")
        if any(a >= b for r in rows for a, b in pairwise(r)):
            fail_state("every row must be strictly ascending")
        discards, deck = cards(data["discards"], "discards"), cards(data["deck"], "deck")
        seen = Counter(v for part in (*hands, *rows, discards, deck) for v in part)
        if seen != Counter({v: COPIES for v in range(VALUES)}):
            fail_state(f"the cards must be the values 0..{VALUES - 1}, {COPIES} copies each")
        current = state_int(data["current"], "current", 0, n - 1)
        turn = state_int(data["turn"], "turn", 0, config.max_turns)
        names = {e.name.lower(): e for e in EndReason if e}
        if data["end"] is not None and (not isinstance(data["end"], str) or data["end"] not in names):
            fail_state(f"'end' must be null or one of {', '.join(names)}, got {data['end']!r}")
        return cls(config, hands, rows, discards, deck, current, turn, names.get(data["end"], EndReason.NONE))


class LiveView:
    """A :class:`PlayerView`'s fields read from the state without copying (for encoders
    and bots that only read, during the call)."""

    __slots__ = ("_state", "player")

    def __init__(self, state: GameState, seat: int) -> None:
        self._state, self.player = state, seat

    config = property(lambda self: self._state.config)
    num_players = property(lambda self: self._state.num_players)
    current_player = property(lambda self: self._state.current)
    turn = property(lambda self: self._state.turn)
    end = property(lambda self: self._state.end)
    is_over = property(lambda self: self._state.is_over)
    hand = property(lambda self: self._state.hands[self.player])
    rows = property(lambda self: self._state.rows)
    discards = property(lambda self: self._state.discards)
    hand_sizes = property(lambda self: [len(h) for h in self._state.hands])
    deck_size = property(lambda self: len(self._state.deck))

    @property
    def legal_actions(self) -> list[int]:
        return self._state.legal_actions() if self.player == self._state.current else []


def live_view(state: GameState, seat: int) -> LiveView:
    return LiveView(state, seat)


def sample_state(view: PlayerView, rng: random.Random) -> GameState:
    """A state consistent with ``view``: the others' hands and the deck redrawn."""
    unseen = Counter({v: COPIES for v in range(VALUES)})
    unseen.subtract([*view.hand, *view.discards, *(v for r in view.rows for v in r)])
    pool = sorted(unseen.elements())
    rng.shuffle(pool)
    hands: list[list[int]] = []
    for p, size in enumerate(view.hand_sizes):
        if p == view.player:
            hands.append(list(view.hand))
        else:
            hands.append(sorted(pool[:size]))
            pool = pool[size:]
    return GameState(view.config, hands, [list(r) for r in view.rows], list(view.discards), pool,
                     view.current_player, view.turn, view.end)


def board_text(state: GameState, show_hands: Sequence[int] | int | str | None = None) -> str:
    """The rows, the discards and the deck; hands shown for ``show_hands`` ("all", a seat)."""
    status = f"game over ({state.end.name.lower()})" if state.is_over else f"player {state.current} to play"
    lines = [f"Toy race, {state.num_players} players | turn {state.turn} | {status} | deck {len(state.deck)}",
             f"discards: {' '.join(map(str, sorted(state.discards))) or '-'}"]
    for p in range(state.num_players):
        shown = show_hands == "all" or show_hands == p
        hand = " ".join(map(str, state.hands[p])) if shown else "*" * len(state.hands[p])
        lines.append(f"player {p}: row {' '.join(map(str, state.rows[p])) or '-'} | hand {hand}")
    return "\n".join(lines)


class GameRecord(Record):
    """How a toy race started and every decision made in it."""

    GAME: ClassVar[str] = "toy"
    state_cls: ClassVar[Any] = GameState
    config_cls: ClassVar[Any] = GameConfig

    @staticmethod
    def action_to_string(action: int) -> str:
        return action_to_string(action)

    @staticmethod
    def string_to_action(text: str) -> int:
        return string_to_action(text)
