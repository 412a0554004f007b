"""Agents outside the package for tests/test_external_agents.py, loaded through ``py:``
specs (by this file's path, or as the module ``external_agents``), and the mistakes whose
errors those tests check."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

#: every (observation, action_mask) that ``recorder`` was given in this process
SEEN: list[tuple[np.ndarray, np.ndarray]] = []


def recorder(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """Keeps what it sees; plays a legal action that varies with the decision."""
    SEEN.append((observation, action_mask))
    legal = np.flatnonzero(action_mask)
    return int(legal[(7 * len(SEEN)) % len(legal)])


def numpy_answer(observation: np.ndarray, action_mask: np.ndarray) -> np.int64:
    """Answers with a numpy integer, as ``np.argmax`` gives."""
    return np.argmax(action_mask)


class Seeded:
    """A random legal action from its own generator, reseeded by ``reset(seed)``; writes the
    id of its process to ``log`` when made (to see which processes ran it)."""

    def __init__(self, seed: int | None = None, log: str = "", num_players: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.num_players = num_players
        if log:
            with Path(log).open("a") as f:
                f.write(f"{os.getpid()}\n")

    def reset(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(self.rng.choice(np.flatnonzero(action_mask)))


def _blas_threads() -> list[int]:
    """The thread count of each BLAS library loaded in this process."""
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


class BlasThreads:
    """Plays the first legal action; at its first decision writes the thread count of each
    BLAS library loaded in its process (its id first) to ``log``."""

    def __init__(self, log: str) -> None:
        self.log = log
        self.written = False

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        if not self.written:
            threads = _blas_threads()
            with Path(self.log).open("a") as f:
                f.write(f"{os.getpid()} {' '.join(map(str, threads))}\n")
            self.written = True
        return int(np.flatnonzero(action_mask)[0])


class Forgetful:
    """Counts its decisions; ``reset()`` (without a seed) forgets them."""

    def __init__(self) -> None:
        self.decisions = 0
        self.resets = 0

    def reset(self) -> None:
        self.decisions = 0
        self.resets += 1

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.decisions += 1
        return int(np.flatnonzero(action_mask)[0])


# ---------------------------------------------------------------------- mistakes
def one_argument(observation: np.ndarray) -> int:
    return 0


class NoAct:
    def choose(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return 0


class ActTakesOne:
    def act(self, observation: np.ndarray) -> int:
        return 0


class Strict:
    """Takes one option, ``depth``, a positive integer."""

    def __init__(self, depth: int = 1) -> None:
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
        self.depth = depth

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])


NOT_AN_AGENT = 3
AN_INSTANCE = Strict()


def illegal(observation: np.ndarray, action_mask: np.ndarray) -> int:
    """The lowest action id that is not legal."""
    return int(np.flatnonzero(action_mask == 0)[0])


def out_of_range(observation: np.ndarray, action_mask: np.ndarray) -> int:
    return len(action_mask) + 5


def a_float(observation: np.ndarray, action_mask: np.ndarray) -> float:
    return float(np.flatnonzero(action_mask)[0])


def a_bool(observation: np.ndarray, action_mask: np.ndarray) -> bool:
    return True


def text(observation: np.ndarray, action_mask: np.ndarray) -> str:
    return "draw deck"
