"""The Keltis board as a picture (render modes ``rgb_array`` and ``human``, ``keltis replay
--frames``, ``keltis render``).

:func:`board_image` draws a :class:`~keltis_env.games.keltis.state.GameState` with Pillow and
returns an ``(H, W, 3)`` ``uint8`` array: the five paths with their rows and row values
(R1; the goal area, rows 7-9, on a gold band), the tiles on their stones (R6), every
player's figures (R5; the large figure is taller, wider and ringed in gold), and a side
panel with each player's score, wishing stones, tile points, played rows (R4) and, where
asked, hand, then the discard piles (tops and sizes, R3a) and the draw pile. The title
bar says whose turn it is and which step (R3).

Every size and position comes from one :class:`Layout` object and every colour from one
:class:`Palette`; the drawing code holds no layout numbers of its own. The picture is
drawn at ``Layout.supersample`` times its size and scaled down, which smooths the edges
of shapes. The picture's size depends only on the number of players, so every frame of a
game has the same shape.

Pillow is an optional dependency (``pip install keltis-rl[render]``): it is imported
when a picture is drawn, with a clear error when missing (:mod:`keltis_env.core.render_image`,
which also shows pictures in a window for the ``human`` render mode).
"""

from __future__ import annotations

import math
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
from keltis_env.games.keltis.constants import (
    CLOVER,
    COLORS,
    END_ROW,
    GOAL_FIGURES_TO_END,
    GOAL_FIRST_ROW,
    MINUS_ROWS,
    NO_TILE,
    NUM_COLORS,
    ROW_VALUES,
    TILE_POINTS,
    WISHING_SCORES,
    WISHING_STONE,
    card_color,
    card_value,
)
from keltis_env.games.keltis.state import EndReason, GameState, Phase


@dataclass(frozen=True)
class Layout(BoardLayout):
    """Every size and position of the picture, in output pixels (1x scale); the sizes
    every game's picture has are :class:`~keltis_env.core.render_image.BoardLayout`'s.

    Integer fields are lengths and scale with :meth:`scaled`; float fields are
    proportions (of a figure's height or width) and do not.
    """

    UNSCALED: ClassVar[tuple[str, ...]] = ("supersample", "rows_lines", "bold_stroke")
    COLUMNS: ClassVar[int] = NUM_COLORS

    # --- the board: a label column, then one column per path
    label_w: int = 62  # row value badges
    cell_w: int = 146  # room for a tile token and 4 figure slots side by side
    path_header_h: int = 32
    stone_pad: int = 3  # free space around each stone inside its cell
    stone_radius: int = 10
    start_h: int = 62  # the shared start stone below row 1
    goal_band_pad: int = 4  # the gold band extends this far around the goal rows
    # --- tiles and figures on a stone
    tile_r: int = 15  # radius of a tile token
    tile_left: int = 6  # from the stone's left edge to the token
    tile_outline: int = 2
    small_w: int = 14
    small_h: int = 26
    large_w: int = 21
    large_h: int = 36
    figure_base: int = 5  # from the stone's bottom edge up to the figures' feet
    figure_outline: int = 1
    large_ring: int = 3  # the gold outline of the large figure
    start_fig_gap: int = 3  # between figures waiting on the start stone
    # --- side panel
    header_h: int = 24
    stats_h: int = 22
    rows_bar_h: int = 16
    rows_line_h: int = 15
    rows_lines: int = 2  # value lines under each colour of a player's played rows
    hand_h: int = 28
    chip_w: int = 24  # one card of a hand
    chip_h: int = 24
    chip_gap: int = 3
    chip_radius: int = 4
    gem_r: int = 7  # wishing-stone icon in the panel
    arrow: int = 5  # direction triangle of a played row
    piles_title_h: int = 22
    pile_w: int = 54
    pile_h: int = 70
    pile_gap: int = 10
    pile_radius: int = 6
    pile_label_h: int = 18
    font_pile: int = 26
    # --- pawn shape, as proportions of a figure's width and height
    pawn_head_r: float = 0.30  # of the width
    pawn_head_y: float = 0.76  # head centre, of the height above the feet
    pawn_neck_y: float = 0.56
    pawn_neck_w: float = 0.36  # of the width
    pawn_base_h: float = 0.22
    # --- tile icons, as proportions of the token's radius
    gem_size: float = 0.62  # wishing stone: the gem's radius

    # ---------------------------------------------------------------- derived geometry
    @property
    def board_h(self) -> int:
        return 2 * self.board_pad + self.path_header_h + END_ROW * self.cell_h + self.start_h + self.legend_h

    @property
    def paths_x(self) -> int:
        """Left edge of the first path column."""
        return self.board_x + self.board_pad + self.label_w

    @property
    def rows_y(self) -> int:
        """Top edge of row 9."""
        return self.board_y + self.board_pad + self.path_header_h

    @property
    def box_h(self) -> int:
        """Height of one player's box in the side panel."""
        body = self.header_h + self.stats_h + self.rows_bar_h + self.rows_lines * self.rows_line_h + self.hand_h
        return 2 * self.box_pad + body

    @property
    def piles_h(self) -> int:
        return self.piles_title_h + self.pile_h + self.pile_label_h

    def panel_h(self, num_players: int) -> int:
        return num_players * (self.box_h + self.box_gap) + self.piles_h

    def stone_box(self, path: int, row: int) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of the stone on ``row`` (1..9) of ``path``."""
        x0 = self.paths_x + path * self.cell_w + self.stone_pad
        y0 = self.rows_y + (END_ROW - row) * self.cell_h + self.stone_pad
        return x0, y0, x0 + self.cell_w - 2 * self.stone_pad, y0 + self.cell_h - 2 * self.stone_pad

    def start_box(self) -> tuple[int, int, int, int]:
        x0 = self.paths_x + self.stone_pad
        y0 = self.rows_y + END_ROW * self.cell_h + self.stone_pad
        return x0, y0, x0 + NUM_COLORS * self.cell_w - 2 * self.stone_pad, y0 + self.start_h - 2 * self.stone_pad

    def figure_slot_x(self, path: int, row: int, player: int, num_players: int) -> int:
        """Centre x of ``player``'s figure on a stone: every seat has a fixed slot."""
        _, _, x1, _ = self.stone_box(path, row)
        first = x1 - self.slots_right - num_players * self.slot_w
        return first + player * self.slot_w + self.slot_w // 2


@dataclass(frozen=True)
class Palette(BoardPalette):
    """Every colour of the picture (those every game's picture has are
    :class:`~keltis_env.core.render_image.BoardPalette`'s)."""

    goal_band: RGB = (240, 205, 110)
    #: red, yellow, green, blue, pink (COLORS order)
    paths: tuple[RGB, ...] = ((214, 48, 49), (236, 184, 18), (46, 158, 82), (38, 110, 204), (222, 92, 166))
    path_text: tuple[RGB, ...] = ((255, 255, 255), (40, 36, 30), (255, 255, 255), (255, 255, 255), (255, 255, 255))
    stone_white_mix: float = 0.70  # plain stones: the path colour mixed with this much white
    tile_stone_white_mix: float = 0.42  # tile ("dark") stones are deeper
    stone_edge: RGB = (120, 105, 80)
    start_stone: RGB = (206, 198, 182)
    figure_edge: RGB = (20, 20, 20)
    large_ring: RGB = (212, 160, 20)
    tile_face: RGB = (252, 246, 228)
    tile_edge: RGB = (130, 100, 50)
    gem: RGB = (80, 170, 215)
    gem_edge: RGB = (30, 80, 120)
    gem_shine: RGB = (200, 235, 250)
    points_face: RGB = (245, 206, 80)
    points_text: RGB = (100, 60, 10)
    badge_goal: RGB = (245, 206, 80)
    deck_back: RGB = (60, 90, 70)
    deck_edge: RGB = (30, 50, 40)
    closed: RGB = (190, 40, 40)


DEFAULT_LAYOUT = Layout()
DEFAULT_PALETTE = Palette()

_STEP_TEXT = {
    Phase.PLAY: "play or discard a card",
    Phase.DRAW: "draw a card",
    Phase.BONUS: "take a bonus step or pass",
}
_STEP_TAG = {Phase.PLAY: "to play", Phase.DRAW: "to draw", Phase.BONUS: "bonus step"}
_END_TEXT = {
    EndReason.GOAL: "fifth figure in the goal area",
    EndReason.DECK: "draw pile empty",
    EndReason.TRUNCATED: "truncated at the turn limit",
}


def _hand_shown(show_hands: str | int | None, p: int, state: GameState) -> bool:
    if show_hands == "all":
        return True
    if show_hands == "current":
        return p == state.current and state.phase != Phase.OVER
    return isinstance(show_hands, int) and not isinstance(show_hands, bool) and show_hands == p


class _Painter(BoardPainter[GameState, Layout, Palette]):
    """Draws one picture on a supersampled canvas. ``lay`` is the scaled layout."""

    def pawn(self, x: float, foot_y: float, large: bool, color: RGB) -> None:
        """A figure standing with its feet at ``foot_y``, centred on ``x``."""
        lay = self.lay
        w, h = (lay.large_w, lay.large_h) if large else (lay.small_w, lay.small_h)
        edge = self.pal.large_ring if large else self.pal.figure_edge
        width = lay.large_ring if large else lay.figure_outline
        base_top = foot_y - h * lay.pawn_base_h
        neck_y = foot_y - h * lay.pawn_neck_y
        neck = w * lay.pawn_neck_w / 2
        head_r = w * lay.pawn_head_r
        head_y = foot_y - h * lay.pawn_head_y
        # The silhouette grown by each outline (outermost first), then the fill on top.
        # The large figure has a gold ring inside a dark hairline, visible on every stone.
        rings = [(width + lay.figure_outline, self.pal.figure_edge), (width, edge)] if large else [(width, edge)]
        for grow, fill in [*rings, (0, color)]:
            self.d.polygon(
                [
                    (x - w / 2 - grow, foot_y + grow),
                    (x + w / 2 + grow, foot_y + grow),
                    (x + neck + grow, neck_y),
                    (x - neck - grow, neck_y),
                ],
                fill=fill,
            )
            r = head_r + grow
            self.d.ellipse((x - r, head_y - r, x + r, head_y + r), fill=fill)
            self.d.rounded_rectangle(
                (x - w / 2 - grow, base_top - grow, x + w / 2 + grow, foot_y + grow), radius=w / 4 + grow, fill=fill
            )

    def gem(self, cx: float, cy: float, r: float) -> None:
        """A wishing stone: a faceted gem."""
        pts = [(cx + r * math.cos(math.radians(a)), cy + r * math.sin(math.radians(a))) for a in range(-90, 270, 60)]
        self.d.polygon(pts, fill=self.pal.gem, outline=self.pal.gem_edge, width=self.lay.icon_line)
        shine = [pts[0], pts[5], (cx, cy)]
        self.d.polygon(shine, fill=self.pal.gem_shine)

    def tile(self, cx: float, cy: float, code: int) -> None:
        lay, pal = self.lay, self.pal
        r = lay.tile_r
        face = pal.points_face if code in TILE_POINTS else pal.tile_face
        self.d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=face, outline=pal.tile_edge, width=lay.tile_outline)
        if code == WISHING_STONE:
            self.gem(cx, cy, r * lay.gem_size)
        elif code == CLOVER:
            self.clover(cx, cy, r * lay.clover_size)
        else:
            self.text((cx, cy), str(TILE_POINTS[code]), lay.font_value, pal.points_text, anchor="mm", bold=True)

    def arrow(self, x: float, y: float, up: bool, fill: RGB) -> None:
        a = self.lay.arrow
        pts = (
            [(x - a, y + a / 2), (x + a, y + a / 2), (x, y - a)]
            if up
            else [(x - a, y - a / 2), (x + a, y - a / 2), (x, y + a)]
        )
        self.d.polygon(pts, fill=fill)

    # ---------------------------------------------------------------- parts
    def title(self) -> None:
        s = self.state
        if s.phase == Phase.OVER:
            status = self.game_over_status(_END_TEXT[s.end])
        else:
            status = f"Turn {s.turn + 1}  |  {player_name(s.current, self.names)} to {_STEP_TEXT[s.phase]}"
        goal = f"draw pile {len(s.deck)}   |   figures in goal {s.goal_count}/{GOAL_FIGURES_TO_END}"
        self.title_bar("KELTIS", status, goal)

    def board(self) -> None:
        lay, pal = self.lay, self.pal
        self.board_frame()
        # The goal area (R1, R8.1): one gold band behind rows 7-9 of every path.
        top, bottom = lay.stone_box(0, END_ROW)[1], lay.stone_box(0, GOAL_FIRST_ROW)[3]
        self.band(top - lay.goal_band_pad, bottom + lay.goal_band_pad, lay.stone_radius, pal.goal_band)
        hy = self.column_headers(
            lay.paths_x, lay.path_header_h, lay.stone_pad, lay.stone_radius, pal.paths, pal.path_text, COLORS
        )
        self.text((lay.board_x + lay.board_pad + lay.label_w / 2, hy), "points", lay.font_small, pal.muted, anchor="mm")
        # Rows: value badge, then one stone per path.
        for r in range(1, END_ROW + 1):
            _, y0, _, y1 = lay.stone_box(0, r)
            cy = (y0 + y1) / 2
            bx = lay.board_x + lay.board_pad + lay.label_w / 2
            fill = pal.badge_goal if r >= GOAL_FIRST_ROW else pal.badge
            ink = pal.minus if r in MINUS_ROWS else pal.text
            self.row_badge(bx, cy, fill, pal.stone_edge, ROW_VALUES[r], ink)
            for c in range(NUM_COLORS):
                self.stone(c, r)
        self.start_stone()
        self.legend(self.legend_items(), lay.tile_r)

    def stone(self, c: int, r: int) -> None:
        s, lay, pal = self.state, self.lay, self.pal
        box = lay.stone_box(c, r)
        is_tile_stone = r == END_ROW or r in s.dark_rows[c]
        whiten = pal.tile_stone_white_mix if is_tile_stone else pal.stone_white_mix
        self.d.rounded_rectangle(
            box,
            radius=lay.stone_radius,
            fill=mix(pal.paths[c], WHITE, whiten),
            outline=pal.stone_edge,
            width=lay.box_border,
        )
        x0, y0, _, y1 = box
        code = s.tiles[c][r]
        if code != NO_TILE:
            self.tile(x0 + lay.tile_left + lay.tile_r, (y0 + y1) / 2, code)
        n = s.num_players
        for p in range(n):
            if s.pos[p][c] == r:
                x = lay.figure_slot_x(c, r, p, n)
                self.pawn(x, y1 - lay.figure_base, s.large[p] == c, pal.players[p])

    def start_stone(self) -> None:
        s, lay, pal = self.state, self.lay, self.pal
        box = lay.start_box()
        x0, y0, x1, y1 = box
        self.d.rounded_rectangle(
            box, radius=lay.stone_radius, fill=pal.start_stone, outline=pal.stone_edge, width=lay.box_border
        )
        self.text((x0 + lay.box_pad, (y0 + y1) / 2), "start", lay.font_head, pal.muted, anchor="lm", bold=True)
        label_w = self.text_w("start", lay.font_head) + 2 * lay.box_pad
        n = s.num_players
        group_w = (x1 - x0 - label_w) / n
        foot = y1 - lay.figure_base
        for p in range(n):
            x = x0 + label_w + p * group_w + lay.large_w / 2
            if s.large[p] < 0:
                self.pawn(x, foot, True, pal.players[p])
                x += lay.large_w / 2 + lay.start_fig_gap + lay.small_w / 2
            for _ in range(s.small_figures_left(p)):
                self.pawn(x, foot, False, pal.players[p])
                x += lay.small_w + lay.start_fig_gap

    def legend_items(self) -> list[LegendItem]:
        lay, pal = self.lay, self.pal
        y = lay.legend_y
        foot = y + lay.small_h / 2
        return [
            ("small figure", lambda x: self.pawn(x, foot, False, pal.players[0])),
            (
                "large figure (scores x2)",
                lambda x: self.pawn(x, foot + (lay.large_h - lay.small_h) / 2, True, pal.players[0]),
            ),
            ("wishing stone", lambda x: self.tile(x, y, WISHING_STONE)),
            ("clover: bonus step", lambda x: self.tile(x, y, CLOVER)),
            ("points", lambda x: self.tile(x, y, next(iter(TILE_POINTS)))),
            ("goal area", lambda x: self.swatch(x, y, lay.tile_r, pal.goal_band)),
        ]

    # ---------------------------------------------------------------- side panel
    def panel(self, show_hands: str | int | None) -> None:
        lay = self.lay
        y = lay.board_y
        for p in range(self.state.num_players):
            self.player_box(p, y, _hand_shown(show_hands, p, self.state))
            y += lay.box_h + lay.box_gap
        self.piles(y)

    def player_box(self, p: int, y: int, show_hand: bool) -> None:
        s, lay, pal = self.state, self.lay, self.pal
        x0, x1 = lay.panel_x, lay.panel_x + lay.panel_w
        active, winner = self.player_frame(p, (x0, y, x1, y + lay.box_h))
        x = x0 + lay.box_pad
        right = x1 - lay.box_pad
        # Header: figure swatch, name, score.
        cy = y + lay.box_pad + lay.header_h / 2
        self.pawn(x + lay.small_w / 2, cy + lay.small_h / 2 - lay.figure_base / 2, False, pal.players[p])
        tag = _STEP_TAG[s.phase] if active else "winner" if winner else ""
        self.player_header(p, x + lay.small_w + lay.box_pad, cy, right, tag)
        # Stats: wishing stones (with what they are worth now), tile points, hand, start stone.
        cy += lay.header_h / 2 + lay.stats_h / 2
        self.gem(x + lay.gem_r, cy, lay.gem_r)
        held = s.wishing[p]
        worth = WISHING_SCORES[min(held, len(WISHING_SCORES) - 1)]
        stones = "wishing stone" if held == 1 else "wishing stones"
        stats = f"{held} {stones} ({worth:+d})   |   tile points {s.tile_points[p]}"
        self.text((x + 2 * lay.gem_r + lay.chip_gap * 2, cy), stats, lay.font_text, pal.text, anchor="lm")
        # Played rows (R4): one column per colour, direction arrow, values in order.
        top = cy + lay.stats_h / 2
        col_w = (right - x) / NUM_COLORS
        for c in range(NUM_COLORS):
            cx0 = x + c * col_w
            bar = (cx0, top, cx0 + col_w - lay.chip_gap, top + lay.rows_bar_h)
            row = s.rows[p][c]
            tint = pal.paths[c] if row else mix(pal.paths[c], WHITE, pal.stone_white_mix)
            self.d.rounded_rectangle(bar, radius=lay.chip_radius, fill=tint)
            label = f"{COLORS[c]} ({len(row)})" if row else COLORS[c]
            self.text(
                (cx0 + lay.chip_gap * 2, top + lay.rows_bar_h / 2),
                label,
                lay.font_small,
                pal.path_text[c] if row else pal.muted,
                anchor="lm",
            )
            direction = s.direction[p][c]
            if direction:
                self.arrow(bar[2] - lay.arrow * 2, top + lay.rows_bar_h / 2, direction > 0, pal.path_text[c])
            self.row_values(row, cx0, top + lay.rows_bar_h, col_w - lay.chip_gap)
        # Hand: card chips (only where the caller asked to show it).
        hy = top + lay.rows_bar_h + lay.rows_lines * lay.rows_line_h + (lay.hand_h - lay.chip_h) / 2
        hx = x
        self.text((hx, hy + lay.chip_h / 2), "hand", lay.font_text, pal.muted, anchor="lm")
        hx += self.text_w("hand", lay.font_text) + lay.box_pad
        for k in s.hands[p]:
            if show_hand:
                self.card_chip(hx, hy, k)
            else:  # R10: other hands are private; only their size is public
                self.card_back(hx, hy)
            hx += lay.chip_w + lay.chip_gap
        if not show_hand:
            self.text(
                (hx + lay.chip_gap, hy + lay.chip_h / 2),
                f"{len(s.hands[p])} cards, hidden",
                lay.font_small,
                pal.muted,
                anchor="lm",
            )

    def row_values(self, row: list[int], x: float, y: float, width: float) -> None:
        """The values of a played row, wrapped over ``rows_lines`` lines; when they do
        not fit, the oldest values give way to "..." so that the latest stay visible."""
        lay = self.lay
        room = width - lay.chip_gap * 2
        words = [str(v) for v in row]
        lines = self.wrap(words, room)
        dropped = 0
        while len(lines) > lay.rows_lines:
            dropped += 1
            lines = self.wrap(["...", *words[dropped:]], room)
        for i, line in enumerate(lines):
            self.text(
                (x + lay.chip_gap * 2, y + (i + 0.5) * lay.rows_line_h),
                line,
                lay.font_small,
                self.pal.text,
                anchor="lm",
            )

    def wrap(self, words: list[str], width: float) -> list[str]:
        lines: list[str] = []
        for word in words:
            if lines and self.text_w(f"{lines[-1]} {word}", self.lay.font_small) <= width:
                lines[-1] = f"{lines[-1]} {word}"
            else:
                lines.append(word)
        return lines

    def card_chip(self, x: float, y: float, kind: int) -> None:
        lay, pal = self.lay, self.pal
        c = card_color(kind)
        self.d.rounded_rectangle(
            (x, y, x + lay.chip_w, y + lay.chip_h),
            radius=lay.chip_radius,
            fill=pal.paths[c],
            outline=pal.stone_edge,
            width=lay.box_border,
        )
        self.text(
            (x + lay.chip_w / 2, y + lay.chip_h / 2),
            str(card_value(kind)),
            lay.font_text,
            pal.path_text[c],
            anchor="mm",
            bold=True,
        )

    def card_back(self, x: float, y: float) -> None:
        lay, pal = self.lay, self.pal
        self.d.rounded_rectangle(
            (x, y, x + lay.chip_w, y + lay.chip_h),
            radius=lay.chip_radius,
            fill=pal.deck_back,
            outline=pal.deck_edge,
            width=lay.box_border,
        )

    def piles(self, y: int) -> None:
        s, lay, pal = self.state, self.lay, self.pal
        x = lay.panel_x
        self.text(
            (x, y + lay.piles_title_h / 2), "discard piles (top card, size)", lay.font_text, pal.muted, anchor="lm"
        )
        deck_label = "draw pile"
        deck_x = lay.panel_x + lay.panel_w - lay.pile_w
        self.text(
            (deck_x + lay.pile_w / 2, y + lay.piles_title_h / 2), deck_label, lay.font_text, pal.muted, anchor="mm"
        )
        top = y + lay.piles_title_h
        for c in range(NUM_COLORS):
            box = (x, top, x + lay.pile_w, top + lay.pile_h)
            pile = s.discards[c]
            cx = x + lay.pile_w / 2
            if pile:
                self.d.rounded_rectangle(
                    box, radius=lay.pile_radius, fill=pal.paths[c], outline=pal.stone_edge, width=lay.box_border
                )
                self.text(
                    (cx, top + lay.pile_h / 2), str(pile[-1]), lay.font_pile, pal.path_text[c], anchor="mm", bold=True
                )
                label = f"{len(pile)} card" + ("s" if len(pile) > 1 else "")
            else:
                self.d.rounded_rectangle(
                    box,
                    radius=lay.pile_radius,
                    fill=mix(pal.paths[c], WHITE, pal.stone_white_mix),
                    outline=pal.stone_edge,
                    width=lay.box_border,
                )
                label = "empty"
            if c == s.discarded:  # R3b: closed for this turn's draw
                self.d.line((box[0], box[1], box[2], box[3]), fill=pal.closed, width=lay.active_border)
                self.d.line((box[0], box[3], box[2], box[1]), fill=pal.closed, width=lay.active_border)
                label = "closed"
            self.text(
                (cx, top + lay.pile_h + lay.pile_label_h / 2),
                label,
                lay.font_small,
                pal.closed if c == s.discarded else pal.text,
                anchor="mm",
            )
            x += lay.pile_w + lay.pile_gap
        box = (deck_x, top, deck_x + lay.pile_w, top + lay.pile_h)
        self.d.rounded_rectangle(
            box, radius=lay.pile_radius, fill=pal.deck_back, outline=pal.deck_edge, width=lay.box_border
        )
        inset = lay.chip_gap * 2
        self.d.rounded_rectangle(
            (box[0] + inset, box[1] + inset, box[2] - inset, box[3] - inset),
            radius=lay.chip_radius,
            outline=pal.goal_band,
            width=lay.box_border,
        )
        self.text(
            ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2),
            str(len(s.deck)),
            lay.font_pile,
            WHITE,
            anchor="mm",
            bold=True,
        )
        self.text(
            ((box[0] + box[2]) / 2, top + lay.pile_h + lay.pile_label_h / 2),
            "cards",
            lay.font_small,
            pal.text,
            anchor="mm",
        )


def board_image(
    state: GameState,
    show_hands: str | int | None = "current",
    names: Sequence[str] | None = None,
    layout: Layout = DEFAULT_LAYOUT,
    palette: Palette = DEFAULT_PALETTE,
) -> np.ndarray:
    """The board as an ``(H, W, 3)`` ``uint8`` RGB picture.

    ``show_hands``: ``"current"`` (default) shows the hand of the player to act, ``"all"``
    every hand, an integer that seat's hand only, ``None`` no hand (as in
    :func:`~keltis_env.games.keltis.render_text.board_text`). ``names``: a label per seat (bot specs,
    "you"), shown after "Player k". The size depends only on the number of players
    (:meth:`Layout.size`). Raises :class:`RenderUnavailableError` when Pillow is missing.
    """
    painter = _Painter(state, layout, palette, names)
    painter.title()
    painter.board()
    painter.panel(show_hands)
    return painter.finish(layout)


__all__ = [
    "DEFAULT_LAYOUT",
    "DEFAULT_PALETTE",
    "Layout",
    "Palette",
    "board_image",
]
