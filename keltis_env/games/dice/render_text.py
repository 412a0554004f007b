"""A readable text board of a dice game (the ``ansi`` render mode)."""

from __future__ import annotations

from .constants import BONUS_NAMES, COLORS, FACE_NAMES, NUM_COLORS, ROW_VALUES, TOP_ROW, UPPER_FIRST_ROW, stone_score
from .state import GameState, Phase

#: One letter per bonus symbol on the board.
BONUS_MARKS = {code: mark for code, mark in zip(BONUS_NAMES, ("S", "C", "X"), strict=True)}
_CELL = 12


def board_text(state: GameState) -> str:
    """The board as text: the dice on the table (numbered as the ``reroll`` action numbers
    them), one column per colour, rows 9 (top) to 1. Bonus squares: ``[S]`` stone,
    ``[C]`` clover, ``[X]`` extra turn. Markers: the seat numbers of their owners.
    """
    n = state.num_players
    if state.phase == Phase.OVER:
        status = f"game over ({state.end.name.lower()})"
    else:
        status = f"player {state.current} to {state.phase.name.lower()}" + (" (extra turn)" if state.extra_turn else "")
    lines = [
        f"Keltis dice, {n} players | turn {state.turn} | {status} | "
        f"upper zone {state.upper_total}/{state.upper_to_end}",
        "dice: " + "  ".join(f"{i}:{FACE_NAMES[f]}" for i, f in enumerate(state.dice, start=1)),
    ]
    header = "row  pts |" + "|".join(f" {c:<{_CELL - 1}}" for c in COLORS) + "|"
    lines += [header, "-" * len(header)]
    for r in range(TOP_ROW, 0, -1):
        cells = []
        for c in range(NUM_COLORS):
            mark = BONUS_MARKS.get(state.bonus[c][r])
            owners = " ".join(str(p) for p in range(n) if state.pos[p][c] == r)
            text = (f"[{mark}] " if mark else "    ") + owners
            cells.append(f" {text:<{_CELL - 1}}")
        zone = " upper" if r >= UPPER_FIRST_ROW else ""
        lines.append(f"{r:>3} {ROW_VALUES[r]:>+4} |" + "|".join(cells) + "|" + zone)
    for p in range(n):
        lines.append(
            f"player {p}: score {state.score(p):>3} | stones {state.stones[p]} ({stone_score(state.stones[p]):+d}) | "
            f"markers on the board {state.markers[p]}/4, in the upper zone {state.upper[p]}"
        )
    return "\n".join(lines)


__all__ = ["BONUS_MARKS", "board_text"]
