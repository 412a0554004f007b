"""Agents that misbehave, for tests/test_agent_failures.py (loaded through ``py:`` specs by
this file's path): they exit, raise what the caller cannot unpickle, kill their process,
hang, ignore the interruption of a move that runs over, or answer with hostile objects."""

from __future__ import annotations

import os
import sys
import time

import numpy as np


def _first(observation: np.ndarray, action_mask: np.ndarray) -> int:
    return int(np.flatnonzero(action_mask)[0])


class Exits:
    def act(self, observation, action_mask):
        sys.exit(0)


class Interrupts:
    def act(self, observation, action_mask):
        raise KeyboardInterrupt


class Dies:
    def act(self, observation, action_mask):
        os._exit(7)


class TwoArgumentError(Exception):
    """An exception whose ``__init__`` takes two arguments: pickle cannot rebuild it."""

    def __init__(self, first: int, second: int) -> None:
        super().__init__(f"{first}/{second}")


class RaisesUnpicklable:
    def act(self, observation, action_mask):
        raise TwoArgumentError(1, 2)


class RaisesHuge:
    def act(self, observation, action_mask):
        raise ValueError("boom " * 200_000)


class Sleeps:
    """Never answers (until long after any limit)."""

    def act(self, observation, action_mask):
        time.sleep(600)
        return _first(observation, action_mask)


class IgnoresTheLimit:
    """Spins and swallows every interruption: only stopping its process ends the move."""

    def act(self, observation, action_mask):
        while True:
            try:
                while True:
                    pass
            except BaseException:  # swallowing every interruption is the point of this agent
                pass


class SlowOnce:
    """Takes a while on its third decision, then plays on."""

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, seed) -> None:  # before every game
        self.calls = 0

    def act(self, observation, action_mask):
        self.calls += 1
        if self.calls == 3:
            time.sleep(30)
        return _first(observation, action_mask)


class _HostileRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __index__(self) -> int:
        raise ValueError("no index")


class HostileAnswer:
    def act(self, observation, action_mask):
        return _HostileRepr()


class _HugeRepr:
    def __repr__(self) -> str:
        return "z" * 5_000_000


class HugeAnswer:
    def act(self, observation, action_mask):
        return _HugeRepr()


class Fine:
    def act(self, observation, action_mask):
        return _first(observation, action_mask)
