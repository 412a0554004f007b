"""Static facts of the Keltis dice game (docs/rules.md R11), declared once as data.

The board has the card game's colours and row values (R1), declared here again since a
game never imports another; everything else is the dice game's own. Tests assert these
numbers and the documentation quotes them. Nothing here depends on a game in progress,
so every other module of the game may import it.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

# R11 (board as in R1): five columns, one per colour, with the card game's row values.
COLORS: Final = ("red", "yellow", "green", "blue", "pink")
NUM_COLORS: Final = len(COLORS)
#: Points of a marker on each row, indexed by row (row 0, no marker, scores 0).
ROW_VALUES: Final = (0, -4, -3, -2, 1, 2, 3, 6, 7, 10)
MIN_PLAYERS: Final = 2
MAX_PLAYERS: Final = 4

# R11: five dice with six faces each: the five column colours (face = colour index) and
# one stone face.
NUM_DICE: Final = 5
STONE_FACE: Final = NUM_COLORS  # 5
NUM_FACES: Final = NUM_COLORS + 1
FACE_NAMES: Final = (*COLORS, "stone")
#: R11.3: a roll with at least this many stone faces gives one stone (never more).
STONE_FACES_FOR_STONE: Final = 2

# R11: the board. Row 0 means "no marker in this column"; rows 1..9 are the squares.
NUM_ROWS: Final = 9
TOP_ROW: Final = 9
UPPER_FIRST_ROW: Final = 7  # rows 7..9 are the upper zone

# R11: pieces and players.
MARKERS_PER_PLAYER: Final = 4
#: R11 end: the game stops when the markers of all players in the upper zone reach this.
UPPER_MARKERS_TO_END: Final = {2: 5, 3: 7, 4: 8}

# R11: bonus symbols, as stored on the board (0: no bonus on that square).
NO_BONUS: Final = 0
STONE: Final = 1
CLOVER: Final = 2
EXTRA_TURN: Final = 3
BONUS_NAMES: Final = {STONE: "stone", CLOVER: "clover", EXTRA_TURN: "extra"}
BONUS_CODES: Final = {name: code for code, name in BONUS_NAMES.items()}
#: R11 default bonus squares, per column (red, yellow, green, blue, pink): (row, symbol).
DEFAULT_BONUS_LIST: Final = (
    ((2, CLOVER), (4, STONE), (6, EXTRA_TURN)),
    ((2, STONE), (5, EXTRA_TURN), (7, CLOVER)),
    ((3, EXTRA_TURN), (5, CLOVER), (8, STONE)),
    ((3, CLOVER), (6, STONE), (8, EXTRA_TURN)),
    ((3, STONE), (4, CLOVER), (7, STONE)),
)


def bonus_board(squares: tuple[tuple[tuple[int, int], ...], ...]) -> tuple[tuple[int, ...], ...]:
    """Per-column ``(row, symbol)`` pairs -> ``board[column][row]`` symbol codes (index 0 unused)."""
    board = []
    for column in squares:
        rows = [NO_BONUS] * (TOP_ROW + 1)
        for row, code in column:
            rows[row] = code
        board.append(tuple(rows))
    return tuple(board)


#: ``DEFAULT_BONUS_SQUARES[column][row]``: the symbol code on each square (index 0 unused).
DEFAULT_BONUS_SQUARES: Final = bonus_board(DEFAULT_BONUS_LIST)
#: The random layout keeps the default's shape: this many symbols per column, on
#: distinct rows drawn from these rows, with the default's symbol counts.
BONUSES_PER_COLUMN: Final = 3
RANDOM_BONUS_ROWS: Final = tuple(range(2, TOP_ROW))  # rows 2..8, as in the default
BONUS_SYMBOLS: Final = tuple(sorted(code for column in DEFAULT_BONUS_LIST for _, code in column))
NUM_CLOVERS: Final = BONUS_SYMBOLS.count(CLOVER)  # 5

# R11 scoring: stones held -> points, indexed by stones (9 or more score as 9).
STONE_SCORES: Final = (-10, -4, -3, -2, 1, 2, 3, 6, 7, 10)

# R11 / R8: truncation. A game is cut after this many turns (every player's turns and
# extra turns counted together) unless the options say otherwise.
DEFAULT_MAX_TURNS: Final = 500

# Score bounds (R11 scoring): all four markers on row 9 and 9+ stones; all four markers
# on row 1 and no stone.
SCORE_MAX: Final = MARKERS_PER_PLAYER * ROW_VALUES[TOP_ROW] + STONE_SCORES[-1]  # 50
SCORE_MIN: Final = MARKERS_PER_PLAYER * ROW_VALUES[1] + STONE_SCORES[0]  # -26

#: Stones a player can gain in one turn: one from the roll (R11.3) and one from the bonus
#: square where the turn's last move ends (each arrival gives at most one bonus).
MAX_STONES_PER_TURN: Final = 2


class Phase(IntEnum):
    """The step of the turn the current player is in (R11)."""

    REROLL = 0  # step 2: keep the roll, or re-roll some dice once
    MOVE = 1  # step 4: choose a colour shown (or pass when none can be chosen)
    BONUS = 2  # step 5: a clover bonus step is pending
    OVER = 3  # the game has ended or was truncated


class EndReason(IntEnum):
    """Why a game is over (R11)."""

    NONE = 0
    ALL_UPPER = 1  # one player has all 4 markers in the upper zone
    UPPER_COUNT = 2  # the markers in the upper zone reached 5 / 7 / 8 (2 / 3 / 4 players)
    TRUNCATED = 3  # the maximum number of turns was reached (not a real end)


def max_decisions_per_turn(num_clovers: int = NUM_CLOVERS) -> int:
    """Decisions in one turn: reroll-or-keep, the move (or pass), one per clover chained.

    A player's marker arrives on a given square at most once (markers only move up and a
    player has at most one marker per column), so a turn chains at most one clover step
    per clover square of the layout.
    """
    return 2 + num_clovers


def stone_score(stones: int) -> int:
    """R11: points for the stones held."""
    return STONE_SCORES[stones if stones < len(STONE_SCORES) else -1]


__all__ = [
    "BONUSES_PER_COLUMN",
    "BONUS_CODES",
    "BONUS_NAMES",
    "BONUS_SYMBOLS",
    "CLOVER",
    "COLORS",
    "DEFAULT_BONUS_LIST",
    "DEFAULT_BONUS_SQUARES",
    "DEFAULT_MAX_TURNS",
    "EXTRA_TURN",
    "FACE_NAMES",
    "MARKERS_PER_PLAYER",
    "MAX_PLAYERS",
    "MAX_STONES_PER_TURN",
    "MIN_PLAYERS",
    "NO_BONUS",
    "NUM_CLOVERS",
    "NUM_COLORS",
    "NUM_DICE",
    "NUM_FACES",
    "NUM_ROWS",
    "RANDOM_BONUS_ROWS",
    "ROW_VALUES",
    "SCORE_MAX",
    "SCORE_MIN",
    "STONE",
    "STONE_FACE",
    "STONE_FACES_FOR_STONE",
    "STONE_SCORES",
    "TOP_ROW",
    "UPPER_FIRST_ROW",
    "UPPER_MARKERS_TO_END",
    "EndReason",
    "Phase",
    "bonus_board",
    "max_decisions_per_turn",
    "stone_score",
]
