"""The games of the package, one sub-package each, with the same file names for the same
jobs (constants, config, actions, state, view, serialize, record, render_text: the engine,
standard library only; encoding (numpy), render_image (Pillow) and bots, loaded on
demand). Importing this package registers every game with :mod:`keltis_env.core.game`."""

from . import dice, keltis

__all__ = ["dice", "keltis"]
