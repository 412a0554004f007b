"""What every game's board picture shares: Pillow loaded on demand with a clear error,
fonts, PNG files, a matplotlib window for the ``human`` render mode, and the board painter
(game-independent; a game's text board is its ``render_text``, a render mode's choice
between the two is :mod:`keltis_env.core.render`).

A picture is a title bar over a board (a label column of row value badges, then one
column per colour under a header, a legend at the bottom) beside a side panel with one
box per player. A game's ``render_image`` derives its ``Layout``, ``Palette`` and painter
from :class:`BoardLayout`, :class:`BoardPalette` and :class:`BoardPainter` and draws what
is its own (pieces, tokens, the panel's contents). Pillow is loaded when a picture is
drawn (:func:`pillow`), so importing this module needs numpy alone.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from .state import TurnBasedState

# ---------------------------------------------------------------------- Pillow, fonts, files, the window


class RenderUnavailableError(RuntimeError):
    """A picture cannot be drawn or shown here (Pillow missing, no display)."""


def pillow() -> tuple[Any, Any, Any]:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise RenderUnavailableError(
            "drawing the board needs Pillow: pip install 'keltis-rl[render]' (or pip install pillow)"
        ) from None
    return Image, ImageDraw, ImageFont


@functools.lru_cache(maxsize=32)
def font(size: int) -> Any:
    _, _, image_font = pillow()
    try:
        return image_font.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size only
        return image_font.load_default()


def save_png(image: np.ndarray, path: Any) -> None:
    """Write an ``(H, W, 3)`` ``uint8`` array as a PNG file."""
    pil_image, _, _ = pillow()
    pil_image.fromarray(image).save(path, format="PNG", optimize=True)


#: matplotlib backends that draw into files or memory and never open a window.
_NO_WINDOW_BACKENDS = ("agg", "cairo", "pdf", "pgf", "ps", "svg", "template", "module://matplotlib_inline")


class ImageWindow:
    """A matplotlib window that shows one picture and is updated in place.

    :meth:`show` raises :class:`RenderUnavailableError` where no window can be opened
    (matplotlib missing, a non-interactive backend such as ``agg`` on a machine without a
    display); callers fall back to text.
    """

    def __init__(self, title: str = "Keltis", fps: float = 2.0) -> None:
        self.title = title
        self.pause = 1.0 / fps if fps > 0 else 0.001
        self._fig: Any = None
        self._artist: Any = None

    def show(self, image: np.ndarray) -> None:
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise RenderUnavailableError("showing the picture needs matplotlib: pip install matplotlib") from None
        backend = str(plt.get_backend()).lower()
        if backend.startswith(_NO_WINDOW_BACKENDS):
            raise RenderUnavailableError(f"matplotlib's backend {backend!r} cannot open a window (no display?)")
        try:
            if self._fig is None or not plt.fignum_exists(self._fig.number):
                height, width = image.shape[:2]
                dpi = 100
                self._fig = plt.figure(self.title, figsize=(width / dpi, height / dpi), dpi=dpi)
                ax = self._fig.add_axes((0, 0, 1, 1))
                ax.set_axis_off()
                self._artist = ax.imshow(image)
                plt.show(block=False)
            else:
                self._artist.set_data(image)
                self._fig.canvas.draw_idle()
            plt.pause(self.pause)
        except Exception as exc:  # a GUI toolkit that fails without a display, etc.
            self._fig = None
            raise RenderUnavailableError(f"cannot open a matplotlib window: {exc}") from exc

    def close(self) -> None:
        if self._fig is not None:
            import matplotlib.pyplot as plt

            plt.close(self._fig)
            self._fig = None


RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)


def mix(color: RGB, other: RGB, t: float) -> RGB:
    """``color`` moved a fraction ``t`` towards ``other``."""
    r, g, b = (round(a + (o - a) * t) for a, o in zip(color, other, strict=True))
    return r, g, b


def player_name(p: int, names: Sequence[str] | None) -> str:
    """``"Player 2 (heuristic)"``, or ``"Player 2"`` without a name for that seat."""
    if names is not None and p < len(names) and names[p]:
        return f"Player {p} ({names[p]})"
    return f"Player {p}"


def scale_layout(layout: Any, k: int, unscaled: Sequence[str]) -> Any:
    """A layout dataclass ``k`` times larger: every ``int`` field but ``unscaled``
    (counts and hairline widths) multiplied by ``k``."""
    changes = {
        f.name: getattr(layout, f.name) * k
        for f in dataclasses.fields(layout)
        if f.type == "int" and f.name not in unscaled
    }
    return dataclasses.replace(layout, **changes)


def to_array(img: Any, size: tuple[int, int]) -> np.ndarray:
    """A Pillow picture drawn at a multiple of ``size``, scaled down to ``size`` (smooth
    edges), as an (H, W, 3) uint8 array."""
    image, _, _ = pillow()
    if img.size != size:
        img = img.resize(size, image.Resampling.LANCZOS)
    return np.asarray(img, dtype=np.uint8).copy()


# ---------------------------------------------------------------------- the board painter
_Self = TypeVar("_Self", bound="BoardLayout")


@dataclass(frozen=True)
class BoardLayout:
    """The sizes every picture has, in output pixels (1x scale).

    Integer fields are lengths and scale with :meth:`scaled`, except those a game names
    in ``UNSCALED`` (counts and hairline widths); float fields are proportions. The first
    six fields differ between the games, which give them their defaults.
    """

    #: fields that are counts or hairline widths, not lengths: never scaled
    UNSCALED: ClassVar[tuple[str, ...]] = ("supersample", "bold_stroke")
    #: the board's colour columns
    COLUMNS: ClassVar[int] = 5

    label_w: int  # the label column: row value badges (and what a game adds)
    cell_w: int  # one colour column
    header_h: int  # a player's box: name, step and score
    stats_h: int  # a player's box: the line under the header
    chip_gap: int
    chip_radius: int
    margin: int = 16  # around everything
    gap: int = 18  # between the board and the side panel
    title_h: int = 46  # title bar: game, turn, who acts and which step
    title_lift: int = 5  # the title's text sits this much above the middle of its bar
    cell_h: int = 50
    badge_r: int = 15  # row value badge
    legend_h: int = 36
    board_pad: int = 10  # inside the board's frame
    slot_w: int = 24  # horizontal room of one player's piece on a square
    slots_right: int = 6  # from the last piece slot to the square's right edge
    # --- side panel
    panel_w: int = 440
    box_pad: int = 10
    box_gap: int = 10
    box_radius: int = 8
    box_border: int = 1
    active_border: int = 3
    # --- fonts (pixel sizes of Pillow's default font)
    font_title: int = 22
    font_head: int = 16
    font_text: int = 13
    font_small: int = 11
    font_value: int = 15
    bold_stroke: int = 1  # faux bold: outline width of bold text, in supersampled pixels
    # --- the clover icon, as proportions of its token's radius
    clover_size: float = 0.9
    clover_leaf: float = 0.38  # one leaf's radius
    clover_spread: float = 0.4  # leaf centres from the clover's centre
    clover_lift: float = 0.08  # the leaves sit this much above the centre, the stem below
    clover_stem: tuple[float, float] = (0.35, 0.85)  # the stem's end (right, down)
    icon_line: int = 1  # icon outlines and stems
    # --- drawing
    supersample: int = 2  # drawn this many times larger, then scaled down (smooth edges)

    def scaled(self: _Self, k: int) -> _Self:
        """The same layout ``k`` times larger (integer fields only)."""
        return scale_layout(self, k, self.UNSCALED)  # type: ignore[no-any-return]

    @property
    def board_x(self) -> int:
        return self.margin

    @property
    def board_y(self) -> int:
        return self.margin + self.title_h

    @property
    def board_w(self) -> int:
        return 2 * self.board_pad + self.label_w + self.COLUMNS * self.cell_w

    @property
    def board_h(self) -> int:
        raise NotImplementedError

    @property
    def panel_x(self) -> int:
        return self.board_x + self.board_w + self.gap

    def panel_h(self, num_players: int) -> int:
        """Height of the side panel's content for ``num_players`` players."""
        raise NotImplementedError

    @property
    def legend_y(self) -> float:
        """Middle of the legend line at the bottom of the board."""
        return self.board_y + self.board_h - self.board_pad - self.legend_h / 2

    def size(self, num_players: int) -> tuple[int, int]:
        """(width, height) of the picture of a game with ``num_players`` players."""
        width = self.panel_x + self.panel_w + self.margin
        height = self.board_y + max(self.board_h, self.panel_h(num_players)) + self.margin
        return width, height


@dataclass(frozen=True)
class BoardPalette:
    """The colours every picture has."""

    background: RGB = (244, 239, 227)
    board: RGB = (229, 220, 198)
    board_edge: RGB = (176, 160, 128)
    text: RGB = (40, 36, 30)
    muted: RGB = (120, 110, 95)
    minus: RGB = (170, 50, 40)
    #: seat 0..3: pieces, name swatches
    players: tuple[RGB, ...] = ((38, 38, 42), (250, 250, 250), (240, 128, 0), (122, 70, 190))
    clover: RGB = (40, 140, 50)
    badge: RGB = (250, 247, 238)
    box: RGB = (252, 250, 244)
    box_edge: RGB = (190, 178, 152)
    active: RGB = (212, 160, 20)


L = TypeVar("L", bound=BoardLayout)
P = TypeVar("P", bound=BoardPalette)
S = TypeVar("S", bound=TurnBasedState)

#: one legend entry: its label and what draws its icon centred on x
LegendItem = tuple[str, Callable[[float], Any]]


class BoardPainter(Generic[S, L, P]):
    """Draws one picture on a supersampled canvas. ``lay`` is the scaled layout."""

    def __init__(self, state: S, layout: L, palette: P, names: Sequence[str] | None) -> None:
        image, image_draw, _ = pillow()
        self.state = state
        self.k = layout.supersample
        self.lay = layout.scaled(self.k)
        self.pal = palette
        self.names = names
        self.img = image.new("RGB", self.lay.size(state.num_players), palette.background)
        self.d = image_draw.Draw(self.img)

    # ---------------------------------------------------------------- primitives
    def text(
        self, xy: tuple[float, float], s: str, size: int, fill: RGB, anchor: str = "la", bold: bool = False
    ) -> None:
        stroke = self.lay.bold_stroke if bold else 0
        self.d.text(xy, s, font=font(size), fill=fill, anchor=anchor, stroke_width=stroke, stroke_fill=fill)

    def text_w(self, s: str, size: int) -> float:
        return float(self.d.textlength(s, font=font(size)))

    def clover(self, cx: float, cy: float, r: float) -> None:
        """A clover: three leaves around a point, and a stem."""
        lay = self.lay
        leaf, spread, top = r * lay.clover_leaf, r * lay.clover_spread, cy - r * lay.clover_lift
        for a in (-90, 30, 150):  # three leaves, 120 degrees apart, one on top
            lx = cx + spread * math.cos(math.radians(a))
            ly = top + spread * math.sin(math.radians(a))
            self.d.ellipse((lx - leaf, ly - leaf, lx + leaf, ly + leaf), fill=self.pal.clover)
        dx, dy = lay.clover_stem
        self.d.line((cx, top, cx + r * dx, cy + r * dy), fill=self.pal.clover, width=2 * lay.icon_line)

    # ---------------------------------------------------------------- title
    def game_over_status(self, end_text: str) -> str:
        """The title's status once the game is over: why, when, and who won."""
        s = self.state
        winners = s.winners()
        who = ", ".join(player_name(p, self.names) for p in winners)
        title = "winners" if len(winners) > 1 else "winner"
        return f"Game over ({end_text}) after {s.turn} turns  |  {title}: {who}, {max(s.scores())} points"

    def title_bar(self, game: str, status: str, info: str) -> None:
        """The game's name, the status after it, and ``info`` at the right end."""
        lay, pal = self.lay, self.pal
        y = lay.margin + lay.title_h / 2 - lay.title_lift
        x: float = lay.margin
        self.text((x, y), game, lay.font_title, pal.text, anchor="lm", bold=True)
        x += self.text_w(game, lay.font_title) + lay.gap
        self.text((x, y), status, lay.font_head, pal.text, anchor="lm")
        self.text((lay.panel_x + lay.panel_w, y), info, lay.font_text, pal.muted, anchor="rm")

    # ---------------------------------------------------------------- board
    def board_frame(self) -> None:
        lay, pal = self.lay, self.pal
        frame = (lay.board_x, lay.board_y, lay.board_x + lay.board_w, lay.board_y + lay.board_h)
        self.d.rounded_rectangle(
            frame, radius=lay.box_radius, fill=pal.board, outline=pal.board_edge, width=lay.box_border
        )

    def band(self, top: float, bottom: float, radius: int, fill: RGB) -> None:
        """A band from ``top`` to ``bottom`` behind the badges and every column."""
        lay = self.lay
        x0 = lay.board_x + lay.board_pad
        x1 = x0 + lay.label_w + lay.COLUMNS * lay.cell_w
        self.d.rounded_rectangle((x0, top, x1, bottom), radius=radius, fill=fill)

    def column_headers(
        self,
        x0: int,
        height: int,
        pad: int,
        radius: int,
        fills: Sequence[RGB],
        inks: Sequence[RGB],
        labels: Sequence[str],
    ) -> float:
        """One coloured header per column, the first column's left edge at ``x0``; the
        headers' middle y."""
        lay = self.lay
        hy = lay.board_y + lay.board_pad + height / 2
        for c, label in enumerate(labels):
            left = x0 + c * lay.cell_w + pad
            box = (left, hy - height / 2 + pad, left + lay.cell_w - 2 * pad, hy + height / 2 - pad)
            self.d.rounded_rectangle(box, radius=radius, fill=fills[c])
            self.text(((box[0] + box[2]) / 2, hy), label, lay.font_head, inks[c], anchor="mm", bold=True)
        return hy

    def row_badge(self, bx: float, cy: float, fill: RGB, edge: RGB, value: int, ink: RGB) -> None:
        """A row's value on a round badge."""
        lay = self.lay
        self.d.ellipse(
            (bx - lay.badge_r, cy - lay.badge_r, bx + lay.badge_r, cy + lay.badge_r),
            fill=fill,
            outline=edge,
            width=lay.box_border,
        )
        self.text((bx, cy), f"{value}", lay.font_value, ink, anchor="mm", bold=True)

    def swatch(self, x: float, y: float, r: float, fill: RGB) -> None:
        """A square of colour (an area's legend icon) centred on (x, y)."""
        self.d.rounded_rectangle((x - r, y - r, x + r, y + r), radius=self.lay.chip_radius, fill=fill)

    def legend(self, items: Sequence[LegendItem], r: float) -> None:
        """The legend line: each item's icon (``r`` its half-width), then its label."""
        lay, pal = self.lay, self.pal
        y = lay.legend_y
        x = lay.board_x + lay.board_pad + r
        for label, draw in items:
            draw(x)
            self.text((x + r + lay.chip_gap * 2, y), label, lay.font_small, pal.text, anchor="lm")
            x += 2 * r + self.text_w(label, lay.font_small) + lay.gap

    # ---------------------------------------------------------------- side panel
    def player_frame(self, p: int, box: tuple[int, int, int, int]) -> tuple[bool, bool]:
        """Player ``p``'s box, ringed when the player acts or has won; (active, winner)."""
        s, lay, pal = self.state, self.lay, self.pal
        active = p == s.current and not s.is_over
        winner = s.is_over and p in s.winners()
        edge, width = (pal.active, lay.active_border) if active or winner else (pal.box_edge, lay.box_border)
        self.d.rounded_rectangle(box, radius=lay.box_radius, fill=pal.box, outline=edge, width=width)
        return active, winner

    def player_header(self, p: int, x: float, cy: float, right: float, tag: str) -> None:
        """The header line of player ``p``'s box: name from ``x``, ``tag`` after it, the score at ``right``."""
        lay, pal = self.lay, self.pal
        name = player_name(p, self.names)
        self.text((x, cy), name, lay.font_head, pal.text, anchor="lm", bold=True)
        if tag:
            tx = x + self.text_w(name, lay.font_head) + lay.box_pad
            self.text((tx, cy), tag, lay.font_text, pal.active, anchor="lm", bold=True)
        self.text((right, cy), f"score {self.state.score(p)}", lay.font_head, pal.text, anchor="rm", bold=True)

    def finish(self, layout: BoardLayout) -> np.ndarray:
        return to_array(self.img, layout.size(self.state.num_players))


__all__ = [
    "RGB",
    "WHITE",
    "BoardLayout",
    "BoardPainter",
    "BoardPalette",
    "ImageWindow",
    "LegendItem",
    "RenderUnavailableError",
    "font",
    "mix",
    "pillow",
    "player_name",
    "save_png",
    "scale_layout",
    "to_array",
]
