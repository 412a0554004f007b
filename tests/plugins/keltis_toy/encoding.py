"""The toy race's observation encoder (numpy): one ordered list of named segments."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keltis_env.core.segments import Segment, build_segments

from .state import COPIES, GOAL, HAND_SIZE, NUM_ACTIONS, VALUES, PlayerView


def observation_segments(num_players: int) -> list[Segment]:
    spec: list[tuple[str, int, str]] = [
        ("hand", VALUES, f"own hand: copies of each value 0..{VALUES - 1} / {COPIES}"),
        ("discards", VALUES, f"discarded copies of each value / {COPIES}"),
        ("deck", 1, f"cards left in the deck / {VALUES * COPIES}"),
    ]
    for p in range(num_players):
        spec += [
            (f"p{p}.top", VALUES + 1, "last card of the row: one-hot empty, 0..9"),
            (f"p{p}.row", 1, f"cards in the row / {GOAL}"),
            (f"p{p}.hand_size", 1, f"cards in hand / {HAND_SIZE}"),
            (f"p{p}.to_act", 1, "1 if this player acts next"),
        ]
    return build_segments(spec)


class ToyEncoder:
    """Views of a ``num_players`` toy race -> float32 vectors and int8 masks (seats relative
    to the observer)."""

    def __init__(self, num_players: int) -> None:
        self.num_players = num_players
        self.segments = observation_segments(num_players)
        self.index = {seg.name: seg for seg in self.segments}
        self.size = self.segments[-1].stop

    def encode(self, view: PlayerView) -> np.ndarray:
        out = np.zeros(self.size, dtype=np.float32)
        ix = self.index
        for v in view.hand:
            out[ix["hand"].start + v] += 1 / COPIES
        for v in view.discards:
            out[ix["discards"].start + v] += 1 / COPIES
        out[ix["deck"].start] = view.deck_size / (VALUES * COPIES)
        for rel in range(self.num_players):
            seat = (view.player + rel) % self.num_players
            row = view.rows[seat]
            out[ix[f"p{rel}.top"].start + (row[-1] + 1 if row else 0)] = 1
            out[ix[f"p{rel}.row"].start] = len(row) / GOAL
            out[ix[f"p{rel}.hand_size"].start] = view.hand_sizes[seat] / HAND_SIZE
            out[ix[f"p{rel}.to_act"].start] = float(seat == view.current_player and not view.is_over)
        return out

    def mask(self, legal: Sequence[int]) -> np.ndarray:
        out = np.zeros(NUM_ACTIONS, dtype=np.int8)
        out[list(legal)] = 1
        return out
