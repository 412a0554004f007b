"""The dice game's board as a picture (render modes ``rgb_array`` and ``human``, ``keltis
replay --frames``, ``keltis render --game dice``).

:func:`board_image` draws a :class:`~keltis_env.games.dice.state.GameState` with Pillow
and returns an ``(H, W, 3)`` ``uint8`` array: the five columns with rows 1..9 and their
values (R11; the upper zone, rows 7-9, on a gold band), the bonus squares (stone, clover,
extra turn), every player's markers (a disc in the seat's colour with the seat number;
the markers not yet on the board wait below row 1), and a side panel with the five dice
on the table, sorted and numbered 1..5 as the ``reroll`` actions number them, then each
player's score, stones and markers. The title bar says whose turn it is and which step
(R11 steps 2, 4 and 5), or how the game ended.

Every size and position comes from one :class:`Layout` object and every colour from one
:class:`Palette`; the drawing code holds no layout numbers of its own. The picture is
drawn at ``Layout.supersample`` times its size and scaled down, which smooths the edges
of shapes. Its size depends only on the number of players (:meth:`Layout.size`), so
every frame of a game has the same shape.

Pillow is an optional dependency (``pip install keltis-rl[render]``): it is imported
when a picture is drawn, with a clear error when missing (:mod:`keltis_env.core.render_image`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from keltis_env.core.render_image import (
    RGB,
    WHITE,
    BoardLayout,
    BoardPainter,
    BoardPalette,
    LegendItem,
    mix,
    player_name,
)

from .constants import (
    CLOVER,
    COLORS,
    EXTRA_TURN,
    MARKERS_PER_PLAYER,
    NO_BONUS,
    NUM_COLORS,
    ROW_VALUES,
    STONE,
    STONE_FACE,
    STONE_FACES_FOR_STONE,
    TOP_ROW,
    UPPER_FIRST_ROW,
    stone_score,
)
from .state import EndReason, GameState, Phase

#: The values ``show_hands`` accepts (besides a seat number), as for the card game.
_HAND_OPTIONS = ("all", "current", None)


@dataclass(frozen=True)
class Layout(BoardLayout):
    """Every size and position of the picture, in output pixels (1x scale); the sizes
    every game's picture has are :class:`~keltis_env.core.render_image.BoardLayout`'s.

    Integer fields are lengths and scale with :meth:`scaled`; float fields are
    proportions (of an icon's radius) and do not.
    """

    COLUMNS: ClassVar[int] = NUM_COLORS

    # --- the board: a label column, then one column per colour
    label_w: int = 84  # row numbers, then row value badges
    row_number_w: int = 24  # the row numbers' part of the label column
    cell_w: int = 150  # room for a bonus token and 4 marker slots side by side
    column_header_h: int = 32
    square_pad: int = 3  # free space around each square inside its cell
    square_radius: int = 10
    supply_h: int = 52  # below row 1: the markers not yet on the board
    upper_band_pad: int = 4  # the gold band extends this far around the upper rows
    # --- bonus tokens and markers on a square
    token_r: int = 15  # radius of a bonus token
    token_left: int = 6  # from the square's left edge to the token
    token_outline: int = 2
    marker_r: int = 10
    marker_outline: int = 2
    supply_gap: int = 4  # between markers waiting below the board
    # --- side panel
    header_h: int = 26
    stats_h: int = 24
    chips_h: int = 26  # one chip per column: where the player's marker is
    chip_gap: int = 4
    chip_radius: int = 5
    icon_r: int = 8  # stone icon in the panel
    dice_title_h: int = 22
    die: int = 46  # a die's side
    die_gap: int = 12
    die_radius: int = 8
    die_border: int = 2
    die_label_h: int = 18  # the die's number under it
    dice_info_h: int = 44  # under the dice: what they show (chips), then the stone rule
    count_h: int = 20  # one chip of "what the dice show"
    count_pad: int = 6  # text to chip edge
    font_marker: int = 12
    # --- icons, as proportions of the token's (or the die's half-side's) radius
    pebble_w: float = 0.72  # a stone: a flat pebble, half-width
    pebble_h: float = 0.50  # half-height
    pebble_shine: float = 0.38  # the highlight's size
    pebble_shine_at: tuple[float, float] = (-0.28, -0.18)  # the highlight's centre
    turn_r: float = 0.55  # extra turn: a circular arrow of this radius
    turn_gap: float = 50.0  # degrees left open in the circle for the arrowhead
    turn_head: float = 0.42  # the arrowhead's length
    turn_line: int = 3  # the circular arrow's width
    die_icon: float = 0.75  # a stone face's pebble, of the die's half-side

    # ---------------------------------------------------------------- derived geometry
    @property
    def board_h(self) -> int:
        return 2 * self.board_pad + self.column_header_h + TOP_ROW * self.cell_h + self.supply_h + self.legend_h

    @property
    def columns_x(self) -> int:
        """Left edge of the first column."""
        return self.board_x + self.board_pad + self.label_w

    @property
    def rows_y(self) -> int:
        """Top edge of row 9."""
        return self.board_y + self.board_pad + self.column_header_h

    @property
    def dice_h(self) -> int:
        """Height of the dice box at the top of the side panel."""
        return 2 * self.box_pad + self.dice_title_h + self.die + self.die_label_h + self.dice_info_h

    @property
    def box_h(self) -> int:
        """Height of one player's box in the side panel."""
        return 2 * self.box_pad + self.header_h + self.stats_h + self.chips_h

    def panel_h(self, num_players: int) -> int:
        return self.dice_h + num_players * (self.box_gap + self.box_h)

    def square_box(self, column: int, row: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of the square on ``row`` (1..9) of ``column``."""
        x0 = self.columns_x + column * self.cell_w + self.square_pad
        y0 = self.rows_y + (TOP_ROW - row) * self.cell_h + self.square_pad
        return x0, y0, x0 + self.cell_w - 2 * self.square_pad, y0 + self.cell_h - 2 * self.square_pad

    def supply_box(self) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of the strip below row 1 where unused markers wait."""
        x0 = self.columns_x + self.square_pad
        y0 = self.rows_y + TOP_ROW * self.cell_h + self.square_pad
        return x0, y0, x0 + NUM_COLORS * self.cell_w - 2 * self.square_pad, y0 + self.supply_h - 2 * self.square_pad

    def marker_xy(self, column: int, row: int, player: int, num_players: int) -> tuple[float, float]:
        """Centre of ``player``'s marker on a square: every seat has a fixed slot."""
        _, y0, x1, y1 = self.square_box(column, row)
        first = x1 - self.slots_right - num_players * self.slot_w
        return first + player * self.slot_w + self.slot_w / 2, (y0 + y1) / 2

    def die_box(self, i: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of die ``i`` (0..4) in the side panel."""
        x0 = self.panel_x + self.box_pad + i * (self.die + self.die_gap)
        y0 = self.board_y + self.box_pad + self.dice_title_h
        return x0, y0, x0 + self.die, y0 + self.die

    def player_box(self, player: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of ``player``'s box in the side panel."""
        y0 = self.board_y + self.dice_h + self.box_gap + player * (self.box_h + self.box_gap)
        return self.panel_x, y0, self.panel_x + self.panel_w, y0 + self.box_h


@dataclass(frozen=True)
class Palette(BoardPalette):
    """Every colour of the picture (those every game's picture has are
    :class:`~keltis_env.core.render_image.BoardPalette`'s)."""

    upper_band: RGB = (240, 205, 110)
    plus: RGB = (30, 120, 50)
    #: red, yellow, green, blue, pink (COLORS order)
    columns: tuple[RGB, ...] = ((214, 48, 49), (236, 184, 18), (46, 158, 82), (38, 110, 204), (222, 92, 166))
    column_text: tuple[RGB, ...] = ((255, 255, 255), (40, 36, 30), (255, 255, 255), (255, 255, 255), (255, 255, 255))
    square_white_mix: float = 0.70  # squares: the column colour mixed with this much white
    bonus_white_mix: float = 0.45  # bonus squares are deeper
    square_edge: RGB = (120, 105, 80)
    supply: RGB = (206, 198, 182)
    #: seat 0..3: the seat number on a marker
    player_text: tuple[RGB, ...] = ((255, 255, 255), (40, 36, 30), (255, 255, 255), (255, 255, 255))
    marker_edge: RGB = (20, 20, 20)
    token_face: RGB = (252, 246, 228)
    token_edge: RGB = (130, 100, 50)
    pebble: RGB = (140, 140, 136)
    pebble_edge: RGB = (70, 70, 68)
    pebble_shine: RGB = (215, 215, 210)
    extra_turn: RGB = (176, 52, 96)
    badge_upper: RGB = (245, 206, 80)
    die_stone: RGB = (226, 224, 218)
    die_edge: RGB = (60, 54, 44)


DEFAULT_LAYOUT = Layout()
DEFAULT_PALETTE = Palette()

_STEP_TEXT = {
    Phase.REROLL: "keep the dice or re-roll some once",
    Phase.MOVE: "choose a colour and move",
    Phase.BONUS: "take the clover step",
}
_STEP_TAG = {Phase.REROLL: "to roll", Phase.MOVE: "to move", Phase.BONUS: "clover step"}
_END_TEXT = {
    EndReason.ALL_UPPER: "all four markers of a player in the upper zone",
    EndReason.UPPER_COUNT: "upper zone full",
    EndReason.TRUNCATED: "truncated at the turn limit",
}


def _check_show_hands(show_hands: str | int | None, num_players: int) -> None:
    """The card game's ``show_hands`` values, checked; the dice game has no hands."""
    if show_hands in _HAND_OPTIONS and not isinstance(show_hands, int):
        return
    if isinstance(show_hands, int) and not isinstance(show_hands, bool) and 0 <= show_hands < num_players:
        return
    raise ValueError(f"show_hands must be 'all', 'current', None or a seat 0..{num_players - 1}, got {show_hands!r}")


class _Painter(BoardPainter[GameState, Layout, Palette]):
    """Draws one picture on a supersampled canvas. ``lay`` is the scaled layout."""

    def marker(self, cx: float, cy: float, p: int) -> None:
        """Player ``p``'s marker: a disc in the seat's colour with the seat number."""
        lay, pal = self.lay, self.pal
        r = lay.marker_r
        self.d.ellipse(
            (cx - r, cy - r, cx + r, cy + r), fill=pal.players[p], outline=pal.marker_edge, width=lay.marker_outline
        )
        self.text((cx, cy), str(p), lay.font_marker, pal.player_text[p], anchor="mm", bold=True)

    def pebble(self, cx: float, cy: float, r: float) -> None:
        """A stone: a flat grey pebble with a highlight."""
        lay, pal = self.lay, self.pal
        w, h = r * lay.pebble_w, r * lay.pebble_h
        self.d.ellipse((cx - w, cy - h, cx + w, cy + h), fill=pal.pebble, outline=pal.pebble_edge, width=lay.icon_line)
        sx, sy = cx + r * lay.pebble_shine_at[0], cy + r * lay.pebble_shine_at[1]
        s = r * lay.pebble_shine / 2
        self.d.ellipse((sx - s, sy - s / 2, sx + s, sy + s / 2), fill=pal.pebble_shine)

    def turn_arrow(self, cx: float, cy: float, r: float) -> None:
        """An extra turn: a circular arrow going round once more."""
        lay, color = self.lay, self.pal.extra_turn
        ring = r * lay.turn_r
        start, end = -90 + lay.turn_gap, 270  # clockwise from the top, the gap before the top
        self.d.arc((cx - ring, cy - ring, cx + ring, cy + ring), start, end, fill=color, width=lay.turn_line)
        # The arrowhead at the arc's end (the top), pointing clockwise (to the right).
        tip_x, tip_y = cx + r * lay.turn_head, cy - ring
        head = r * lay.turn_head
        self.d.polygon([(tip_x, tip_y), (tip_x - head, tip_y - head), (tip_x - head, tip_y + head)], fill=color)

    def token(self, cx: float, cy: float, code: int) -> None:
        """The bonus symbol ``code`` on a round token."""
        lay, pal = self.lay, self.pal
        r = lay.token_r
        self.d.ellipse(
            (cx - r, cy - r, cx + r, cy + r), fill=pal.token_face, outline=pal.token_edge, width=lay.token_outline
        )
        if code == STONE:
            self.pebble(cx, cy, r)
        elif code == CLOVER:
            self.clover(cx, cy, r * lay.clover_size)
        elif code == EXTRA_TURN:
            self.turn_arrow(cx, cy, r)

    # ---------------------------------------------------------------- title
    def title(self) -> None:
        s = self.state
        if s.phase == Phase.OVER:
            status = self.game_over_status(_END_TEXT[s.end])
        else:
            extra = " (extra turn)" if s.extra_turn else ""
            status = f"Turn {s.turn + 1}{extra}  |  {player_name(s.current, self.names)} to {_STEP_TEXT[s.phase]}"
        self.title_bar("KELTIS DICE", status, f"markers in the upper zone {s.upper_total}/{s.upper_to_end}")

    # ---------------------------------------------------------------- board
    def board(self) -> None:
        lay, pal = self.lay, self.pal
        self.board_frame()
        # The upper zone (R11): one gold band behind rows 7-9 of every column.
        top, bottom = lay.square_box(0, TOP_ROW)[1], lay.square_box(0, UPPER_FIRST_ROW)[3]
        self.band(top - lay.upper_band_pad, bottom + lay.upper_band_pad, lay.square_radius, pal.upper_band)
        hy = self.column_headers(
            lay.columns_x, lay.column_header_h, lay.square_pad, lay.square_radius, pal.columns, pal.column_text, COLORS
        )
        nx = lay.board_x + lay.board_pad + lay.row_number_w / 2
        bx = lay.board_x + lay.board_pad + (lay.label_w + lay.row_number_w) / 2
        self.text((nx, hy), "row", lay.font_small, pal.muted, anchor="mm")
        self.text((bx, hy), "points", lay.font_small, pal.muted, anchor="mm")
        # Rows: row number, value badge, then one square per column.
        for r in range(1, TOP_ROW + 1):
            _, y0, _, y1 = lay.square_box(0, r)
            cy = (y0 + y1) / 2
            self.text((nx, cy), str(r), lay.font_text, pal.muted, anchor="mm")
            fill = pal.badge_upper if r >= UPPER_FIRST_ROW else pal.badge
            ink = pal.minus if ROW_VALUES[r] < 0 else pal.text
            self.row_badge(bx, cy, fill, pal.square_edge, ROW_VALUES[r], ink)
            for c in range(NUM_COLORS):
                self.square(c, r)
        self.supply()
        self.legend(self.legend_items(), lay.token_r)

    def square(self, c: int, r: int) -> None:
        s, lay, pal = self.state, self.lay, self.pal
        box = lay.square_box(c, r)
        code = s.bonus[c][r]
        whiten = pal.square_white_mix if code == NO_BONUS else pal.bonus_white_mix
        self.d.rounded_rectangle(
            box,
            radius=lay.square_radius,
            fill=mix(pal.columns[c], WHITE, whiten),
            outline=pal.square_edge,
            width=lay.box_border,
        )
        x0, y0, _, y1 = box
        if code != NO_BONUS:
            self.token(x0 + lay.token_left + lay.token_r, (y0 + y1) / 2, code)
        n = s.num_players
        for p in range(n):
            if s.pos[p][c] == r:
                self.marker(*lay.marker_xy(c, r, p, n), p)

    def supply(self) -> None:
        """Below row 1: each player's markers not yet on the board (they enter from below, R11.4)."""
        s, lay, pal = self.state, self.lay, self.pal
        box = lay.supply_box()
        x0, y0, x1, y1 = box
        self.d.rounded_rectangle(
            box, radius=lay.square_radius, fill=pal.supply, outline=pal.square_edge, width=lay.box_border
        )
        label = "to enter"
        self.text((x0 + lay.box_pad, (y0 + y1) / 2), label, lay.font_head, pal.muted, anchor="lm", bold=True)
        label_w = self.text_w(label, lay.font_head) + 2 * lay.box_pad
        n = s.num_players
        group_w = (x1 - x0 - label_w) / n
        cy = (y0 + y1) / 2
        for p in range(n):
            x = x0 + label_w + p * group_w + lay.marker_r
            for _ in range(MARKERS_PER_PLAYER - s.markers[p]):
                self.marker(x, cy, p)
                x += 2 * lay.marker_r + lay.supply_gap

    def legend_items(self) -> list[LegendItem]:
        lay, pal = self.lay, self.pal
        y, r = lay.legend_y, lay.token_r
        return [
            ("marker (seat number)", lambda x: self.marker(x, y, 0)),
            ("stone", lambda x: self.token(x, y, STONE)),
            ("clover: one more step", lambda x: self.token(x, y, CLOVER)),
            ("extra turn", lambda x: self.token(x, y, EXTRA_TURN)),
            ("upper zone", lambda x: self.swatch(x, y, r, pal.upper_band)),
        ]

    # ---------------------------------------------------------------- side panel
    def panel(self) -> None:
        self.dice()
        for p in range(self.state.num_players):
            self.player(p)

    def dice(self) -> None:
        """The five dice, sorted and numbered as the ``reroll`` actions number them (R11.2)."""
        s, lay, pal = self.state, self.lay, self.pal
        x0, y0 = lay.panel_x, lay.board_y
        self.d.rounded_rectangle(
            (x0, y0, x0 + lay.panel_w, y0 + lay.dice_h),
            radius=lay.box_radius,
            fill=pal.box,
            outline=pal.box_edge,
            width=lay.box_border,
        )
        title = "last roll" if s.phase == Phase.OVER else "dice on the table (numbered as 'reroll' numbers them)"
        self.text(
            (x0 + lay.box_pad, y0 + lay.box_pad + lay.dice_title_h / 2), title, lay.font_text, pal.muted, anchor="lm"
        )
        half = lay.die / 2
        for i, face in enumerate(s.dice):
            box = lay.die_box(i)
            cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
            fill = pal.die_stone if face == STONE_FACE else pal.columns[face]
            self.d.rounded_rectangle(box, radius=lay.die_radius, fill=fill, outline=pal.die_edge, width=lay.die_border)
            if face == STONE_FACE:
                self.pebble(cx, cy, half * lay.die_icon)
            self.text((cx, box[3] + lay.die_label_h / 2), str(i + 1), lay.font_text, pal.text, anchor="mm", bold=True)
        # What the dice show (R11.4: a colour moves as many rows as dice show it) and the
        # stone rule (R11.3), next to them.
        counts = s.counts
        if s.phase == Phase.REROLL:
            rule = f"stone rule: {STONE_FACES_FOR_STONE} or more stone faces after this step give one stone"
        elif counts[STONE_FACE] >= STONE_FACES_FOR_STONE:
            rule = "stone rule: this roll gave one stone"
        else:
            rule = f"stone rule: no stone for this roll (fewer than {STONE_FACES_FOR_STONE} stone faces)"
        top = lay.die_box(0)[3] + lay.die_label_h
        x: float = x0 + lay.box_pad
        for face in range(NUM_COLORS + 1):
            if not counts[face]:
                continue
            label = f"{'stone' if face == STONE_FACE else COLORS[face]} x{counts[face]}"
            w = self.text_w(label, lay.font_text) + 2 * lay.count_pad
            fill, ink = (pal.die_stone, pal.text) if face == STONE_FACE else (pal.columns[face], pal.column_text[face])
            self.d.rounded_rectangle((x, top, x + w, top + lay.count_h), radius=lay.chip_radius, fill=fill)
            self.text((x + w / 2, top + lay.count_h / 2), label, lay.font_text, ink, anchor="mm", bold=True)
            x += w + lay.chip_gap
        rule_y = top + (lay.count_h + lay.dice_info_h) / 2
        self.text((x0 + lay.box_pad, rule_y), rule, lay.font_small, pal.muted, anchor="lm")

    def player(self, p: int) -> None:
        s, lay, pal = self.state, self.lay, self.pal
        box = lay.player_box(p)
        x0, y0, x1, _ = box
        active, winner = self.player_frame(p, box)
        x, right = x0 + lay.box_pad, x1 - lay.box_pad
        # Header: marker swatch, name, what the player is doing, score.
        cy = y0 + lay.box_pad + lay.header_h / 2
        self.marker(x + lay.marker_r, cy, p)
        tag = _STEP_TAG[s.phase] if active else "winner" if winner else ""
        if active and s.extra_turn:
            tag += " (extra turn)"
        self.player_header(p, x + 2 * lay.marker_r + lay.box_pad, cy, right, tag)
        # Stats: stones (and what they are worth now), markers on the board and up high.
        cy += lay.header_h / 2 + lay.stats_h / 2
        self.pebble(x + lay.icon_r, cy, lay.icon_r / lay.pebble_w)
        held = s.stones[p]
        stones = "stone" if held == 1 else "stones"
        stats = (
            f"{held} {stones} ({stone_score(held):+d})   |   markers on the board {s.markers[p]}/{MARKERS_PER_PLAYER}, "
            f"in the upper zone {s.upper[p]}"
        )
        self.text((x + 2 * lay.icon_r + lay.chip_gap * 2, cy), stats, lay.font_text, pal.text, anchor="lm")
        # One chip per column: the row of the player's marker there and its points.
        top = cy + lay.stats_h / 2
        chip_w = (right - x + lay.chip_gap) / NUM_COLORS
        for c in range(NUM_COLORS):
            cx0 = x + c * chip_w
            chip = (cx0, top, cx0 + chip_w - lay.chip_gap, top + lay.chips_h - lay.chip_gap)
            row = s.pos[p][c]
            fill = pal.columns[c] if row else mix(pal.columns[c], WHITE, pal.square_white_mix)
            self.d.rounded_rectangle(chip, radius=lay.chip_radius, fill=fill)
            label = f"row {row} ({ROW_VALUES[row]:+d})" if row else "-"
            color = pal.column_text[c] if row else pal.muted
            self.text(
                ((chip[0] + chip[2]) / 2, (chip[1] + chip[3]) / 2),
                label,
                lay.font_small,
                color,
                anchor="mm",
                bold=bool(row),
            )


def board_image(
    state: GameState,
    show_hands: str | int | None = "current",
    names: Sequence[str] | None = None,
    layout: Layout = DEFAULT_LAYOUT,
    palette: Palette = DEFAULT_PALETTE,
) -> np.ndarray:
    """The board as an ``(H, W, 3)`` ``uint8`` RGB picture.

    ``show_hands`` takes the card game's values (``"current"``, ``"all"``, a seat,
    ``None``) so that every game's painter is called the same way; the dice game has no
    hands (everything is public, R11), so it changes nothing, but a wrong value is still
    refused. ``names``: a label per seat (bot specs, "you"), shown after "Player k". The
    size depends only on the number of players (:meth:`Layout.size`). Raises
    :class:`~keltis_env.core.render_image.RenderUnavailableError` when Pillow is missing.
    """
    _check_show_hands(show_hands, state.num_players)
    painter = _Painter(state, layout, palette, names)
    painter.title()
    painter.board()
    painter.panel()
    return painter.finish(layout)


__all__ = ["DEFAULT_LAYOUT", "DEFAULT_PALETTE", "Layout", "Palette", "board_image"]
