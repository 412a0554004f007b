"""The text screens of ``keltis play`` (a helper of the commands, not a command): lines
wrapped to the terminal's width, the legal moves as a numbered list or a table that fits the
rows under the board, the dice game's keep/re-roll choices by naming dice, and the legend of
a game's text board."""

from __future__ import annotations

import inspect
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

#: The terminal every screen is made for (a real terminal's own height is used when known).
WIDTH, ROWS = 80, 24
#: the words that name the dice to keep or to re-roll
KEEP, REROLL = "keep", "reroll"


def call_supported(fn: Callable[..., Any], state: Any, **kwargs: Any) -> Any:
    """``fn(state, **kwargs)`` with only the keyword arguments ``fn`` accepts: a game's
    board function without ``show_hands`` belongs to a game without hidden hands."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):  # a forwarder, e.g. GameDescriptor.board_image
        return fn(state, **kwargs)
    return fn(state, **{k: v for k, v in kwargs.items() if k in params})



def wrap(text: str, width: int = WIDTH) -> str:
    """``text`` wrapped to ``width`` columns, each paragraph (line) on its own, the
    continuation lines indented."""
    return "\n".join(
        textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False) if len(line) > width else line
        for line in text.splitlines() or [""]
    )

DICE_HELP = wrap(
    "Name the dice by their numbers on the board: 'keep' keeps them all, 'keep 3 5' keeps dice 3 and 5 and "
    "re-rolls the others, 'reroll 1 4' re-rolls dice 1 and 4, 'reroll' re-rolls them all."
)


def dice_choices(texts: Sequence[str]) -> dict[frozenset[int], int] | None:
    """For a keep-or-re-roll decision (moves ``keep`` and ``reroll 1,3``): the dice each
    move re-rolls -> its index in ``texts``; ``None`` for any other decision."""
    choices: dict[frozenset[int], int] = {}
    for i, text in enumerate(texts):
        word, _, dice = text.partition(" ")
        if text == KEEP:
            choices[frozenset()] = i
        elif word == REROLL and dice.replace(",", "").isdigit():
            choices[frozenset(int(d) for d in dice.split(","))] = i
        else:
            return None
    return choices if len(choices) > 1 else None


def parse_dice(text: str, every: frozenset[int]) -> frozenset[int]:
    """The dice that ``text`` names: numbers separated by spaces or commas, ``all`` or
    ``none``; a ValueError names what is wrong and what is allowed."""
    words = text.replace(",", " ").split()
    if words in (["all"], ["none"]):
        return every if words == ["all"] else frozenset()
    allowed = f"dice are {', '.join(map(str, sorted(every)))} (as numbered on the board), 'all' or 'none'"
    dice: list[int] = []
    for word in words:
        if not (word.isascii() and word.isdigit()) or int(word) not in every:
            raise ValueError(f"{word!r} is not a die; {allowed}")
        if int(word) in dice:
            raise ValueError(f"die {word} is named twice; name each die once")
        dice.append(int(word))
    return frozenset(dice)


def numbered_list(texts: Sequence[str], width: int = WIDTH) -> list[str]:
    """The moves numbered from 1, in as many columns as fit ``width`` (down the columns)."""
    items = [f"{i:>3}  {text}" for i, text in enumerate(texts, 1)]
    cell = max(len(item) for item in items) + 2
    columns = max(1, (width + 2) // cell)
    lines = -(-len(items) // columns)
    return [
        "".join(items[k].ljust(cell) for k in range(row, len(items), lines)).rstrip()
        for row in range(lines)
    ]


def _table(texts: Sequence[str], start: int, size: int, width: int) -> list[str] | None:
    """The moves as a table: the words ``start : start + size`` of a move's text are its
    column (a card, a colour), the others with ``_`` in their place its row; the cell holds
    its number. ``None`` where two moves would share a cell or the table is too wide."""
    cells: dict[tuple[str, tuple[str, ...]], int] = {}
    for i, text in enumerate(texts, 1):
        words = text.split()
        column = tuple(words[start : start + size]) if len(words) >= start + size else ()
        row = " ".join([*words[:start], "_", *words[start + size :]]) if column else text
        if (row, column) in cells:
            return None
        cells[(row, column)] = i
    rows = list(dict.fromkeys(row for row, _ in cells))
    columns = list(dict.fromkeys(column for _, column in cells if column))
    if len(columns) < 2:
        return None
    label = max(len(row) for row in rows) + 1
    widths = [max([len(str(len(texts)))] + [len(word) for word in column]) + 1 for column in columns]
    if label + sum(widths) > width:
        return None
    pairs = list(zip(columns, widths, strict=True))
    lines = [" " * label + "".join(f"{column[k] if k < len(column) else '':>{w}}" for column, w in pairs)
             for k in range(size)]
    for row in rows:
        plain = cells.get((row, ()))
        numbers = [cells.get((row, column)) for column in columns]
        if plain is not None:  # a move without a column, e.g. 'pass'
            numbers = [plain] + [None] * (len(columns) - 1)
        row_cells = "".join(f"{'' if n is None else n:>{w}}" for n, w in zip(numbers, widths, strict=True))
        lines.append(f"{row:<{label}}" + row_cells)
    return [line.rstrip() for line in lines]


def move_table(texts: Sequence[str], width: int = WIDTH) -> list[str] | None:
    """The shortest table of the moves (:func:`_table`) over the ways of cutting their
    texts into row and column; ``None`` where none fits ``width``."""
    tables = [
        table for start in range(1, 4) for size in range(1, 4) if (table := _table(texts, start, size, width))
    ]
    return min(tables, key=len) if tables else None


def layout_moves(texts: Sequence[str], room: int, width: int = WIDTH) -> list[str]:
    """The numbered list where it fits ``room`` lines, else the shorter of the list and
    the best table."""
    plain = numbered_list(texts, width)
    if len(plain) <= room:
        return plain
    table = move_table(texts, width)
    return table if table is not None and len(table) < len(plain) else plain


def board_legend(board_text: Callable[..., Any]) -> tuple[tuple[str, str], ...]:
    """The ``LEGEND`` of the module that defines a game's text board: ``(mark, meaning)``
    pairs; empty for a game without one."""
    module = sys.modules.get(getattr(board_text, "__module__", "") or "")
    return tuple(getattr(module, "LEGEND", ()))


def legend_lines(legend: Sequence[tuple[str, str]], width: int = WIDTH) -> list[str]:
    """``  mark   meaning`` lines, the meanings wrapped to ``width`` under each other."""
    key = max(len(mark) for mark, _ in legend) + 4
    lines = []
    for mark, meaning in legend:
        body = textwrap.wrap(meaning, width - key) or [""]
        lines.append(f"  {mark:<{key - 2}}{body[0]}")
        lines += [" " * key + more for more in body[1:]]
    return lines
