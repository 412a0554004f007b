"""What the two multi-process vectorised environments (:mod:`.collector`, :mod:`.vec`) share
about their worker processes: where an environment lives, and shutting the workers down."""

from __future__ import annotations

import contextlib
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


def shut_down(remotes: Sequence[Any], processes: Sequence[Any], in_flight: int = 0) -> None:
    """Read the ``in_flight`` answers every worker still owes, ask each to close, wait for
    it (terminating one that does not end within 10 s) and close the pipes; a worker that
    is gone already is skipped."""
    for _ in range(in_flight):
        for remote in remotes:
            with contextlib.suppress(*GONE):
                remote.recv()
    for remote in remotes:
        with contextlib.suppress(*GONE):
            remote.send(("close", None))
    for remote in remotes:
        with contextlib.suppress(*GONE):
            remote.recv()
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()
    for remote in remotes:
        remote.close()


__all__ = ["GONE", "by_worker", "shut_down"]
