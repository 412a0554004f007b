"""A readable text board of a Keltis game (the ``ansi`` render mode, ``keltis play``,
``keltis replay``, ``keltis demo``), at most :data:`WIDTH` columns wide.

The board of a game of ``n`` players is ``12 + n`` lines (plus one line per hand shown):
a status line, the paths as a grid (one column per colour, rows 9 to 1), the discard piles
under the grid, and one line per player. :data:`LEGEND` explains every mark it uses
(``keltis play``'s ``help`` prints it).
"""

from __future__ import annotations

from keltis_env.games.keltis.constants import (
    COLORS,
    END_ROW,
    FIGURES_PER_PLAYER,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    NUM_COLORS,
    ROW_VALUES,
    TILE_NAMES,
    card_color,
    card_value,
)
from keltis_env.games.keltis.state import GameState, Phase

#: The widest line the board has, whatever the position (tests check it over many games).
WIDTH = 80
_TILE_MARK = {name: mark for name, mark in zip(TILE_NAMES.values(), ("W", "C", "1", "2", "3"), strict=True)}
_CELL = 11  # characters inside one colour's column
_LABEL = 8  # the row label column: "  9  +10", "discards"
_ASCENDING, _DESCENDING, _ELIDED = "^", "v", ".."

#: Every mark of the board and what it means, as ``keltis play``'s ``help`` shows it.
LEGEND: tuple[tuple[str, str], ...] = (
    ("row pts", "row 9 (top) to 1 and the points a figure scores there"),
    ("goal", "rows 7-9, the goal area; 'in goal 2/5': the game ends at 5 figures there"),
    ("[W] [C]", "tiles: wishing stone, clover (a bonus step)"),
    ("[1] [2] [3]", "point tiles worth 1, 2 or 3 points"),
    ("0 1 2 3", "a figure of player 0, 1, 2 or 3"),
    ("0*", "player 0's large figure (it scores double)"),
    ("discards", "top card of each colour's discard pile and (cards in it); - empty"),
    ("x", "after a pile: discarded to this turn, so it cannot be drawn from"),
    ("p0 -8", "player 0 with a score of -8"),
    ("W2 T3", "2 wishing stones held, 3 points from point tiles"),
    ("S4*", "4 figures still on the start stone; * the large one is among them"),
    ("red 3 5^", "the cards of a path in play order; ^ ascending, v descending"),
    ("red ..7^", ".. earlier cards of the path not shown"),
    ("hand", "the cards in a player's hand, by colour (you see only yours)"),
)


def _tile_mark(code: int) -> str:
    return f"[{_TILE_MARK[TILE_NAMES[code]]}]" if code else ""


def _cell(mark: str, figures: list[str]) -> str:
    """A grid cell of at most ``_CELL`` characters: the tile, then the figures, closer
    together where many share the stone."""
    for text in (f"{mark} {' '.join(figures)}", f"{mark}{' '.join(figures)}", mark + "".join(figures)):
        if len(text.strip()) <= _CELL:
            return text.strip()
    raise AssertionError("a stone holds at most four figures")


def _status(state: GameState) -> str:
    if state.phase == Phase.OVER:
        return f"game over ({state.end.name.lower()})"
    return f"player {state.current} to {state.phase.name.lower()}"


def _grid(state: GameState) -> list[str]:
    """The column header, rows 9..1 and the discard piles, each line one grid row."""
    n = state.num_players
    lines = [f"{'row  pts':<{_LABEL}}|" + "|".join(f"{c:<{_CELL}}" for c in COLORS) + "|"]
    for r in range(END_ROW, 0, -1):
        cells = []
        for c in range(NUM_COLORS):
            figures = [f"{p}{'*' if state.large[p] == c else ''}" for p in range(n) if state.pos[p][c] == r]
            cells.append(f"{_cell(_tile_mark(state.tiles[c][r]), figures):<{_CELL}}")
        zone = "goal" if r >= GOAL_FIRST_ROW else ""
        lines.append(f"{r:>3}{ROW_VALUES[r]:>+5}|" + "|".join(cells) + "|" + zone)
    piles = []
    for c, pile in enumerate(state.discards):
        text = f"{pile[-1]} ({len(pile)})" if pile else "-"
        piles.append(f"{text + (' x' if c == state.discarded else ''):<{_CELL}}")
    lines.append(f"{'discards':<{_LABEL}}|" + "|".join(piles) + "|")
    return lines


def _row_texts(state: GameState, p: int, shown: list[int]) -> list[str]:
    """``red 3 5^`` for every path of player ``p`` that holds cards, the last ``shown[c]``
    cards of colour ``c`` (the earlier ones as ``..``)."""
    texts = []
    for c in range(NUM_COLORS):
        row = state.rows[p][c]
        if not row:
            continue
        cards = [str(v) for v in row[len(row) - shown[c]:]]
        elided = _ELIDED if shown[c] < len(row) else ""
        direction = {1: _ASCENDING, -1: _DESCENDING, 0: ""}[state.direction[p][c]]
        texts.append(f"{COLORS[c]} {elided}{' '.join(cards)}{direction}")
    return texts


def _player_line(state: GameState, p: int) -> str:
    """``p0  -8 W0 T0 S4*  red 7  green 2 5^``: score, wishing stones, tile points, figures
    on the start stone, then the paths' cards, the longest rows shortened to fit."""
    at_start = FIGURES_PER_PLAYER - sum(1 for x in state.pos[p] if x)
    head = (
        f"p{p} {state.score(p):>3} W{state.wishing[p]} T{state.tile_points[p]} "
        f"S{at_start}{'*' if state.large[p] < 0 else ''}"
    )
    shown = [len(row) for row in state.rows[p]]
    while True:
        line = "  ".join([head, *_row_texts(state, p, shown)])
        if len(line) <= WIDTH or max(shown) <= 1:
            return line
        longest = max(range(NUM_COLORS), key=lambda c: shown[c])
        shown[longest] -= 1


def _hand_line(state: GameState, p: int) -> str:
    """``  hand: red 3 7 | green 0``: the seat's cards by colour."""
    groups = []
    for c, color in enumerate(COLORS):
        values = [str(card_value(k)) for k in state.hands[p] if card_color(k) == c]
        if values:
            groups.append(f"{color} {' '.join(values)}")
    return f"  hand: {' | '.join(groups) or '(empty)'}"


def board_text(state: GameState, show_hands: str | int | None = "current") -> str:
    """The board as text, every line at most :data:`WIDTH` columns.

    ``show_hands``: ``"current"`` shows the hand of the player to act, ``"all"`` every
    hand, an integer that seat's hand only, ``None`` no hand; a hand is the line under
    its player's. The marks are explained in :data:`LEGEND`: tiles ``[W]`` wishing stone,
    ``[C]`` clover, ``[1]``-``[3]`` point tiles; figures by seat number, ``*`` after the
    large figure (``0*``).
    """
    lines = [
        f"Keltis, {state.num_players} players | turn {state.turn} | {_status(state)} | "
        f"draw pile {len(state.deck)} | in goal {state.goal_count}/{GOAL_FIGURES_TO_END}"
    ]
    lines += _grid(state)
    for p in range(state.num_players):
        lines.append(_player_line(state, p))
        if show_hands == "all" or show_hands == p or (show_hands == "current" and p == state.current):
            lines.append(_hand_line(state, p))
    return "\n".join(lines)


__all__ = ["LEGEND", "WIDTH", "board_text"]
