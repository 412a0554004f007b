"""What the two multi-process vectorised environments (:mod:`.collector`, :mod:`.vec`) share
about their worker processes: where an environment lives, and shutting the workers down."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterable, Sequence
from typing import Any

#: what a pipe to a worker that is gone already raises (Ctrl-C reaches the whole process group)
GONE = (EOFError, BrokenPipeError, ConnectionResetError, OSError)


def by_worker(indices: Iterable[int], where: Sequence[tuple[int, int]]) -> dict[int, list[int]]:
    """``{worker: [local index, ...]}`` for the environments ``indices``, ``where[i]`` being
    environment ``i``'s (worker, local index)."""
    out: dict[int, list[int]] = {}
    for i in indices:
        k, j = where[i]
        out.setdefault(k, []).append(j)
    return out


def shut_down(remotes: Sequence[Any], processes: Sequence[Any], owed: Sequence[int] = ()) -> None:
    """Read the answers every worker still owes (``owed[k]`` from worker ``k``; none where
    ``owed`` is shorter), ask each to close, wait for it (terminating one that does not end
    within 10 s) and close the pipes. A worker that is gone already, or whose pipe holds
    something else than answers (an interrupt cut a message), is skipped and terminated."""
    alive = [True] * len(remotes)
    for k, remote in enumerate(remotes):
        try:
            for _ in range(owed[k] if k < len(owed) else 0):
                if not remote.poll(10):  # a worker owes at most one step of its games
                    raise TimeoutError
                remote.recv()
            remote.send(("close", None))
        except (*GONE, TimeoutError, pickle.UnpicklingError):
            alive[k] = False
    for k, remote in enumerate(remotes):
        if alive[k]:
            with contextlib.suppress(*GONE, pickle.UnpicklingError):
                if remote.poll(10):
                    remote.recv()
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()
            process.join(timeout=5)
    for remote in remotes:
        remote.close()


__all__ = ["GONE", "by_worker", "shut_down"]
