"""Agents (``py:`` specs) for the tests of games played in lockstep groups."""

from __future__ import annotations

import time

import numpy as np


class StallsOnce:
    """On its third decision of a game it spins for three seconds, swallowing every
    interruption (only stopping its process ends the move sooner), then plays on."""

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, seed: int) -> None:  # before every game
        self.calls = 0

    def act(self, observation: object, action_mask: np.ndarray) -> int:
        self.calls += 1
        if self.calls == 3:
            end = time.monotonic() + 3.0
            while time.monotonic() < end:
                try:
                    while time.monotonic() < end:
                        pass
                except BaseException:  # swallowing the time limit's interruption is the point of this agent
                    pass
        return int(np.flatnonzero(action_mask)[0])
