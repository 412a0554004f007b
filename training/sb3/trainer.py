"""An SB3 training run: the model and its environments, the opponent pool, periodic
evaluations, snapshots, checkpoints and the final report.

The run's files are :mod:`training.sb3.run_folder`'s, its checkpoints
:mod:`training.sb3.checkpoints`', its network :mod:`training.sb3.model`'s and its warm start
:mod:`training.sb3.warm_start`'s. Every policy file a run writes (snapshots, best, policy)
records its game and number of players (:func:`keltis_env.policy.write_policy_info`).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from ..common.config import ConfigError
from ..common.folders import check_resume_folder, folder_contents, run_kind
from ..imitate.network import export_policy
from .callbacks import LearningClock, SelfPlayCallback, next_multiple
from .checkpoints import (
    SLOW,
    WARM_START,
    WARM_START_NAME,
    load_checkpoint,
    read_checkpoint_state,
    restore_slow,
    save_checkpoint,
    save_slow,
)
from .config import TrainConfig
from .model import algorithm, apply_ppo_settings, new_model, set_first_layer
from .opponent_eval import OpponentResult, evaluate_policy
from .pool import PoolManager, snapshot_name
from .run_folder import (
    EVAL_FIELDS,
    GAME_FIELDS,
    append_csv,
    copy_file,
    drop_rows_after,
    finish_meta,
    holds_run_dir,
    make_run_dir,
    release_run_dir,
    resume_config,
    write_session,
)


def check_tensorboard() -> None:
    """A run logs to TensorBoard: :class:`ConfigError` naming the extra to install when
    tensorboard is missing, before a run folder is made or changed."""
    if importlib.util.find_spec("tensorboard") is None:
        raise ConfigError("training writes TensorBoard logs, which needs tensorboard: "
                          "pip install 'keltis-rl[train]' (or pip install tensorboard)")


class Trainer:
    """One run (new or resumed). ``Trainer.new(config)`` / ``Trainer.resume(run_dir)``,
    then :meth:`train` and :meth:`final_report`."""

    def __init__(self, config: TrainConfig, run_dir: Path, state: dict[str, Any], progress: bool = True) -> None:
        self.config = config
        self.run_dir = run_dir
        self.state = state
        self.progress = progress
        self.pool = PoolManager(config.pool, run_dir / "snapshots")
        self.clock = LearningClock(state.get("learning_s", 0.0), start_steps=state.get("timesteps", 0))
        self.model: Any = None
        self._played: Any = None  # with critic: full, the seat-view network policy files are written from
        self.venv: Any = None
        self.session_start = time.perf_counter()

    # ------------------------------------------------------------------ construction
    @classmethod
    def new(cls, config: TrainConfig, command: str, progress: bool = True) -> Trainer:
        check_tensorboard()
        run_dir = make_run_dir(config)  # claimed
        state = {"timesteps": 0, "next_snapshot": 0, "next_eval": config.eval.every,
                 "next_checkpoint": config.checkpoint_every, "best": None, "learning_s": 0.0}
        try:
            trainer = cls(config, run_dir, state, progress)
            write_session(run_dir, config, command, resumed=False)
        except BaseException:
            release_run_dir(run_dir)
            raise
        return trainer

    @classmethod
    def resume(cls, run_dir: str | Path, command: str, overrides: list[str] | tuple[str, ...] = (),
               progress: bool = True) -> Trainer:
        """Continue the run in ``run_dir`` from its last checkpoint; ``overrides`` may change
        keys such as ``total_timesteps`` (not the network). A folder of another command's run
        (expert iteration, a recipe, an evaluation...) is refused naming what it is and the
        command that resumes it (:func:`~training.common.folders.check_resume_folder`)."""
        check_tensorboard()
        run_dir = Path(run_dir)
        last = run_dir / "checkpoints" / "last.zip"
        kind = run_kind(run_dir) if run_dir.is_dir() else None
        if not run_dir.is_dir() or (kind is not None and kind.key != "sb3"):
            check_resume_folder(run_dir, "sb3")  # no folder, a file, another command's run: named, with its resume
        if not last.is_file():
            what = f", and it is no SB3 training run: {folder_contents(run_dir)}" if kind is None else ""
            raise ConfigError(f"cannot resume {str(run_dir)!r}: no checkpoints/last.zip there{what}")
        state = read_checkpoint_state(last)
        held = holds_run_dir(run_dir)
        try:
            config = resume_config(run_dir, overrides)  # claims the folder
            for name in ("eval.csv", "games.csv"):  # rows written after the checkpoint are played again
                drop_rows_after(run_dir / name, state["timesteps"])
            trainer = cls(config, run_dir, state, progress)
            trainer.pool.check_snapshots(state.get("pool", {}))
            write_session(run_dir, config, command, resumed=True)
        except BaseException:
            if not held:  # a refused resume leaves the folder free for this process's next try
                release_run_dir(run_dir)
            raise
        return trainer

    def _build(self) -> None:
        import torch
        from stable_baselines3.common.logger import configure

        from ..imitate.network import init_weights
        from . import warm_start
        from .envs import make_vec_env

        torch.set_num_threads(self.config.torch_threads)
        opponents, weights = self.pool.initial_opponents()
        self.venv = make_vec_env(self.config, opponents, weights)
        ckpt = self.run_dir / "checkpoints"
        last = ckpt / "last.zip"
        cfg = self.config.pretrain
        if last.is_file():
            self.model = load_checkpoint(algorithm(self.config), last, self.venv)
            set_first_layer(self.model, self.config)
            self.model.set_random_seed(self.config.seed + self.state["timesteps"])
            apply_ppo_settings(self.model, self.config.ppo)
            restore_slow(self.model, ckpt / SLOW)
            warm_start.restore_anchor(self.model, cfg, ckpt / "anchor.zip")
            self.pool.restore(self.venv, self.state.get("pool", {}))
        else:
            self.model = new_model(self.config, self.venv)
            init = self.config.init
            warm = bool(self.config.record.teacher or init)
            if init and self.config.critic == "full":  # the file's actor, and its critic reading the seat's part
                from ..common.critic import init_from
                from ..imitate.network import load_model

                try:
                    init_from(self.model, load_model(init))
                except ValueError as exc:
                    raise ConfigError(f"init: {init!r} has another network than this run's ({exc})") from None
            elif init:
                init_weights(self.model, init, self.config.network.net_arch)
            if init:
                self.state["init"] = str(init)
                print(f"init: weights of {init}", flush=True)
            if self.config.record.teacher:
                self.state["pretrain"] = warm_start.imitate_teacher(
                    self.model, self.config, self.export, ckpt, self.session_start, self.progress)
            if warm:
                self.export(ckpt / WARM_START)  # before sharpening: the warm start as it plays
                warm_start.sharpen_and_anchor(self.model, cfg, self.export, ckpt / "anchor.zip")
            if self.pool.uses_snapshots:  # the pool starts with the initial policy
                self.take_snapshot()
                self.state["next_snapshot"] = self.config.pool.snapshot_every
            self.model.set_slow(self.config.ppo.slow_kl, self.config.ppo.slow_tau)  # from the policy RL starts with
            if warm and self.config.eval.every:
                self.evaluate_now()  # where reinforcement learning starts (and "best" so far)
        self.model.set_logger(configure(str(self.run_dir / "logs"), ["tensorboard"]))
        if not last.is_file():
            self.save_checkpoint()  # resumable from here on (a warm start is not done twice)

    # ------------------------------------------------------------------ training
    def out_of_time(self) -> bool:
        limit = self.config.max_minutes
        if limit and time.perf_counter() - self.session_start > 60 * limit:
            self.state["stopped_by_time_limit"] = True
            return True
        return False

    def train(self) -> None:
        self.session_start = time.perf_counter()
        self.state["stopped_by_time_limit"] = False
        self._build()
        every, steps = self.config.eval.every, self.model.num_timesteps
        if every and steps >= self.state["next_eval"] and self.state.get("last_eval", -1) < steps:
            # an evaluation that a Ctrl-C stopped before the checkpoint it resumes from
            self.evaluate_now()
            self.state["next_eval"] = next_multiple(steps, every)
        total = self.config.total_timesteps
        remaining = total - self.model.num_timesteps
        callback = SelfPlayCallback(self)
        try:
            if remaining > 0:
                self.model.learn(remaining, callback=callback, reset_num_timesteps=False)
        except KeyboardInterrupt:
            print("\ninterrupted: saving a checkpoint to resume from", file=sys.stderr)
            self.clock.stop()
            self.save_checkpoint()
            raise
        self.clock.stop()
        steps = self.model.num_timesteps
        if self.config.eval.every and self.state.get("last_eval", -1) < steps:
            self.evaluate_now()  # the final policy competes for "best" too
        self.save_checkpoint()

    def take_snapshot(self) -> None:
        steps = self.model.num_timesteps
        name = snapshot_name(steps)
        self.export(self.pool.snapshot_path(name))
        self.pool.add_snapshot(self.venv, name)

    def evaluate_now(self) -> dict[str, OpponentResult]:
        """Evaluate the current policy against ``eval.opponents``; keep it if it is the best."""
        cfg = self.config.eval
        steps = self.model.num_timesteps
        current = self.run_dir / "checkpoints" / "current.zip"
        self.export(current)
        env = self.config.env
        results = {}
        for i, opponent in enumerate(cfg.opponents):
            results[opponent] = evaluate_policy(
                f"ppo:{current}", opponent, cfg.games_by.get(opponent, cfg.games), seed=self.config.seed * 1000 + i,
                num_players=env.num_players, workers=max(1, self.config.workers), max_turns=env.max_turns,
                game=env.game,
                options=env.options,
            )
        append_csv(self.run_dir / "eval.csv", EVAL_FIELDS, [
            {"timesteps": steps, "learning_s": round(self.clock.total_seconds(), 1), "opponent": o, "games": r.games,
             "win_rate": r.win_rate, "ci_low": r.win_rate_ci[0], "ci_high": r.win_rate_ci[1],
             "mean_score": r.mean_score, "opponent_mean_score": r.opponent_mean_score,
             "mean_turns": r.mean_turns, "truncation_rate": r.truncation_rate}
            for o, r in results.items()
        ])
        key = cfg.best_by or cfg.opponents[-1]
        value = results[key].win_rate
        best = self.state.get("best")
        # a resumed run may pick its best by another opponent (--set eval.best_by=...):
        # a win rate against the old one does not compare
        if best is None or best.get("opponent") != key or value >= best["win_rate"]:
            copy_file(current, self.run_dir / "checkpoints" / "best.zip")
            self.state["best"] = {"timesteps": steps, "opponent": key, "win_rate": value}
        self.state["last_eval"] = steps
        current.unlink()
        return results

    def log_games(self, steps: int, n: int, win: float, turns: float, trunc: float, fps: float) -> None:
        append_csv(self.run_dir / "games.csv", GAME_FIELDS, [
            {"timesteps": steps, "learning_s": round(self.clock.total_seconds(), 1), "games": n,
             "win_rate": round(win, 4), "mean_turns": round(turns, 2), "truncation_rate": round(trunc, 4),
             "fps": round(fps, 1)}
        ])

    def export(self, path: Path) -> None:
        """Save the current policy for playing, with its game and player count; a run from
        an ``init`` that plays averaged over relabellings plays so too (snapshots included)."""
        env = self.config.env
        if self.config.critic == "full":  # the actor alone, in a network for the seat's view; no value head
            from ..common.critic import copy_actor
            from ..imitate.network import policy_model

            if self._played is None:
                self._played = policy_model(env, self.config.network, self.config.seed)
            copy_actor(self.model, self._played)
            export_policy(self._played, path, env.game, env.num_players, env.features, symmetry=self.play_symmetry,
                          value_head=False)
            return
        export_policy(self.model, path, env.game, env.num_players, env.features, value_reward=env.reward,
                      symmetry=self.play_symmetry)

    @property
    def play_symmetry(self) -> str:
        """The relabellings the run's policies play averaged over ("" none): ``play_symmetry``,
        or when it is empty the ``init`` file's."""
        chosen = self.config.play_symmetry
        if chosen:
            return "" if chosen == "none" else chosen
        if not self.config.init:
            return ""
        from keltis_env.policy import read_policy_info

        return read_policy_info(self.config.init).symmetry

    def save_checkpoint(self) -> None:
        """``checkpoints/last.zip``: the model and the run's state in one file
        (:func:`training.sb3.checkpoints.save_checkpoint`)."""
        self.state["timesteps"] = self.model.num_timesteps
        self.state["learning_s"] = self.clock.total_seconds()
        self.state["pool"] = self.pool.state_dict()
        save_checkpoint(self.model, self.run_dir / "checkpoints", self.state, self.config.env)
        save_slow(self.model, self.run_dir / "checkpoints" / SLOW)

    def close(self) -> None:
        """Close the environments and give the run folder back (:func:`release_run_dir`), so
        that the same process, or another, may resume it; closing again does nothing."""
        try:
            if self.venv is not None:
                self.venv.close()
                self.venv = None
        finally:
            release_run_dir(self.run_dir)

    # ------------------------------------------------------------------ the end
    def final_report(self) -> dict[str, Any]:
        """Pick the policy (best checkpoint, else the last), evaluate it with
        ``eval.final_games`` per opponent, write the curve and the report; returns it."""
        from .report import plot_learning_curve, write_report

        policy = self.run_dir / "policy.zip"
        source = self.run_dir / "checkpoints" / "best.zip"
        if source.is_file():
            copy_file(source, policy)
        else:
            self.export(policy)
        cfg = self.config.eval
        env = self.config.env
        results: dict[str, OpponentResult] = {}
        eval_s = 0.0
        if cfg.final_games:
            start = time.perf_counter()
            for i, opponent in enumerate(cfg.opponents):
                results[opponent] = evaluate_policy(
                    f"ppo:{policy}", opponent, cfg.final_games, seed=10**6 + self.config.seed * 1000 + i,
                    num_players=env.num_players, workers=max(1, self.config.workers), max_turns=env.max_turns,
                    game=env.game, options=env.options,
                )
            warm = self.run_dir / "checkpoints" / WARM_START
            if cfg.warm_start and warm.is_file():
                results[WARM_START_NAME] = evaluate_policy(
                    f"ppo:{policy}", f"ppo:{warm}", cfg.final_games,
                    seed=10**6 + self.config.seed * 1000 + len(cfg.opponents), num_players=env.num_players,
                    workers=max(1, self.config.workers), max_turns=env.max_turns, game=env.game, options=env.options)
            elif cfg.warm_start:
                print(f"eval.warm_start: no {warm} (a run begun before it was kept); not played", flush=True)
            eval_s = time.perf_counter() - start
        plot_learning_curve(self.run_dir)
        learning_s = self.clock.total_seconds()
        steps = self.model.num_timesteps
        finish_meta(self.run_dir, finished=datetime.now().isoformat(timespec="seconds"), timesteps=steps,
                    learning_s=round(learning_s, 1), final_eval_s=round(eval_s, 1),
                    stopped_by_time_limit=bool(self.state.get("stopped_by_time_limit")))
        return write_report(self.run_dir, self.config, results, steps=steps, learning_s=learning_s,
                            best=self.state.get("best"), policy=policy, final_eval_s=eval_s,
                            pretrain=self.state.get("pretrain"), init=self.state.get("init"))


__all__ = ["Trainer"]
