"""Static facts of Keltis (docs/rules.md R1-R4, R7-R9), declared once as data.

Everything here is a plain constant, an enumeration of the turn's steps and the game's
ends, or a pure function of cards: tests assert these numbers and the documentation
quotes them. Nothing in this module depends on a game in progress, so every other
module of the game may import it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from keltis_env.core.validation import parse_name

# R1: cards. Five colours, values 0..10, two copies of each.
COLORS: Final = ("red", "yellow", "green", "blue", "pink")
NUM_COLORS: Final = len(COLORS)
MIN_VALUE: Final = 0
MAX_VALUE: Final = 10
NUM_VALUES: Final = MAX_VALUE - MIN_VALUE + 1
COPIES_PER_CARD: Final = 2
#: A card *kind* is ``colour * NUM_VALUES + value`` (0..54); both copies share it.
NUM_CARD_KINDS: Final = NUM_COLORS * NUM_VALUES
NUM_CARDS: Final = NUM_CARD_KINDS * COPIES_PER_CARD  # 110

# R2: set-up.
MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 4
HAND_SIZE: Final = 8
#: With 2 players, 30 cards are removed unseen (R2.3).
REMOVED_CARDS: Final = {2: 30, 3: 0, 4: 0}

# R1: the board. Row 0 is the shared start stone; rows 1..9 are the stones of a path.
NUM_ROWS: Final = 9
START_ROW: Final = 0
END_ROW: Final = 9
#: Points of a figure on each row, indexed by row (row 0, the start stone, scores 0).
ROW_VALUES: Final = (0, -4, -3, -2, 1, 2, 3, 6, 7, 10)
MINUS_ROWS: Final = (1, 2, 3)
GOAL_FIRST_ROW: Final = 7  # rows 7..9 are the goal area
#: R8.1: the game ends when this many figures (all players together) are in the goal area.
GOAL_FIGURES_TO_END: Final = 5

# R1: figures. Each player has 4 small figures and 1 large one.
SMALL_FIGURES: Final = 4
FIGURES_PER_PLAYER: Final = SMALL_FIGURES + 1
LARGE_MULTIPLIER: Final = 2

# R1: tiles. Tile codes as stored on the board (0 means no tile on that stone).
NO_TILE: Final = 0
WISHING_STONE: Final = 1
CLOVER: Final = 2
POINTS_1: Final = 3
POINTS_2: Final = 4
POINTS_3: Final = 5
TILE_NAMES: Final = {
    WISHING_STONE: "wish",
    CLOVER: "clover",
    POINTS_1: "points1",
    POINTS_2: "points2",
    POINTS_3: "points3",
}
TILE_CODES: Final = {name: code for code, name in TILE_NAMES.items()}
#: Points scored when arriving on a point tile, by tile code.
TILE_POINTS: Final = {POINTS_1: 1, POINTS_2: 2, POINTS_3: 3}
#: The 25 tiles of the game: 9 wishing stones, 9 clovers, point tiles 1,1,2,2,2,3,3.
TILE_SET: Final = (
    (WISHING_STONE,) * 9
    + (CLOVER,) * 9
    + (POINTS_1, POINTS_1, POINTS_2, POINTS_2, POINTS_2, POINTS_3, POINTS_3)
)
NUM_WISHING_STONES: Final = TILE_SET.count(WISHING_STONE)
DARK_STONES_PER_PATH: Final = 4
#: R1 default dark rows per path (the end stone, row 9, always holds a tile too).
DEFAULT_DARK_ROWS: Final = ((1, 3, 5, 7), (2, 4, 6, 8), (1, 4, 6, 7), (2, 3, 5, 8), (3, 4, 6, 7))

# R9: wishing-stone scoring, indexed by stones held (5 or more score as 5).
WISHING_SCORES: Final = (-4, -3, 2, 3, 6, 10)

# R8: truncation. A game is cut after this many turns unless the options say otherwise.
DEFAULT_MAX_TURNS: Final = 500

# Score bounds (R9). Highest: every figure in row 9 with the large one doubled
# (5 * 10 + 10), every point tile once (a player's figure arrives on a stone at most
# once), and 5+ wishing stones. Lowest: every figure on row 1 with the large one
# doubled (-4 * 4 - 8), no tile points, no wishing stones.
MAX_TILE_POINTS: Final = sum(TILE_POINTS.get(t, 0) for t in TILE_SET)
SCORE_MAX: Final = ROW_VALUES[END_ROW] * (SMALL_FIGURES + LARGE_MULTIPLIER) + MAX_TILE_POINTS + WISHING_SCORES[-1]
SCORE_MIN: Final = ROW_VALUES[1] * (SMALL_FIGURES + LARGE_MULTIPLIER) + WISHING_SCORES[0]


class Phase(IntEnum):
    """The step of the turn the current player is in (R3)."""

    PLAY = 0  # play or discard one card (R3a)
    DRAW = 1  # draw one card (R3b)
    BONUS = 2  # an optional bonus step is pending (R7)
    OVER = 3  # the game has ended or was truncated (R8)


class EndReason(IntEnum):
    """Why a game is over (R8)."""

    NONE = 0
    GOAL = 1  # the fifth figure entered the goal area (R8.1)
    DECK = 2  # the last card of the draw pile was drawn (R8.2)
    TRUNCATED = 3  # the maximum number of turns was reached (R8, not a real end)


#: At most this many bonus steps can follow one card: the completed-path bonus, then one
#: per clover (9), since one player's figure arrives on a given stone at most once.
MAX_BONUS_STEPS_PER_TURN: Final = 1 + TILE_SET.count(CLOVER)
#: Decisions in one turn: play/discard, bonus steps (each one decision), draw.
MAX_DECISIONS_PER_TURN: Final = 2 + MAX_BONUS_STEPS_PER_TURN


def card_kind(color: int, value: int) -> int:
    """The card kind id (0..54) of a colour index and a value."""
    return color * NUM_VALUES + value


def card_color(kind: int) -> int:
    return kind // NUM_VALUES


def card_value(kind: int) -> int:
    return kind % NUM_VALUES


def card_name(kind: int) -> str:
    """``"red 7"`` for the kind of the red 7."""
    return f"{COLORS[kind // NUM_VALUES]} {kind % NUM_VALUES}"


def row_direction(row: list[int] | tuple[int, ...]) -> int:
    """R4: +1 ascending, -1 descending, 0 while every card has had the same value."""
    first = row[0] if row else 0
    for v in row:
        if v != first:
            return 1 if v > first else -1
    return 0


def parse_color(text: str) -> int:
    """Colour index of a colour name (case-insensitive)."""
    return parse_name(text, COLORS, "colour")


def parse_card(text: str) -> int:
    """Card kind of ``"red 7"`` (colour name, space, value 0..10)."""
    if not isinstance(text, str):
        raise ValueError(f"a card is a string '<colour> <value>', e.g. 'red 7', got {text!r}")
    parts = text.split()
    if len(parts) != 2 or not (parts[1].isascii() and parts[1].isdigit()):
        raise ValueError(f"malformed card {text!r}; expected '<colour> <value>', e.g. 'red 7'")
    value = int(parts[1])
    if not MIN_VALUE <= value <= MAX_VALUE:
        raise ValueError(f"card value {value} out of range in {text!r}; values are 0..10")
    return card_kind(parse_color(parts[0]), value)
