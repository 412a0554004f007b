"""Game options (docs/rules.md R1, R2, R8) as one validated, immutable object."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from keltis_env.core.errors import ConfigError
from keltis_env.core.validation import check_game_options, check_option_names

from .constants import (
    DARK_STONES_PER_PATH,
    DEFAULT_DARK_ROWS,
    DEFAULT_MAX_TURNS,
    END_ROW,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_COLORS,
)

#: Tile layouts accepted by name; anything else must be an explicit layout.
LAYOUT_NAMES = ("default", "random")


@dataclass(frozen=True)
class GameConfig:
    """Options of one game.

    Attributes:
        num_players: 2, 3 or 4 (R2.1).
        tile_layout: which rows of each path are dark tile stones (R1): ``"default"``
            (the layout of R1), ``"random"`` (4 distinct rows in 1..8 per path, drawn from
            the game's seed), or an explicit layout: 5 sequences of 4 distinct rows in
            1..8, one per path. Every end stone (row 9) holds a tile in all layouts.
        max_turns: the game is truncated after this many turns (R8), counting every
            player's turns together. Must be at least 1.
    """

    num_players: int = 2
    tile_layout: str | tuple[tuple[int, ...], ...] = "default"
    max_turns: int = DEFAULT_MAX_TURNS

    def __post_init__(self) -> None:
        check_game_options(self, MIN_PLAYERS, MAX_PLAYERS)
        layout = self.tile_layout
        if isinstance(layout, str):
            if layout not in LAYOUT_NAMES:
                raise ConfigError(
                    f"tile_layout must be 'default', 'random' or 5 lists of 4 distinct rows in 1..8, got {layout!r}"
                )
        else:
            object.__setattr__(self, "tile_layout", _validate_layout(layout))

    def dark_rows(self, rng: Any | None = None) -> tuple[tuple[int, ...], ...]:
        """The dark rows of each path; ``rng`` (a ``random.Random``) draws a random layout."""
        if self.tile_layout == "default":
            return DEFAULT_DARK_ROWS
        if self.tile_layout == "random":
            if rng is None:
                raise ConfigError("a random tile layout needs the game's random generator")
            return tuple(tuple(sorted(rng.sample(range(1, END_ROW), DARK_STONES_PER_PATH))) for _ in range(NUM_COLORS))
        assert not isinstance(self.tile_layout, str)
        return self.tile_layout

    def to_dict(self) -> dict[str, Any]:
        layout = self.tile_layout
        return {
            "num_players": self.num_players,
            "tile_layout": layout if isinstance(layout, str) else [list(rows) for rows in layout],
            "max_turns": self.max_turns,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GameConfig:
        return cls(**check_option_names(data, ("num_players", "tile_layout", "max_turns")))


def _validate_layout(layout: Any) -> tuple[tuple[int, ...], ...]:
    allowed = "5 lists (one per path) of 4 distinct rows in 1..8"
    if not isinstance(layout, Sequence) or len(layout) != NUM_COLORS:
        raise ConfigError(f"tile_layout must be {allowed}, got {layout!r}")
    result = []
    for path, rows in enumerate(layout):
        if (
            not isinstance(rows, Sequence)
            or isinstance(rows, str)
            or len(rows) != DARK_STONES_PER_PATH
            or any(isinstance(r, bool) or not isinstance(r, int) or not 1 <= r < END_ROW for r in rows)
            or len(set(rows)) != DARK_STONES_PER_PATH
        ):
            raise ConfigError(f"tile_layout path {path} is {rows!r}; each path needs 4 distinct rows in 1..8")
        result.append(tuple(sorted(rows)))
    return tuple(result)
