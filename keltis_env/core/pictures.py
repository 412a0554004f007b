"""What every game's pictures share: Pillow loaded on demand with a clear error, fonts,
PNG files, and a matplotlib window for the ``human`` render mode (game-independent)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np


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


__all__ = [
    "RGB",
    "WHITE",
    "ImageWindow",
    "RenderUnavailableError",
    "font",
    "mix",
    "pillow",
    "player_name",
    "save_png",
    "scale_layout",
    "to_array",
]
