"""A game's board in one render mode, shared by the AEC environments and the learner view.

Game-independent: a game plugs in through its
:class:`~keltis_env.core.game.GameDescriptor` (its text board and, where it has one, its
picture). Nothing here needs PettingZoo or Gymnasium; the picture modes load Pillow (and,
for ``"human"``, matplotlib) on demand through :mod:`keltis_env.core.render_image`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from keltis_env.core.game import GameDescriptor

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BoardRenderer", "render_modes"]


def render_modes(game: GameDescriptor) -> list[str]:
    """The render modes of a game: text always, a picture where the game draws one."""
    return ["ansi", "human", "rgb_array"] if game.has_pictures else ["ansi", "human"]


class BoardRenderer:
    """A game's board in one render mode, for the AEC environments and the learner view.

    ``"ansi"``: the text board; ``"rgb_array"``: the picture as an (H, W, 3) uint8 array;
    ``"human"``: shows the picture in a window (updated on every call), or, for a game
    without a picture or where no window can open (no display, no matplotlib), prints the
    text board, warning once.
    """

    def __init__(self, game: GameDescriptor, mode: str, title: str = "board", fps: float = 2.0) -> None:
        modes = render_modes(game)
        if mode not in modes:
            raise ValueError(f"render_mode must be None or one of {modes}, got {mode!r}")
        self.game = game
        self.mode = mode
        self.title = title
        self.fps = fps
        self._window: Any = None  # the "human" mode's window, opened on first use; False: unavailable

    def render(self, state: Any) -> str | np.ndarray | None:
        if self.mode == "rgb_array":
            image: np.ndarray = self.game.board_image(state)
            return image
        if self.mode == "human" and self.game.has_pictures and self._window is not False:
            from keltis_env.core.render_image import ImageWindow, RenderUnavailableError

            try:
                if self._window is None:
                    self._window = ImageWindow(self.title, self.fps)
                self._window.show(self.game.board_image(state))
                return None
            except RenderUnavailableError as exc:
                self._window = False  # do not try (and warn) again
                warnings.warn(f"render_mode='human' shows the text board instead of the picture: {exc}", stacklevel=3)
        text = self.game.board_text(state)
        if self.mode == "ansi":
            return text
        print(text)
        return None

    def close(self) -> None:
        if self._window:
            self._window.close()
        self._window = None
