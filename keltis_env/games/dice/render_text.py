"""A readable text board of a dice game (the ``ansi`` render mode, ``keltis play``,
``keltis replay``), at most :data:`WIDTH` columns wide and ``12 + n`` lines for ``n``
players."""

from __future__ import annotations

from .constants import (
    BONUS_NAMES,
    COLORS,
    FACE_NAMES,
    MARKERS_PER_PLAYER,
    NUM_COLORS,
    ROW_VALUES,
    TOP_ROW,
    UPPER_FIRST_ROW,
    stone_score,
)
from .state import GameState, Phase

#: One letter per bonus symbol on the board.
BONUS_MARKS = {code: mark for code, mark in zip(BONUS_NAMES, ("S", "C", "X"), strict=True)}
#: The widest line the board has, whatever the position (tests check it over many games).
WIDTH = 80
_CELL = 11  # characters inside one colour's column

#: Every mark of the board and what it means, as ``keltis play``'s ``help`` shows it.
LEGEND: tuple[tuple[str, str], ...] = (
    ("dice: 1:red", "the dice on the table, numbered 1-5 (name them to keep or re-roll)"),
    ("row pts", "row 9 (top) to 1 and the points a marker scores there"),
    ("upper", "rows 7-9, the upper zone; 'upper zone 3/8': the game ends at 8 markers"),
    ("[S] [C] [X]", "bonus squares: a stone, a clover (a bonus move), an extra turn"),
    ("0 1 2 3", "a marker of player 0, 1, 2 or 3"),
    ("stones 2 (+2)", "stones held and what they score"),
    ("on the board 3/4", "markers on the board, of the 4 a player has"),
    ("in the upper zone 1", "how many of them are in the upper zone"),
    ("extra turn", "the player to act takes an extra turn"),
)


def board_text(state: GameState) -> str:
    """The board as text, every line at most :data:`WIDTH` columns: the dice on the table
    (numbered as the ``reroll`` action numbers them), one column per colour, rows 9 (top)
    to 1, one line per player. Bonus squares: ``[S]`` stone, ``[C]`` clover, ``[X]`` extra
    turn. Markers: the seat numbers of their owners. :data:`LEGEND` explains every mark.
    """
    n = state.num_players
    if state.phase == Phase.OVER:
        status = f"game over ({state.end.name.lower()})"
    else:
        status = f"player {state.current} to {state.phase.name.lower()}"
    dice = "dice: " + "  ".join(f"{i}:{FACE_NAMES[f]}" for i, f in enumerate(state.dice, start=1))
    lines = [
        f"Keltis dice, {n} players | turn {state.turn} | {status} | "
        f"upper zone {state.upper_total}/{state.upper_to_end}",
        dice + (" | extra turn" if state.extra_turn and state.phase != Phase.OVER else ""),
        f"{'row  pts':<8}|" + "|".join(f"{c:<{_CELL}}" for c in COLORS) + "|",
    ]
    for r in range(TOP_ROW, 0, -1):
        cells = []
        for c in range(NUM_COLORS):
            mark = BONUS_MARKS.get(state.bonus[c][r])
            owners = " ".join(str(p) for p in range(n) if state.pos[p][c] == r)
            text = f"[{mark}] {owners}" if mark else owners
            cells.append(f"{text.strip():<{_CELL}}")
        zone = "upper" if r >= UPPER_FIRST_ROW else ""
        lines.append(f"{r:>3}{ROW_VALUES[r]:>+5}|" + "|".join(cells) + "|" + zone)
    for p in range(n):
        lines.append(
            f"player {p}: score {state.score(p):>3} | stones {state.stones[p]} ({stone_score(state.stones[p]):+d}) | "
            f"on the board {state.markers[p]}/{MARKERS_PER_PLAYER} | in the upper zone {state.upper[p]}"
        )
    return "\n".join(lines)


__all__ = ["BONUS_MARKS", "LEGEND", "WIDTH", "board_text"]
