"""A readable text board of a Keltis game (the ``ansi`` render mode, ``keltis demo``)."""

from __future__ import annotations

from keltis_env.games.keltis.constants import (
    COLORS,
    END_ROW,
    NUM_COLORS,
    ROW_VALUES,
    TILE_NAMES,
    card_name,
)
from keltis_env.games.keltis.state import GameState, Phase

_TILE_MARK = {name: mark for name, mark in zip(TILE_NAMES.values(), ("W", "C", "1", "2", "3"), strict=True)}
_CELL = 14


def _tile_mark(code: int) -> str:
    return _TILE_MARK[TILE_NAMES[code]] if code else ""


def board_text(state: GameState, show_hands: str | int | None = "current") -> str:
    """The board as text.

    ``show_hands``: ``"current"`` shows the hand of the player to act, ``"all"`` every
    hand, an integer that seat's hand only, ``None`` no hand. Tiles: ``W`` wishing stone,
    ``C`` clover, ``1``-``3`` point tiles. Figures: the seat number, ``*`` after the
    large figure (``0*``).
    """
    n = state.num_players
    lines = []
    status = (
        f"game over ({state.end.name.lower()})"
        if state.phase == Phase.OVER
        else f"player {state.current} to {state.phase.name.lower()}"
    )
    lines.append(
        f"Keltis, {n} players | turn {state.turn} | {status} | draw pile {len(state.deck)} | "
        f"figures in goal {state.goal_count}/5"
    )
    header = "row  pts |" + "|".join(f" {c:<{_CELL - 1}}" for c in COLORS) + "|"
    lines.append(header)
    lines.append("-" * len(header))
    for r in range(END_ROW, 0, -1):
        cells = []
        for c in range(NUM_COLORS):
            mark = _tile_mark(state.tiles[c][r])
            figs = [f"{p}{'*' if state.large[p] == c else ''}" for p in range(n) if state.pos[p][c] == r]
            text = (f"[{mark}] " if mark else "    ") + " ".join(figs)
            cells.append(f" {text:<{_CELL - 1}}")
        zone = " goal" if r >= 7 else ""
        lines.append(f"{r:>3} {ROW_VALUES[r]:>+4} |" + "|".join(cells) + "|" + zone)
    start = [
        f"p{p}: {5 - sum(1 for x in state.pos[p] if x)} ({'large+' if state.large[p] < 0 else ''}small)"
        for p in range(n)
    ]
    lines.append("start stone: " + ", ".join(start))
    tops = [
        f"{COLORS[c]} {pile[-1]} ({len(pile)})" if pile else f"{COLORS[c]} -" for c, pile in enumerate(state.discards)
    ]
    closed = f" | closed this turn: {COLORS[state.discarded]}" if state.discarded >= 0 else ""
    lines.append("discard tops: " + ", ".join(tops) + closed)
    for p in range(n):
        rows = []
        for c in range(NUM_COLORS):
            row = state.rows[p][c]
            if row:
                d = {1: " asc", -1: " desc", 0: ""}[state.direction[p][c]]
                rows.append(f"{COLORS[c]} {' '.join(map(str, row))}{d}")
        lines.append(
            f"player {p}: score {state.score(p):>3} | wishing stones {state.wishing[p]} | "
            f"tile points {state.tile_points[p]} | rows: {'; '.join(rows) or '-'}"
        )
        shown = show_hands == "all" or show_hands == p or (show_hands == "current" and p == state.current)
        if shown:
            lines.append(f"  hand: {', '.join(card_name(k) for k in state.hands[p])}")
    return "\n".join(lines)


__all__ = ["board_text"]
