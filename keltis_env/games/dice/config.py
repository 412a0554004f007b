"""Options of a dice game (docs/rules.md R11) as one validated, immutable object."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from keltis_env.core.errors import ConfigError
from keltis_env.core.validation import check_game_options, check_option_names

from .constants import (
    BONUS_CODES,
    BONUS_NAMES,
    BONUS_SYMBOLS,
    BONUSES_PER_COLUMN,
    CLOVER,
    DEFAULT_BONUS_SQUARES,
    DEFAULT_MAX_TURNS,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NO_BONUS,
    NUM_COLORS,
    RANDOM_BONUS_ROWS,
    TOP_ROW,
    max_decisions_per_turn,
)

#: Bonus layouts accepted by name; anything else must be an explicit layout.
LAYOUT_NAMES = ("default", "random")
_OPTIONS = ("num_players", "bonus_layout", "max_turns")
_LAYOUT_HELP = (
    "'default', 'random', or an explicit layout: 5 columns (red..pink), each a mapping "
    "row (1..9) -> 'stone' | 'clover' | 'extra', or a list of 9 such names or None for rows 1..9"
)

Board = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class GameConfig:
    """Options of one dice game.

    Attributes:
        num_players: 2, 3 or 4 (R11).
        bonus_layout: where the bonus squares are (R11): ``"default"`` (the layout of
            R11), ``"random"`` (the default's symbol counts, 6 stones, 5 clovers and 4
            extra turns, 3 per column on distinct rows 2..8, drawn from the game's seed),
            or an explicit layout: 5 columns (red, yellow, green, blue, pink), each a
            mapping ``{row: symbol}`` or a list of 9 entries for rows 1..9, symbols
            ``"stone"``, ``"clover"``, ``"extra"`` (or ``None`` for a plain square). An
            explicit layout is stored as 5 tuples of 10 symbol codes (index 0 unused).
        max_turns: the game is truncated after this many turns (R11, as in R8), counting
            every player's turns and extra turns together. Must be at least 1.
    """

    num_players: int = 2
    bonus_layout: str | Board = "default"
    max_turns: int = DEFAULT_MAX_TURNS

    def __post_init__(self) -> None:
        check_game_options(self, MIN_PLAYERS, MAX_PLAYERS)
        layout = self.bonus_layout
        if isinstance(layout, str):
            if layout not in LAYOUT_NAMES:
                raise ConfigError(f"bonus_layout must be {_LAYOUT_HELP}; got {layout!r}")
        else:
            object.__setattr__(self, "bonus_layout", parse_layout(layout))

    def bonus_squares(self, rng: Any | None = None) -> Board:
        """``board[column][row]``: the bonus code of every square (index 0 unused).

        ``rng`` (a ``random.Random``) draws the random layout.
        """
        layout = self.bonus_layout
        if layout == "default":
            return DEFAULT_BONUS_SQUARES
        if layout == "random":
            if rng is None:
                raise ConfigError("a random bonus layout needs the game's random generator")
            symbols = list(BONUS_SYMBOLS)
            rng.shuffle(symbols)
            board = []
            for c in range(NUM_COLORS):
                rows = [NO_BONUS] * (TOP_ROW + 1)
                picked = sorted(rng.sample(RANDOM_BONUS_ROWS, BONUSES_PER_COLUMN))
                for i, row in enumerate(picked):
                    rows[row] = symbols[c * BONUSES_PER_COLUMN + i]
                board.append(tuple(rows))
            return tuple(board)
        assert not isinstance(layout, str)
        return layout

    def max_decisions_per_turn(self) -> int:
        """The most decisions one turn can take with this layout (see constants)."""
        layout = self.bonus_layout
        clovers = BONUS_SYMBOLS.count(CLOVER) if isinstance(layout, str) else sum(c.count(CLOVER) for c in layout)
        return max_decisions_per_turn(clovers)

    def to_dict(self) -> dict[str, Any]:
        layout = self.bonus_layout
        return {
            "num_players": self.num_players,
            "bonus_layout": layout if isinstance(layout, str) else layout_to_lists(layout),
            "max_turns": self.max_turns,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameConfig:
        return cls(**check_option_names(data, _OPTIONS))


def layout_to_lists(board: Board) -> list[list[str | None]]:
    """The JSON-safe form of a board: per column, the symbol name (or None) of rows 1..9."""
    return [[BONUS_NAMES.get(code) for code in column[1:]] for column in board]


def parse_layout(layout: Any) -> Board:
    """An explicit layout (see :class:`GameConfig`) -> ``board[column][row]`` codes."""
    if isinstance(layout, str) or not isinstance(layout, Sequence) or len(layout) != NUM_COLORS:
        raise ConfigError(f"bonus_layout must be {_LAYOUT_HELP}; got {layout!r}")
    board = []
    for c, column in enumerate(layout):
        if isinstance(column, Mapping):
            items = list(column.items())
        elif isinstance(column, Sequence) and not isinstance(column, str) and len(column) == TOP_ROW:
            items = [(row, name) for row, name in enumerate(column, start=1) if name is not None]
        elif isinstance(column, Sequence) and not isinstance(column, str) and len(column) == TOP_ROW + 1:
            # The stored form: 10 codes, index 0 unused (what this function returns).
            if column[0] != NO_BONUS or any(
                isinstance(code, bool) or not isinstance(code, int) or (code not in BONUS_NAMES and code != NO_BONUS)
                for code in column
            ):
                raise ConfigError(f"bonus_layout column {c} is {column!r}; {_LAYOUT_HELP}")
            board.append(tuple(column))
            continue
        else:
            raise ConfigError(f"bonus_layout column {c} is {column!r}; {_LAYOUT_HELP}")
        rows = [NO_BONUS] * (TOP_ROW + 1)
        for row, name in items:
            if isinstance(row, str) and row.isascii() and row.isdigit():
                row = int(row)
            if isinstance(row, bool) or not isinstance(row, int) or not 1 <= row <= TOP_ROW:
                raise ConfigError(f"bonus_layout column {c}: row {row!r} is not a row 1..{TOP_ROW}")
            if name is None:
                continue
            if not isinstance(name, str) or name not in BONUS_CODES:
                raise ConfigError(
                    f"bonus_layout column {c} row {row}: unknown symbol {name!r}; symbols are "
                    f"{', '.join(map(repr, BONUS_CODES))} or None"
                )
            rows[row] = BONUS_CODES[name]
        board.append(tuple(rows))
    return tuple(board)


__all__ = ["LAYOUT_NAMES", "ConfigError", "GameConfig", "layout_to_lists", "parse_layout"]
