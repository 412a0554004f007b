"""A vectorised environment with several environments per worker process.

Stable-Baselines3's ``SubprocVecEnv`` runs one environment per process. On a machine with
few cores the learner wants many environments per step (the policy's forward pass costs
about the same for 2 observations as for 16), but not many processes: here ``workers``
processes each step a contiguous group of the environments in turn, and one message per
worker and step crosses the process boundary.

Semantics are those of ``SubprocVecEnv``: automatic reset at the end of an episode with
``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]``, the reset's info in
``reset_infos``, ``env_method`` / ``get_attr`` / ``set_attr`` by global index.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper, VecEnv

from .workers import by_worker, shut_down


def _worker(remote: Any, parent_remote: Any, fns: CloudpickleWrapper) -> None:
    from stable_baselines3.common.env_util import is_wrapped

    parent_remote.close()
    envs = [fn() for fn in fns.var]
    try:
        while True:
            try:
                cmd, data = remote.recv()
            except EOFError:
                break
            if cmd == "step":
                out = []
                for env, action in zip(envs, data, strict=True):
                    obs, reward, terminated, truncated, info = env.step(action)
                    done = terminated or truncated
                    info["TimeLimit.truncated"] = truncated and not terminated
                    reset_info: dict[str, Any] = {}
                    if done:
                        info["terminal_observation"] = obs
                        obs, reset_info = env.reset()
                    out.append((obs, reward, done, info, reset_info))
                obs_, rewards, dones, infos, reset_infos = zip(*out, strict=True)
                remote.send((np.stack(obs_), rewards, dones, infos, reset_infos))
            elif cmd == "reset":
                out = []
                for env, (seed, options) in zip(envs, data, strict=True):
                    out.append(env.reset(seed=seed, **({"options": options} if options else {})))
                obs_, reset_infos = zip(*out, strict=True)
                remote.send((np.stack(obs_), reset_infos))
            elif cmd == "env_method":
                name, args, kwargs, local = data
                remote.send([envs[i].get_wrapper_attr(name)(*args, **kwargs) for i in local])
            elif cmd == "get_attr":
                name, local = data
                remote.send([envs[i].get_wrapper_attr(name) for i in local])
            elif cmd == "has_attr":
                found = True
                for env in envs:
                    try:
                        env.get_wrapper_attr(data)
                    except AttributeError:
                        found = False
                remote.send(found)
            elif cmd == "set_attr":
                name, value, local = data
                for i in local:
                    setattr(envs[i], name, value)
                remote.send(None)
            elif cmd == "is_wrapped":
                cls, local = data
                remote.send([is_wrapped(envs[i], cls) for i in local])
            elif cmd == "render":
                remote.send([env.render() for env in envs])
            elif cmd == "close":
                remote.send(None)
                break
            else:
                raise NotImplementedError(f"unknown command {cmd!r}")
    except KeyboardInterrupt:
        pass
    finally:
        for env in envs:
            env.close()
        remote.close()


class GroupedSubprocVecEnv(VecEnv):
    """``len(env_fns)`` environments in ``workers`` processes (see the module doc)."""

    def __init__(self, env_fns: list[Callable[[], Any]], workers: int, start_method: str = "forkserver") -> None:
        n = len(env_fns)
        workers = max(1, min(workers, n))
        ctx = mp.get_context(start_method)
        # contiguous groups, as even as possible: env i lives in worker _where[i][0] at _where[i][1]
        bounds = [round(k * n / workers) for k in range(workers + 1)]
        self._groups = [list(range(bounds[k], bounds[k + 1])) for k in range(workers)]
        self._where = [(k, j) for k, group in enumerate(self._groups) for j in range(len(group))]
        self.remotes, self.processes = [], []
        for group in self._groups:
            remote, work_remote = ctx.Pipe()
            fns = CloudpickleWrapper([env_fns[i] for i in group])
            process = ctx.Process(target=_worker, args=(work_remote, remote, fns), daemon=True)
            process.start()
            work_remote.close()
            self.remotes.append(remote)
            self.processes.append(process)
        self.waiting = False
        self.closed = False
        self.remotes[0].send(("get_attr", ("observation_space", [0])))
        observation_space = self.remotes[0].recv()[0]
        self.remotes[0].send(("get_attr", ("action_space", [0])))
        action_space = self.remotes[0].recv()[0]
        super().__init__(n, observation_space, action_space)

    # ------------------------------------------------------------------ stepping
    def step_async(self, actions: np.ndarray) -> None:
        for remote, group in zip(self.remotes, self._groups, strict=True):
            remote.send(("step", [actions[i] for i in group]))
        self.waiting = True

    def step_wait(self) -> Any:
        results = [remote.recv() for remote in self.remotes]
        self.waiting = False
        obs = np.concatenate([r[0] for r in results])
        rewards = np.array([x for r in results for x in r[1]], dtype=np.float32)
        dones = np.array([x for r in results for x in r[2]], dtype=bool)
        infos = [x for r in results for x in r[3]]
        self.reset_infos = [x for r in results for x in r[4]]
        return obs, rewards, dones, infos

    def reset(self) -> np.ndarray:
        for remote, group in zip(self.remotes, self._groups, strict=True):
            remote.send(("reset", [(self._seeds[i], self._options[i]) for i in group]))
        results = [remote.recv() for remote in self.remotes]
        self.reset_infos = [x for r in results for x in r[1]]
        self._reset_seeds()
        self._reset_options()
        return np.concatenate([r[0] for r in results])

    def close(self) -> None:
        if self.closed:
            return
        shut_down(self.remotes, self.processes, int(self.waiting))
        self.closed = True

    # ------------------------------------------------------------------ per-environment calls
    def _by_worker(self, indices: Any) -> dict[int, list[int]]:
        return by_worker(self._get_indices(indices), self._where)

    def _call(self, cmd: str, make_data: Callable[[list[int]], Any], indices: Any) -> list[Any]:
        """Send ``cmd`` to the workers of ``indices``; the answers in the order of ``indices``."""
        order = list(self._get_indices(indices))
        targets = self._by_worker(order)
        for k, local in targets.items():
            self.remotes[k].send((cmd, make_data(local)))
        answers = {k: iter(self.remotes[k].recv()) for k in targets}
        return [next(answers[self._where[i][0]]) for i in order]

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        return self._call("env_method", lambda local: (method_name, method_args, method_kwargs, local), indices)

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return self._call("get_attr", lambda local: (attr_name, local), indices)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        targets = self._by_worker(indices)
        for k, local in targets.items():
            self.remotes[k].send(("set_attr", (attr_name, value, local)))
        for k in targets:
            self.remotes[k].recv()

    def has_attr(self, attr_name: str) -> bool:
        for remote in self.remotes:
            remote.send(("has_attr", attr_name))
        return all([remote.recv() for remote in self.remotes])

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return self._call("is_wrapped", lambda local: (wrapper_class, local), indices)

    def get_images(self) -> Sequence[np.ndarray | None]:
        for remote in self.remotes:
            remote.send(("render", None))
        return [x for remote in self.remotes for x in remote.recv()]


__all__ = ["GroupedSubprocVecEnv"]
