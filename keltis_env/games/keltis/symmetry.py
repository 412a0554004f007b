"""The card game's symmetry: the five colours play alike (docs/rules.md R1-R9 name no colour), so
relabelling them (cards, discard piles, paths with their dark stones and tiles, figures,
actions) maps a game to another game with the same rules. The tile layout is part of every
observation, so a relabelled position is told apart from the original only by what matters.

:func:`colour_symmetry` gives the 120 relabellings as index maps of the observation (the
``plan`` feature included) and of the action ids (:class:`keltis_env.core.symmetry.Symmetry`);
:func:`relabel_state` relabels a whole state, which the tests use to check the maps against
the engine.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from keltis_env.core.symmetry import Symmetry

from .actions import ACTION_RANGES, NUM_ACTIONS
from .constants import END_ROW, NUM_COLORS, NUM_VALUES

#: every order of the colour indices; entry ``g`` relabels colour ``c`` as ``perm[c]``
COLOUR_PERMUTATIONS: tuple[tuple[int, ...], ...] = tuple(itertools.permutations(range(NUM_COLORS)))

#: action ranges by what their offset is: a card kind (colour * 11 + value) or a colour
_CARD_RANGES = ("play", "play_large", "discard")
_COLOUR_RANGES = ("draw_discard", "bonus_advance", "bonus_open_small", "bonus_open_large")
_FIXED_RANGES = ("draw_deck", "pass")

#: observation segments (the ``p<i>.`` prefix dropped) made of one block per colour, and the block's width
_COLOUR_BLOCKS = {
    "hand": NUM_VALUES, "discards": NUM_VALUES, "played": NUM_VALUES, "unseen": NUM_VALUES,
    "discard_sizes": 1, "closed_pile": 1, "discard_top": NUM_VALUES, "tiles": END_ROW * 5,
    "last": NUM_VALUES, "direction": 2, "figure": END_ROW + 1,
    "rows.fits": NUM_VALUES, "rows.cuts": NUM_VALUES, "rows.others": NUM_VALUES,  # the rows feature, per card kind
}
#: segments no relabelling changes
_FIXED = {"phase", "wishing", "to_act", "draw_pile", "goal_count", "turn", "tile_points", "score"}
#: segments over the action ids (the ``plan`` feature)
_PER_ACTION = {"plan.values", "plan.choice"}


def action_map(perm: Sequence[int]) -> np.ndarray:
    """``out[a]``: the id of action ``a`` once colour ``c`` is relabelled ``perm[c]``."""
    out = np.arange(NUM_ACTIONS, dtype=np.int64)
    covered = 0
    for name in _CARD_RANGES:
        lo, hi = ACTION_RANGES[name]
        kinds = np.arange(hi - lo)
        out[lo:hi] = lo + np.asarray(perm)[kinds // NUM_VALUES] * NUM_VALUES + kinds % NUM_VALUES
        covered += hi - lo
    for name in _COLOUR_RANGES:
        lo, hi = ACTION_RANGES[name]
        out[lo:hi] = lo + np.asarray(perm)
        covered += hi - lo
    covered += sum(hi - lo for name in _FIXED_RANGES for lo, hi in [ACTION_RANGES[name]])
    if covered != NUM_ACTIONS or set(ACTION_RANGES) != {*_CARD_RANGES, *_COLOUR_RANGES, *_FIXED_RANGES}:
        raise AssertionError("an action range is missing from the colour symmetry")
    return out


def observation_map(segments: Sequence[Any], perm: Sequence[int]) -> np.ndarray:
    """``src`` with ``obs[src]`` the observation once colour ``c`` is relabelled ``perm[c]``,
    for an observation laid out as ``segments`` (the encoder's, features included)."""
    size = segments[-1].start + segments[-1].size
    src = np.arange(size, dtype=np.int64)
    actions = action_map(perm)
    for seg in segments:
        base = seg.name.split(".", 1)[1] if seg.name.startswith("p") and seg.name[1:2].isdigit() else seg.name
        lo = seg.start
        if base in _FIXED:
            continue
        if base in _PER_ACTION:
            src[lo + actions] = lo + np.arange(NUM_ACTIONS)
        elif base == "large":  # start stone, then one entry per path
            src[lo + 1 + np.asarray(perm)] = lo + 1 + np.arange(NUM_COLORS)
        elif base in _COLOUR_BLOCKS:
            width = _COLOUR_BLOCKS[base]
            if seg.size != width * NUM_COLORS:
                raise AssertionError(f"segment {seg.name!r} has {seg.size} values, not {NUM_COLORS} x {width}")
            for c in range(NUM_COLORS):
                src[lo + perm[c] * width : lo + (perm[c] + 1) * width] = np.arange(lo + c * width, lo + (c + 1) * width)
        else:
            raise ValueError(f"the colour symmetry does not know the observation segment {seg.name!r}")
    return src


#: the 20 affine relabellings c -> a * c + b (mod 5), a subgroup of the 120 (the identity first)
AFFINE_PERMUTATIONS: tuple[tuple[int, ...], ...] = tuple(
    tuple((a * c + b) % NUM_COLORS for c in range(NUM_COLORS)) for a in range(1, NUM_COLORS) for b in range(NUM_COLORS))


def _symmetry(name: str, perms: Sequence[Sequence[int]], num_players: int, features: Sequence[str]) -> Symmetry:
    from .game import GAME

    segments = GAME.make_encoder(num_players, features).segments
    return Symmetry(name, np.stack([observation_map(segments, p) for p in perms]),
                    np.stack([action_map(p) for p in perms]))


def colour_symmetry(num_players: int, features: Sequence[str] = ()) -> Symmetry:
    """The 120 colour relabellings of a ``num_players`` observation with ``features``."""
    return _symmetry("colours", COLOUR_PERMUTATIONS, num_players, features)


def affine_colour_symmetry(num_players: int, features: Sequence[str] = ()) -> Symmetry:
    """The 20 affine colour relabellings (:data:`AFFINE_PERMUTATIONS`), a subgroup of the 120
    that still takes any colour to any other: a policy averaged over them costs a sixth of
    one averaged over all."""
    return _symmetry("colours_affine", AFFINE_PERMUTATIONS, num_players, features)


def relabel_state(state: Any, perm: Sequence[int]) -> Any:
    """A copy of ``state`` with colour ``c`` relabelled ``perm[c]`` everywhere (cards in hands,
    draw pile and removed cards keep their order; hands stay sorted)."""
    if sorted(perm) != list(range(NUM_COLORS)):
        raise ValueError(f"perm must order the colour indices 0..{NUM_COLORS - 1}, got {list(perm)}")

    def card(k: int) -> int:
        return perm[k // NUM_VALUES] * NUM_VALUES + k % NUM_VALUES

    def by_colour(seq: Sequence[Any]) -> list[Any]:
        out: list[Any] = [None] * NUM_COLORS
        for c, item in enumerate(seq):
            out[perm[c]] = item
        return out

    s = state.clone()
    s.dark_rows = tuple(by_colour(state.dark_rows))
    s.hands = [sorted(map(card, hand)) for hand in state.hands]
    s.deck = [card(k) for k in state.deck]
    s.removed = sorted(map(card, state.removed))
    s.discards = by_colour([pile[:] for pile in state.discards])
    s.rows = [by_colour([row[:] for row in rows]) for rows in state.rows]
    s.last = [by_colour(last) for last in state.last]
    s.direction = [by_colour(d) for d in state.direction]
    s.pos = [by_colour(p) for p in state.pos]
    s.large = [perm[c] if c >= 0 else c for c in state.large]
    s.tiles = by_colour([column[:] for column in state.tiles])
    s.discarded = perm[state.discarded] if state.discarded >= 0 else state.discarded
    return s


__all__ = [
    "AFFINE_PERMUTATIONS",
    "COLOUR_PERMUTATIONS",
    "action_map",
    "affine_colour_symmetry",
    "colour_symmetry",
    "observation_map",
    "relabel_state",
]
