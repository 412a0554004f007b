"""Two agents to copy, played by the package without being part of it.

Score them against the bundled bots::

    keltis evaluate py:examples/my_agent.py:first_legal heuristic --games 20
    keltis evaluate py:examples/my_agent.py:EpsilonFirst,epsilon=0.2 random --games 20
    keltis play --bots py:examples/my_agent.py:EpsilonFirst

Both see what the PettingZoo AEC environment shows their seat: ``observation``, the
float32 observation vector of ``env.observe(agent)["observation"]``, and ``action_mask``,
the int8 mask of the legal actions. Both return an action id. See docs/agents.md.
"""

from __future__ import annotations

import numpy as np


def first_legal(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """A plain callable agent: the legal action with the lowest id."""
    return int(np.flatnonzero(action_mask)[0])


class EpsilonFirst:
    """A class agent: the first legal action, or with probability ``epsilon`` a legal action
    drawn at random.

    Options come from the spec (``py:examples/my_agent.py:EpsilonFirst,epsilon=0.2``); the
    runner gives ``seed``. ``reset(seed)`` is called when the runner re-seeds its players
    (before every game of an evaluation), so each game is reproducible on its own.
    """

    def __init__(self, seed: int | None = None, epsilon: float = 0.1) -> None:
        if not 0 <= epsilon <= 1:
            raise ValueError(f"epsilon must be a probability in [0, 1], got {epsilon!r}")
        self.epsilon = epsilon
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = np.flatnonzero(action_mask)
        if self.rng.random() < self.epsilon:
            return int(self.rng.choice(legal))
        return int(legal[0])
