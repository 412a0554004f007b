"""The training loop's bookkeeping, as one Stable-Baselines3 callback.

At every step it counts finished games (win share, length, truncation, by opponent); at
the end of every rollout it logs them, updates the opponent pool's weights, and, when
due, takes a snapshot of the learner, evaluates it, and saves a resumable checkpoint.

The callback drives a run through the small interface :class:`RunHooks` (which
:class:`training.sb3.trainer.Trainer` provides), so this module does not import the trainer.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Protocol

from stable_baselines3.common.callbacks import BaseCallback

from .config import TrainConfig
from .pool import PoolManager, group


class RunHooks(Protocol):
    """What the callback needs from a run."""

    config: TrainConfig
    state: dict[str, Any]
    progress: bool
    pool: PoolManager
    clock: LearningClock

    def out_of_time(self) -> bool: ...

    def take_snapshot(self) -> None: ...

    def evaluate_now(self) -> dict[str, Any]: ...

    def save_checkpoint(self) -> None: ...

    def log_games(self, steps: int, n: int, win: float, turns: float, trunc: float, fps: float) -> None: ...


class SelfPlayCallback(BaseCallback):
    def __init__(self, trainer: RunHooks) -> None:
        super().__init__(verbose=0)
        self.trainer = trainer
        self._games: list[tuple[float, int, bool, list[str | None]]] = []
        self._bar: Any = None
        self._postfix: dict[str, str] = {}

    # ------------------------------------------------------------------ SB3 hooks
    def _on_training_start(self) -> None:
        t = self.trainer
        t.clock.start()
        if t.progress:
            from tqdm import tqdm

            self._bar = tqdm(
                total=t.config.total_timesteps,
                initial=self.model.num_timesteps,
                desc=t.config.name,
                unit="step",
                unit_scale=True,
                dynamic_ncols=True,
                smoothing=0.05,
            )

    def _on_step(self) -> bool:
        dones = self.locals["dones"]
        if dones.any():
            infos = self.locals["infos"]
            for i in dones.nonzero()[0]:
                info = infos[i]
                if "win" in info:
                    self._games.append((info["win"], info["turns"], info["end"] == "truncated", info["opponents"]))
                    self.trainer.pool.record(info["opponents"], info["win"])
        if self._bar is not None:
            self._bar.update(self.training_env.num_envs)
        return not self.trainer.out_of_time()

    def _on_rollout_start(self) -> None:
        import torch

        torch.set_num_threads(1)  # one observation batch per step: threads would only wait

    def _on_rollout_end(self) -> None:
        import torch

        torch.set_num_threads(self.trainer.config.torch_threads)  # the update; the workers are idle
        t = self.trainer
        steps = self.model.num_timesteps
        self._log_games(steps)
        t.pool.push_weights(self.training_env)
        with t.clock.paused():  # snapshots, evaluations and checkpoints are not learning time
            if t.pool.uses_snapshots and steps >= t.state["next_snapshot"]:
                t.take_snapshot()
                t.state["next_snapshot"] = next_multiple(steps, t.config.pool.snapshot_every)
            if t.config.eval.every and steps >= t.state["next_eval"]:
                self._evaluate(steps)
                t.state["next_eval"] = next_multiple(steps, t.config.eval.every)
            if steps >= t.state["next_checkpoint"]:
                t.state["next_checkpoint"] = next_multiple(steps, t.config.checkpoint_every)
                t.save_checkpoint()

    def _on_training_end(self) -> None:
        self.trainer.clock.stop()
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    # ------------------------------------------------------------------ helpers
    def _evaluate(self, steps: int) -> None:
        t = self.trainer
        results = t.evaluate_now()
        for opponent, r in results.items():
            self.logger.record(f"eval/win_rate_{_tag(opponent)}", r.win_rate)
            self.logger.record(f"eval/win_rate_low_{_tag(opponent)}", r.win_rate_ci[0])
            self.logger.record(f"eval/mean_turns_{_tag(opponent)}", r.mean_turns)
            self.logger.record(f"eval/truncation_rate_{_tag(opponent)}", r.truncation_rate)
            self._postfix[f"vs {opponent}"] = f"{r.win_rate:.0%}"
        self.logger.dump(steps)
        self._show()

    def _log_games(self, steps: int) -> None:
        games, self._games = self._games, []
        t = self.trainer
        fps = t.clock.rate(steps - t.clock.start_steps)
        self.logger.record("time/learning_fps", fps)
        self._postfix["fps"] = f"{fps:,.0f}"
        if games:
            n = len(games)
            win = sum(g[0] for g in games) / n
            turns = sum(g[1] for g in games) / n
            trunc = sum(g[2] for g in games) / n
            self.logger.record("games/win_rate", win)
            self.logger.record("games/mean_turns", turns)
            self.logger.record("games/truncation_rate", trunc)
            self.logger.record("games/count", n)
            by_opponent: dict[str, list[float]] = defaultdict(list)
            for g in games:
                for name in set(g[3]):
                    if name is not None:
                        by_opponent[group(name)].append(g[0])
            for name, wins in by_opponent.items():
                self.logger.record(f"games/win_rate_vs_{_tag(name)}", sum(wins) / len(wins))
            t.log_games(steps, n, win, turns, trunc, fps)
            self._postfix["turns"] = f"{turns:.0f}"
            self._postfix["trunc"] = f"{trunc:.0%}"
            self._postfix["train win"] = f"{win:.0%}"
        for name, weight in t.pool.weights().items():
            self.logger.record(f"pool/weight_{_tag(name)}", weight)
        self.logger.dump(steps)
        self._show()

    def _show(self) -> None:
        if self._bar is not None:
            self._bar.set_postfix(self._postfix, refresh=False)


class LearningClock:
    """Wall time spent learning (collecting and updating), excluding paused sections."""

    def __init__(self, elapsed: float = 0.0, start_steps: int = 0) -> None:
        self.elapsed = elapsed  # from earlier sessions of a resumed run
        self.start_steps = start_steps
        self._since: float | None = None
        self._session = 0.0

    def start(self) -> None:
        self._since = time.perf_counter()

    def stop(self) -> None:
        if self._since is not None:
            self._session += time.perf_counter() - self._since
            self._since = None

    def session_seconds(self) -> float:
        running = time.perf_counter() - self._since if self._since is not None else 0.0
        return self._session + running

    def total_seconds(self) -> float:
        return self.elapsed + self.session_seconds()

    def rate(self, steps: int) -> float:
        s = self.session_seconds()
        return steps / s if s > 0 else 0.0

    def paused(self) -> Any:
        clock = self

        class _Pause:
            def __enter__(self) -> None:
                clock.stop()

            def __exit__(self, *exc: Any) -> None:
                clock.start()

        return _Pause()


def next_multiple(steps: int, every: int) -> int:
    """The first multiple of ``every`` after ``steps``."""
    return (steps // every + 1) * every


def _tag(name: str) -> str:
    """A TensorBoard-friendly tag for an agent spec."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


__all__ = ["LearningClock", "RunHooks", "SelfPlayCallback"]
