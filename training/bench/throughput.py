"""Training throughput: learner steps per second end to end (collection and PPO updates),
measured by ``python -m training.bench`` (:mod:`training.bench`).

Trains the config's network with MaskablePPO for ``--seconds`` on two vectorised
environments in turn, from the same start, and reports both rates and their ratio:

* **collector**: :class:`training.sb3.collector.BatchedSelfPlayVecEnv` with the config's
  ``n_envs``, ``workers`` and ``collector_backend`` (what training runs on);
* **baseline**: Stable-Baselines3's stock ``SubprocVecEnv`` over the learner view
  (:class:`keltis_env.envs.learner.KeltisLearnerEnv`), one process per environment, the same
  ``n_envs`` (``--baseline-envs`` to change it), masks fetched by MaskablePPO's own
  ``env_method("action_masks")``.

Both play the config's opponents (``pool.weights``; ``self`` is a frozen snapshot of the
initial policy, a neural opponent) with the config's PPO settings, torch threads and
rewards. The first rollout and update are warm-up and not counted; the rate is learner
decisions over the wall time of whole rollouts and updates after it.

The time split of each run (shares of its wall time): ``update`` (PPO epochs),
``learner_inference`` (the policy's forward passes and everything else in this process
while collecting), ``environments`` (waiting for the workers to step); for the collector
the workers' own split too (``engine``, ``encoding``, ``opponent_bots``,
``opponent_networks`` as shares of a worker's wall time, plus ``idle``: waiting for
this process or for the CPU). The load average (``os.getloadavg``) before and after each
run is reported with it: on a shared machine, compare ratios measured in the same run.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..sb3.config import TrainConfig
from ..sb3.pool import SELF, initial_opponents


def _make_venv(config: TrainConfig, kind: str, specs: list[str], weights: list[float], baseline_envs: int) -> Any:
    env = config.env
    if kind == "collector":
        from ..sb3.collector import BatchedSelfPlayVecEnv

        return BatchedSelfPlayVecEnv(config.n_envs, specs, weights, game=env.game, num_players=env.num_players,
                                     reward=env.reward, workers=config.workers, game_options=env.game_options(),
                                     features=env.features, pipeline=config.pipeline,
                                     backend=config.collector_backend)
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import SubprocVecEnv

    def make() -> Any:
        from keltis_env.envs.learner import KeltisLearnerEnv

        return Monitor(KeltisLearnerEnv(num_players=env.num_players, opponents=specs, opponent_weights=weights,
                                        reward=env.reward, game=env.game, features=env.features,
                                        **env.game_options()))

    return SubprocVecEnv([make for _ in range(baseline_envs)])


def measure(config: TrainConfig, kind: str, seconds: float, baseline_envs: int | None = None) -> dict[str, Any]:
    """Train for about ``seconds`` after a warm-up rollout on the ``kind`` of environment
    (``collector`` or ``baseline``); returns the rate and the time split."""
    import torch

    torch.set_num_threads(config.torch_threads)
    fixed, weights = _fixed_opponents(config)
    n = config.n_envs if kind == "collector" else baseline_envs or config.n_envs
    load_before = os.getloadavg()
    venv = _make_venv(config, kind, fixed, weights, n)
    # unwrapped, the collector's rollouts are pipelined (training.sb3.pipeline), as in training
    timed = None if kind == "collector" else _timed(venv)
    marks = _train(config, venv, timed, seconds)
    load_after = os.getloadavg()
    result = _result(config, kind, n, marks, load_before, load_after)
    if kind == "collector":
        result["backend"] = venv.backend  # the engine its games ran on (collector_backend resolved)
    return result


def _fixed_opponents(config: TrainConfig) -> tuple[list[str], list[float]]:
    """The pool's fixed opponents (:func:`training.sb3.pool.initial_opponents`), each at
    weight 1 where all their weights are 0; ``self`` is added as a snapshot (:func:`_train`)."""
    fixed, weights = initial_opponents(config.pool)
    if sum(weights) <= 0:
        weights = [1.0] * len(fixed)
    return fixed, weights


def _train(config: TrainConfig, venv: Any, timed: Any, seconds: float) -> list[dict[str, Any]]:
    """Train a new model on ``venv`` (through ``timed`` where it is not ``None``) until
    ``seconds`` have passed after the warm-up; returns the marks of :func:`_clock`."""
    from ..imitate.network import export_policy
    from ..sb3.model import new_model

    target = venv if timed is None else timed
    try:
        with tempfile.TemporaryDirectory() as tmp:
            model = new_model(config, target)
            self_weight = config.pool.weights.get(SELF, 0.0)
            if self_weight > 0:  # a frozen snapshot of the learner: a neural opponent
                snapshot = Path(tmp) / "self.zip"
                export_policy(model, snapshot, config.env.game, config.env.num_players, config.env.features,
                              value_reward=config.env.reward)
                target.env_method("add_opponent", f"ppo:{snapshot}", self_weight, SELF)
            clock = _clock(config, venv, timed, seconds)
            model.learn(10**12, callback=clock)
    finally:
        target.close()
    marks: list[dict[str, Any]] = clock.marks
    return marks


def _timed(venv: Any) -> Any:
    """``venv`` wrapped to count the wall time spent in the environments' calls."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class Timed(VecEnvWrapper):
        """Wall time spent in the environments' calls (steps, masks)."""

        def __init__(self, venv: Any) -> None:
            super().__init__(venv)
            self.seconds = 0.0

        def reset(self) -> Any:
            return self.venv.reset()

        def step_async(self, actions: Any) -> None:
            self._t = time.perf_counter()
            self.venv.step_async(actions)

        def step_wait(self) -> Any:
            out = self.venv.step_wait()
            self.seconds += time.perf_counter() - self._t
            return out

        def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list[Any]:
            t = time.perf_counter()
            out = self.venv.env_method(method_name, *args, indices=indices, **kwargs)
            self.seconds += time.perf_counter() - t
            return out

    return Timed(venv)


def _clock(config: TrainConfig, venv: Any, timed: Any, seconds: float) -> Any:
    """The callback that marks rollouts and updates (``marks``: at every rollout start, after
    the previous update) and stops the first rollout after ``seconds``."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    class Clock(BaseCallback):
        """Marks rollouts and updates; stops the first rollout after ``seconds``."""

        def __init__(self) -> None:
            super().__init__(verbose=0)
            self.marks: list[dict[str, Any]] = []  # at every rollout start (after the previous update)
            self.collect = 0.0
            self.update = 0.0
            self._rollout_start = 0.0
            self._rollout_end: float | None = None
            self.stop = False

        def _snapshot(self, now: float) -> dict[str, Any]:
            mark = {"t": now, "steps": self.model.num_timesteps, "collect": self.collect, "update": self.update,
                    "cpu": cpu_seconds([p.pid for p in getattr(venv, "processes", [])])}
            if timed is None:  # the collector times its own waits (its parts are waited for one by one)
                mark["workers"] = venv.timers()
                mark["env"] = mark["workers"]["waited"]
            else:
                mark["env"] = timed.seconds
            return mark

        def _on_rollout_start(self) -> None:
            now = time.perf_counter()
            if self._rollout_end is not None:
                self.update += now - self._rollout_end
            self.marks.append(self._snapshot(now))
            if len(self.marks) >= 3 and now - self.marks[1]["t"] >= seconds:
                self.stop = True
            torch.set_num_threads(1)
            self._rollout_start = time.perf_counter()

        def _on_rollout_end(self) -> None:
            now = time.perf_counter()
            self.collect += now - self._rollout_start
            self._rollout_end = now
            torch.set_num_threads(config.torch_threads)

        def _on_step(self) -> bool:
            return not self.stop

    return Clock()


def _result(config: TrainConfig, kind: str, n: int, marks: list[dict[str, Any]], load_before: tuple[float, ...],
            load_after: tuple[float, ...]) -> dict[str, Any]:
    """The rate and the time split between the second mark (after the warm-up) and the last."""
    first, last = marks[1], marks[-1]
    wall = last["t"] - first["t"]
    steps = last["steps"] - first["steps"]
    collect = last["collect"] - first["collect"]
    update = last["update"] - first["update"]
    env_s = last["env"] - first["env"]
    cpu = last["cpu"] - first["cpu"]
    split = {"update": update / wall, "learner_inference": (collect - env_s) / wall, "environments": env_s / wall}
    out: dict[str, Any] = {
        "kind": kind, "n_envs": n, "workers": config.workers if kind == "collector" else n,
        "steps": steps, "seconds": round(wall, 2), "steps_per_s": steps / wall,
        "cpu_seconds": round(cpu, 2), "steps_per_cpu_s": steps / cpu if cpu > 0 else None,
        "split": {k: round(v, 4) for k, v in split.items()},
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
    }
    if kind == "collector":
        w_first, w_last = first["workers"], last["workers"]
        per_worker = {k: (w_last[k] - w_first[k]) / w_last["workers"] / wall
                      for k in ("engine", "encoding", "opponent_bots", "opponent_networks")}
        per_worker["idle"] = max(0.0, 1.0 - sum(per_worker.values()))
        out["worker_split"] = {k: round(v, 4) for k, v in per_worker.items()}
    return out


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system) of this process and of the processes ``pids`` so far (Linux's
    ``/proc``; elsewhere this process's only)."""
    total = sum(os.times()[:2])
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def summary_line(result: dict[str, Any]) -> str:
    split = ", ".join(f"{k.replace('_', ' ')} {v:.0%}" for k, v in result["split"].items())
    text = (f"{result['steps_per_s']:,.0f} learner steps/s ({result['steps']:,} steps in {result['seconds']:.0f} s; "
            f"n_envs {result['n_envs']}, {result['workers']} processes"
            f"{', ' + result['backend'] + ' engine' if 'backend' in result else ''}); time: {split}")
    if "worker_split" in result:
        parts = result["worker_split"].items()
        text += "; per worker: " + ", ".join(f"{k.replace('_', ' ')} {v:.0%}" for k, v in parts)
    if result["steps_per_cpu_s"]:
        text += f"; {result['steps_per_cpu_s']:,.0f} steps per CPU second"
    loads = f"load average {result['load_before'][0]:.1f} before, {result['load_after'][0]:.1f} after"
    return f"{text}; {loads}"


__all__ = ["cpu_seconds", "measure", "summary_line"]
