"""The collector's worker processes (:mod:`.collector`): the process itself (:func:`worker`,
its games a :class:`~training.sb3.selfplay.GameBatch` or a
:class:`~training.sb3.compiled_batch.CompiledGameBatch`), where an environment lives, and
shutting the workers down. This module imports neither torch nor Stable-Baselines3, so the
workers start light."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .compiled_batch import make_game_batch
from .selfplay import TIMERS

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


# ---------------------------------------------------------------------- worker process
def worker(remote: Any, parent_remote: Any, kwargs: dict[str, Any], obs_buffer: Any, mask_buffer: Any,
           start: int, stop: int) -> None:
    """A collector worker: the games ``start..stop-1`` of the collector in one
    :class:`~training.sb3.selfplay.GameBatch` (or its compiled twin: ``kwargs["backend"]``,
    :func:`~training.sb3.compiled_batch.make_game_batch`), their observations and masks
    written into the shared buffers. Commands come as ``(name, data)``; every answer is
    ``(ok, value)``, an error being sent back (not raised here) so that the collector can
    raise it with its message."""
    parent_remote.close()
    batch: Any = None
    try:
        n = stop - start
        size, actions = kwargs.pop("size"), kwargs.pop("num_actions")
        obs = np.frombuffer(obs_buffer, dtype=np.float32).reshape(-1, size)[start:stop]
        masks = np.frombuffer(mask_buffer, dtype=np.bool_).reshape(-1, actions)[start:stop]
        try:
            batch = make_game_batch(n, obs=obs, masks=masks, **kwargs)
            remote.send((True, None))
        except Exception as exc:  # sent back to the collector, which raises it
            _send_error(remote, exc)
            return
        while True:
            try:
                cmd, data = remote.recv()
            except EOFError:
                break
            if cmd == "close":
                remote.send((True, None))
                break
            try:
                if cmd in ("step", "step_part"):  # only the games that ended carry infos across
                    if cmd == "step":
                        rewards, dones, infos, reset_infos = batch.step(data)
                    else:
                        lo, hi, part_actions = data
                        rewards, dones, infos, reset_infos = batch.step(part_actions, lo, hi)
                    ended = [i for i, done in enumerate(dones) if done]
                    answer: Any = (rewards, ended, [infos[i] for i in ended], [reset_infos[i] for i in ended])
                elif cmd == "reset":
                    seeds, options = data
                    answer = batch.reset(seeds, options)
                elif cmd == "call":
                    method, local, args, kw = data
                    answer = batch.call(method, local, args, kw)
                elif cmd == "get":
                    answer = batch.get(*data)
                elif cmd == "timers":
                    answer = dict(batch.timers)
                    if data:
                        batch.timers = dict.fromkeys(TIMERS, 0.0)
                else:
                    raise ValueError(f"unknown command {cmd!r}")
            except Exception as exc:  # sent back to the collector, which raises it
                _send_error(remote, exc)
                continue
            remote.send((True, answer))
    except KeyboardInterrupt:
        pass
    finally:
        remote.close()


def _send_error(remote: Any, exc: Exception) -> None:
    try:
        remote.send((False, exc))
    except Exception:  # an exception that does not pickle: its text then
        remote.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


__all__ = ["GONE", "by_worker", "shut_down", "worker"]
