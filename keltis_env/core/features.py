"""Optional observation features: segments computed by a model of the game, appended to
the standard observation (standard library only; the encoders bring numpy).

A game may offer named features (:attr:`keltis_env.core.game.GameDescriptor.features`),
for example the card game's ``plan``: its plan model's value of every action. An encoder
made with features (``descriptor.make_encoder(num_players, features=("plan",))``) is the
game's standard encoder with each feature's segments after the standard ones, so the
standard part of the vector, its indices and its values are unchanged.

Features are for learners and the policies trained with them (the learner view's
``features``, the training config's ``env.features``); a policy file names the features it
was trained with and its bot builds the same encoder. The PettingZoo environments keep
the standard observation. A feature reads only its player's view, like the encoder, so it
can never hold a hidden card.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .segments import Segment, build_segments


@dataclass(frozen=True)
class Feature:
    """A named feature: its segments ``(name, size, description)`` and ``fill(view, row)``,
    which writes the feature's values into ``row`` (a float32 numpy vector of the
    segments' total size, zeroed beforehand)."""

    name: str
    segments: tuple[tuple[str, int, str], ...]
    fill: Callable[[Any, Any], None]

    @property
    def size(self) -> int:
        return sum(size for _, size, _ in self.segments)


def check_features(features: Iterable[str] | None, known: Iterable[str], game: str) -> tuple[str, ...]:
    """``features`` as a tuple of distinct known names, or a ``ValueError`` naming the
    unknown or repeated one and the game's features."""
    if features is None:
        return ()
    if isinstance(features, str):
        raise ValueError(f"features must be a list of feature names, got the string {features!r}")
    names = tuple(features)
    known = sorted(known)
    offered = ", ".join(known) if known else "none"
    for name in names:
        if not isinstance(name, str) or name not in known:
            raise ValueError(f"unknown observation feature {name!r} for game {game!r}; its features: {offered}")
    if len(set(names)) != len(names):
        raise ValueError(f"observation features must be distinct, got {list(names)}")
    return names


class FeatureEncoder:
    """A game's standard encoder with the segments of ``features`` appended (see the module
    doc): same ``mask``, ``encode`` and ``encode_into`` as the standard encoder, with the
    features' values in the last columns."""

    def __init__(self, base: Any, features: Sequence[Feature]) -> None:
        self.base = base
        self.features = tuple(features)
        self.names = tuple(f.name for f in self.features)
        self.num_players = base.num_players
        extra = build_segments([seg for f in self.features for seg in f.segments])
        offset = int(base.size)
        self.segments: list[Segment] = list(base.segments) + [
            Segment(s.name, s.size, s.description, s.start + offset) for s in extra
        ]
        self.size = offset + sum(f.size for f in self.features)
        bounds, at = [], offset
        for f in self.features:
            bounds.append((f, at, at + f.size))
            at += f.size
        self._bounds = bounds

    def mask(self, legal_actions: Any) -> Any:
        return self.base.mask(legal_actions)

    def encode(self, view: Any) -> Any:
        import numpy as np  # imported where it is used: an encoder holds no module, so it pickles

        obs = np.zeros(self.size, np.float32)
        obs[: self.base.size] = self.base.encode(view)
        for f, lo, hi in self._bounds:
            f.fill(view, obs[lo:hi])
        return obs

    def encode_into(self, views: Sequence[Any], out: Any, encoders: Sequence[Any] | None = None) -> None:
        """:meth:`encode` for many views into the rows of ``out`` (the standard part in one
        batched pass where the standard encoder has one)."""
        n = self.base.size
        bases = None if encoders is None else [getattr(e, "base", e) for e in encoders]
        if callable(getattr(self.base, "encode_into", None)):
            self.base.encode_into(views, out[:, :n], bases)
        else:
            for k, view in enumerate(views):
                out[k, :n] = (self.base if bases is None else bases[k]).encode(view)
        out[:, n:] = 0.0
        for k, view in enumerate(views):
            row = out[k]
            for f, lo, hi in self._bounds:
                f.fill(view, row[lo:hi])


__all__ = ["Feature", "FeatureEncoder", "check_features"]
