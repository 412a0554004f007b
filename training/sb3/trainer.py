"""A training run: its folder, the model, the opponent pool, checkpoints and the report.

Run folder ``RUNS_DIR/NAME-YYYYmmdd-HHMMSS/``::

    config.yaml           the resolved config (every key, defaults included)
    command.txt           the exact command of every session of the run (resumes append)
    run.json              seed, versions, git commit, timings
    checkpoints/last.zip  full model (optimizer included) and the run's state for --resume;
                          state.json is a readable copy of that state
    checkpoints/best.zip  the policy with the best periodic evaluation
    checkpoints/anchor.zip  the imitated policy that RL is anchored to (pretrain.anchor > 0)
    snapshots/            the learner's frozen snapshots in the opponent pool
    logs/                 TensorBoard events
    eval.csv, games.csv   periodic evaluations; training games per rollout
    learning_curve.png    win rates over training, game length and truncation rate
    report.md, report.json  final evaluation of policy.zip (= the best checkpoint)
    policy.zip            the policy to use: ``make_bot("ppo:RUN/policy.zip", game=..., num_players=...)``

Every policy file a run writes (snapshots, best, policy) records its game and number of
players (:func:`keltis_env.policy.write_policy_info`). Files are written atomically (a
temporary file, then ``os.replace``), so a run killed at any moment, SIGKILL included,
leaves its last checkpoint whole: ``--resume`` continues from it, losing at most the steps
since (one ``checkpoint_every`` interval). A checkpoint that is nevertheless truncated or
corrupt (a full disk, a copy cut short) is refused at resume with a message saying so.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import zipfile
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

from keltis_env.policy import is_whole_zip, write_policy_info

from .callbacks import LearningClock, SelfPlayCallback
from .config import ConfigError, TrainConfig, from_dict
from .evaluation import MatchResult, evaluate_policy
from .pool import OpponentPool

_EVAL_FIELDS = ["timesteps", "learning_s", "opponent", "games", "win_rate", "ci_low", "ci_high", "mean_score",
                "opponent_mean_score", "mean_turns", "truncation_rate"]
_GAME_FIELDS = ["timesteps", "learning_s", "games", "win_rate", "mean_turns", "truncation_rate", "fps"]


class Trainer:
    """One run (new or resumed). ``Trainer.new(config)`` / ``Trainer.resume(run_dir)``,
    then :meth:`train` and :meth:`final_report`."""

    def __init__(self, config: TrainConfig, run_dir: Path, state: dict[str, Any], progress: bool = True) -> None:
        self.config = config
        self.run_dir = run_dir
        self.state = state
        self.progress = progress
        self.pool = OpponentPool(config.pool, run_dir / "snapshots")
        self.clock = LearningClock(state.get("learning_s", 0.0), start_steps=state.get("timesteps", 0))
        self.model: Any = None
        self.venv: Any = None
        self._session_start = time.perf_counter()

    # ------------------------------------------------------------------ construction
    @classmethod
    def new(cls, config: TrainConfig, command: str, progress: bool = True) -> Trainer:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = Path(config.runs_dir) / f"{config.name}-{stamp}"
        suffix = 1
        while run_dir.exists():
            run_dir = Path(config.runs_dir) / f"{config.name}-{stamp}-{suffix}"
            suffix += 1
        for sub in ("checkpoints", "snapshots", "logs"):
            (run_dir / sub).mkdir(parents=True)
        _write_atomic(run_dir / "config.yaml", config.to_yaml())
        state = {"timesteps": 0, "next_snapshot": 0, "next_eval": config.eval.every,
                 "next_checkpoint": config.checkpoint_every, "best": None, "learning_s": 0.0}
        trainer = cls(config, run_dir, state, progress)
        trainer._write_meta(command, resumed=False)
        return trainer

    @classmethod
    def resume(cls, run_dir: str | Path, command: str, overrides: list[str] = (), progress: bool = True) -> Trainer:
        """Continue the run in ``run_dir`` from its last checkpoint; ``overrides`` may change
        keys such as ``total_timesteps`` (not the network)."""
        import yaml

        from .config import apply_override

        run_dir = Path(run_dir)
        last = run_dir / "checkpoints" / "last.zip"
        if not last.is_file():
            raise ConfigError(f"cannot resume {str(run_dir)!r}: no checkpoints/last.zip there")
        try:
            saved = yaml.safe_load((run_dir / "config.yaml").read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot resume {str(run_dir)!r}: its config.yaml is unreadable ({exc})") from None
        state = read_checkpoint_state(last)
        data = yaml.safe_load(yaml.safe_dump(saved))  # a copy to apply the overrides to
        for item in overrides:
            apply_override(data, item)
        config = from_dict(data)
        old = from_dict(saved)
        kept = ("net_arch", "activation", "n_steps", "gamma", "gae_lambda")
        if [getattr(config.ppo, k) for k in kept] != [getattr(old.ppo, k) for k in kept] or config.env != old.env \
                or config.n_envs != old.n_envs:
            raise ConfigError(
                "a resumed run keeps its network and rollouts (ppo.net_arch, activation, n_steps, gamma, gae_lambda), "
                "n_envs and env settings"
            )
        _write_atomic(run_dir / "config.yaml", config.to_yaml())
        for name in ("eval.csv", "games.csv"):  # rows written after the checkpoint are played again
            _drop_rows_after(run_dir / name, state["timesteps"])
        trainer = cls(config, run_dir, state, progress)
        trainer.pool.check_snapshots(state.get("pool", {}))
        trainer._write_meta(command, resumed=True)
        return trainer

    def _write_meta(self, command: str, resumed: bool) -> None:
        with open(self.run_dir / "command.txt", "a") as f:
            f.write(f"# {datetime.now().isoformat(timespec='seconds')}{' (resume)' if resumed else ''}\n{command}\n")
        meta_file = self.run_dir / "run.json"
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        if not resumed:
            import sb3_contrib
            import stable_baselines3
            import torch

            meta.update(
                seed=self.config.seed,
                started=datetime.now().isoformat(timespec="seconds"),
                python=platform.python_version(),
                torch=torch.__version__,
                stable_baselines3=stable_baselines3.__version__,
                sb3_contrib=sb3_contrib.__version__,
                git_commit=_git_commit(),
                host_cpus=os.cpu_count(),
            )
        meta.setdefault("sessions", []).append({"started": datetime.now().isoformat(timespec="seconds"),
                                                "resumed": resumed, "command": command})
        _write_atomic(meta_file, json.dumps(meta, indent=1))

    def _build(self) -> None:
        import torch
        from stable_baselines3.common.logger import configure

        from .envs import make_vec_env

        torch.set_num_threads(self.config.torch_threads)
        opponents, weights = self.pool.initial_opponents()
        self.venv = make_vec_env(self.config, opponents, weights)
        last = self.run_dir / "checkpoints" / "last.zip"
        if last.is_file():
            self.model = _load_checkpoint(_algorithm(self.config), last, self.venv)
            self.model.set_random_seed(self.config.seed + self.state["timesteps"])
            self._apply_ppo_settings()
            self._restore_anchor()
            self.pool.restore(self.venv, self.state.get("pool", {}))
        else:
            self.model = _new_model(self.config, self.venv)
            warm = bool(self.config.pretrain.teacher or self.config.pretrain.init)
            if self.config.pretrain.init:
                self._init_weights()
            if self.config.pretrain.teacher:
                self._pretrain()
            if warm:
                self._sharpen_and_anchor()
            if self.pool.uses_snapshots:  # the pool starts with the initial policy
                self.take_snapshot()
                self.state["next_snapshot"] = self.config.pool.snapshot_every
            if warm and self.config.eval.every:
                self.evaluate_now()  # where reinforcement learning starts (and "best" so far)
        self.model.set_logger(configure(str(self.run_dir / "logs"), ["tensorboard"]))
        if not last.is_file():
            self.save_checkpoint()  # resumable from here on (a warm start is not done twice)

    def _init_weights(self) -> None:
        """Start from the weights of the policy file ``pretrain.init`` (policy and value
        networks; the optimizer starts afresh)."""
        from sb3_contrib import MaskablePPO

        path = self.config.pretrain.init
        try:
            loaded = MaskablePPO.load(path, device="cpu", print_system_info=False)
        except Exception as exc:  # a file that passed the metadata checks but not SB3's loader
            raise ConfigError(f"pretrain.init: {path!r} cannot be loaded ({type(exc).__name__}: {exc})") from None
        try:
            self.model.policy.load_state_dict(loaded.policy.state_dict())
        except RuntimeError as exc:
            raise ConfigError(f"pretrain.init: {path!r} has another network than ppo.net_arch "
                              f"{self.config.ppo.net_arch} ({str(exc).splitlines()[0]})") from None
        self.state["init"] = str(path)
        print(f"init: weights of {path}", flush=True)

    def _pretrain(self) -> None:
        from .pretrain import pretrain, record_demonstrations

        cfg = self.config.pretrain
        start = time.perf_counter()
        log = lambda text: print(text, flush=True)  # noqa: E731
        log(f"pretrain: recording {cfg.games} games of {cfg.teacher!r}")
        data = record_demonstrations(self.config, progress=self.progress)
        log(f"pretrain: {len(data):,} decisions recorded ({time.perf_counter() - start:.0f} s)")
        stats = pretrain(self.model, data, self.config, log=log)
        rounds = 0
        limit = self.config.max_minutes
        for k in range(1, cfg.dagger_rounds + 1):
            if limit and time.perf_counter() - self._session_start > 60 * limit * DAGGER_SHARE:
                log(f"pretrain: DAgger rounds from {k} on skipped: past {DAGGER_SHARE:.0%} of max_minutes ({limit:g})")
                break
            actor = self.run_dir / "checkpoints" / f"pretrain_{k - 1}.zip"
            self.export(actor)
            log(f"pretrain: DAgger round {k}/{cfg.dagger_rounds}, recording {cfg.dagger_games} games "
                f"({time.perf_counter() - start:.0f} s)")
            data = data + record_demonstrations(self.config, actor=f"ppo:{actor}", round_=k, progress=self.progress)
            stats = pretrain(self.model, data, self.config, log=log)
            actor.unlink()
            rounds = k
        log(f"pretrain: done ({time.perf_counter() - start:.0f} s)")
        stats.update(teacher=cfg.teacher, games=cfg.games + rounds * cfg.dagger_games,
                     dagger_rounds=rounds, decisions_recorded=len(data),
                     soft_temperature=cfg.soft_temperature, anchor=cfg.anchor,
                     seconds=round(time.perf_counter() - start, 1))
        self.state["pretrain"] = stats

    def _sharpen_and_anchor(self) -> None:
        """Divide the warm-started policy's logits by ``pretrain.temperature``, then freeze it
        as the anchor of reinforcement learning (``checkpoints/anchor.zip``,
        :mod:`training.distill`)."""
        cfg = self.config.pretrain
        if cfg.temperature != 1.0:
            from .pretrain import sharpen

            sharpen(self.model, cfg.temperature)
        if cfg.anchor <= 0:
            return
        from .distill import load_anchor

        path = self.run_dir / "checkpoints" / "anchor.zip"
        self.export(path)
        self.model.set_anchor(load_anchor(path), cfg.anchor, cfg.anchor_steps, start=self.model.num_timesteps)

    def _restore_anchor(self) -> None:
        cfg = self.config.pretrain
        path = self.run_dir / "checkpoints" / "anchor.zip"
        if cfg.anchor <= 0 or not path.is_file():
            return
        from keltis_env.policy import PolicyLoadError, load_policy

        from .distill import load_anchor

        try:
            load_policy(path)  # a truncated or corrupt file is named before torch reads it
        except PolicyLoadError as exc:
            raise ConfigError(f"cannot resume: the anchor policy is unusable: {exc}") from None
        start = int(getattr(self.model, "anchor_start", 0))
        self.model.set_anchor(load_anchor(path), cfg.anchor, cfg.anchor_steps, start=start)

    def _apply_ppo_settings(self) -> None:
        """The update's hyperparameters, which a resumed run may change (the rollout's own,
        n_steps, gamma and gae_lambda, stay as saved: ``Trainer.resume`` refuses changes)."""
        from stable_baselines3.common.utils import FloatSchedule

        p = self.config.ppo
        m = self.model
        m.n_epochs, m.batch_size, m.ent_coef, m.vf_coef = p.n_epochs, p.batch_size, p.ent_coef, p.vf_coef
        m.max_grad_norm, m.target_kl = p.max_grad_norm, p.target_kl
        m.learning_rate = _learning_rate(p)
        m._setup_lr_schedule()
        m.clip_range = FloatSchedule(p.clip_range)

    # ------------------------------------------------------------------ training
    def out_of_time(self) -> bool:
        limit = self.config.max_minutes
        if limit and time.perf_counter() - self._session_start > 60 * limit:
            self.state["stopped_by_time_limit"] = True
            return True
        return False

    def train(self) -> None:
        self._session_start = time.perf_counter()
        self.state["stopped_by_time_limit"] = False
        self._build()
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
        name = f"snap_{steps:09d}"
        self.export(self.pool.snapshot_path(name))
        self.pool.add_snapshot(self.venv, name)

    def evaluate_now(self) -> dict[str, MatchResult]:
        """Evaluate the current policy against ``eval.opponents``; keep it if it is the best."""
        cfg = self.config.eval
        steps = self.model.num_timesteps
        current = self.run_dir / "checkpoints" / "current.zip"
        self.export(current)
        env = self.config.env
        results = {}
        for i, opponent in enumerate(cfg.opponents):
            results[opponent] = evaluate_policy(
                f"ppo:{current}", opponent, cfg.games, seed=self.config.seed * 1000 + i,
                num_players=env.num_players, workers=cfg.workers, max_turns=env.max_turns, game=env.game,
                options=env.options,
            )
        _append_csv(self.run_dir / "eval.csv", _EVAL_FIELDS, [
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
            _copy_atomic(current, self.run_dir / "checkpoints" / "best.zip")
            self.state["best"] = {"timesteps": steps, "opponent": key, "win_rate": value}
        self.state["last_eval"] = steps
        current.unlink()
        return results

    def log_games(self, steps: int, n: int, win: float, turns: float, trunc: float, fps: float) -> None:
        _append_csv(self.run_dir / "games.csv", _GAME_FIELDS, [
            {"timesteps": steps, "learning_s": round(self.clock.total_seconds(), 1), "games": n,
             "win_rate": round(win, 4), "mean_turns": round(turns, 2), "truncation_rate": round(trunc, 4),
             "fps": round(fps, 1)}
        ])

    def export(self, path: Path) -> None:
        """Save the current policy for playing, with its game and player count."""
        env = self.config.env
        export_policy(self.model, path, env.game, env.num_players, env.features)

    def save_checkpoint(self) -> None:
        """``checkpoints/last.zip``: the model and the run's state in one file, replaced
        atomically (``state.json`` is a readable copy)."""
        ckpt = self.run_dir / "checkpoints"
        self.state["timesteps"] = self.model.num_timesteps
        self.state["learning_s"] = self.clock.total_seconds()
        self.state["pool"] = self.pool.state_dict()
        text = json.dumps(self.state, indent=1)
        tmp = ckpt / "last.tmp.zip"
        self.model.save(tmp)
        write_policy_info(tmp, self.config.env.game, self.config.env.num_players, self.config.env.features)
        with zipfile.ZipFile(tmp, "a") as zf:
            zf.writestr(STATE_MEMBER, text)
        _fsync(tmp)
        os.replace(tmp, ckpt / "last.zip")
        _write_atomic(ckpt / "state.json", text)

    def close(self) -> None:
        if self.venv is not None:
            self.venv.close()
            self.venv = None

    # ------------------------------------------------------------------ the end
    def final_report(self) -> dict[str, Any]:
        """Pick the policy (best checkpoint, else the last), evaluate it with
        ``eval.final_games`` per opponent, write the curve and the report; returns it."""
        from .report import plot_learning_curve, write_report

        ckpt = self.run_dir / "checkpoints"
        policy = self.run_dir / "policy.zip"
        source = ckpt / "best.zip"
        if source.is_file():
            _copy_atomic(source, policy)
        else:
            self.export(policy)
        cfg = self.config.eval
        env = self.config.env
        results: dict[str, MatchResult] = {}
        eval_s = 0.0
        if cfg.final_games:
            start = time.perf_counter()
            for i, opponent in enumerate(cfg.opponents):
                results[opponent] = evaluate_policy(
                    f"ppo:{policy}", opponent, cfg.final_games, seed=10**6 + self.config.seed * 1000 + i,
                    num_players=env.num_players, workers=cfg.workers, max_turns=env.max_turns, game=env.game,
                    options=env.options,
                )
            eval_s = time.perf_counter() - start
        plot_learning_curve(self.run_dir)
        meta = json.loads((self.run_dir / "run.json").read_text())
        learning_s = self.clock.total_seconds()
        steps = self.model.num_timesteps
        meta.update(finished=datetime.now().isoformat(timespec="seconds"), timesteps=steps,
                    learning_s=round(learning_s, 1), final_eval_s=round(eval_s, 1),
                    stopped_by_time_limit=bool(self.state.get("stopped_by_time_limit")))
        _write_atomic(self.run_dir / "run.json", json.dumps(meta, indent=1))
        return write_report(self.run_dir, self.config, results, steps=steps, learning_s=learning_s,
                            best=self.state.get("best"), policy=policy, final_eval_s=eval_s,
                            pretrain=self.state.get("pretrain"), init=self.state.get("init"))


# ---------------------------------------------------------------------- helpers
def _algorithm(config: TrainConfig) -> Any:
    """MaskablePPO (its rollouts pipelined on the batched collector, its update without
    distribution objects: :mod:`training.pipeline`), with the teacher anchor's loss term
    when the run has one."""
    if config.pretrain.anchor > 0:
        from .distill import AnchoredMaskablePPO

        return AnchoredMaskablePPO
    from .pipeline import PipelinedMaskablePPO

    return PipelinedMaskablePPO


def _new_model(config: TrainConfig, venv: Any) -> Any:
    import torch

    p = config.ppo
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[p.activation]
    return _algorithm(config)(
        "MlpPolicy",
        venv,
        learning_rate=_learning_rate(p),
        n_steps=p.n_steps,
        batch_size=p.batch_size,
        n_epochs=p.n_epochs,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        clip_range=p.clip_range,
        ent_coef=p.ent_coef,
        vf_coef=p.vf_coef,
        max_grad_norm=p.max_grad_norm,
        target_kl=p.target_kl,
        policy_kwargs={"net_arch": {"pi": list(p.net_arch), "vf": list(p.net_arch)}, "activation_fn": activation},
        seed=config.seed,
        device="cpu",
        verbose=0,
    )


def _learning_rate(p: Any) -> Any:
    """A constant, or SB3's picklable linear schedule (from the learning rate to 0 over the run)."""
    if p.lr_schedule == "linear":
        from stable_baselines3.common.utils import LinearSchedule

        return LinearSchedule(p.learning_rate, 0.0, 1.0)
    return p.learning_rate


def export_policy(model: Any, path: Path, game: str, num_players: int, features: Any = ()) -> None:
    """Save ``model`` for playing (``ppo:PATH``) in ``game`` with ``num_players`` (and the
    observation ``features`` it was trained with): a normal
    MaskablePPO zip, still loadable by ``MaskablePPO.load``, with the policy's metadata
    (:func:`keltis_env.policy.write_policy_info`) and a fresh optimizer, so without Adam's
    moment estimates (two thirds of a full checkpoint). Written atomically."""
    policy = model.policy
    optimizer = policy.optimizer
    policy.optimizer = type(optimizer)(policy.parameters(), **optimizer.defaults)
    try:
        tmp = path.with_name(path.stem + ".tmp.zip")
        model.save(tmp)
        write_policy_info(tmp, game, num_players, features)
        _fsync(tmp)
        os.replace(tmp, path)
    finally:
        policy.optimizer = optimizer


STATE_MEMBER = "trainer_state.json"  # the run's state inside checkpoints/last.zip
#: DAgger rounds start only within this share of ``max_minutes`` (imitation must leave time for RL)
DAGGER_SHARE = 0.4
_MODEL_MEMBERS = ("data", "policy.pth", "policy.optimizer.pth")


def read_checkpoint_state(path: Path) -> dict[str, Any]:
    """The run's state saved in the checkpoint ``path``, after checking that the checkpoint
    is whole (every member's checksum); :class:`ConfigError` says what is wrong. A checkpoint
    of an older run has no state inside: its ``state.json`` next to it is used."""
    where = f"cannot resume from {str(path)!r}"
    if not is_whole_zip(path):
        raise ConfigError(f"{where}: it is truncated or corrupt (not a whole zip file); expected the model zip "
                          "written by training. Restore it from a copy or start a new run")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            missing = [m for m in _MODEL_MEMBERS if m not in names]
            if missing:
                raise ConfigError(f"{where}: it lacks {', '.join(missing)}; expected a MaskablePPO checkpoint")
            bad = zf.testzip()
            if bad is not None:
                raise ConfigError(f"{where}: it is corrupt (member {bad!r} fails its checksum)")
            text = zf.read(STATE_MEMBER).decode() if STATE_MEMBER in names else None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
        raise ConfigError(f"{where}: it is corrupt ({exc})") from None
    source = f"{path}:{STATE_MEMBER}"
    if text is None:
        state_file = path.parent / "state.json"
        if not state_file.is_file():
            raise ConfigError(f"{where}: no run state inside it nor a state.json next to it")
        text, source = state_file.read_text(), str(state_file)
    try:
        state = json.loads(text)
        int(state["timesteps"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{where}: the run state {source} is unreadable ({exc})") from None
    return dict(state)


def _load_checkpoint(algorithm: Any, path: Path, venv: Any) -> Any:
    try:
        return algorithm.load(path, env=venv, device="cpu", print_system_info=False)
    except Exception as exc:  # a checkpoint that passed the checks but not SB3's loader
        raise ConfigError(f"cannot resume from {str(path)!r}: it cannot be loaded ({type(exc).__name__}: {exc}); "
                          "expected a MaskablePPO checkpoint of this run's network") from None


def _fsync(path: Path) -> None:
    """Flush a file to the disk before it replaces another (a crash then leaves either)."""
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _copy_atomic(source: Path, target: Path) -> None:
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, tmp)
    _fsync(tmp)
    os.replace(tmp, target)


def _append_csv(path: Path, fields: list[str], rows: list[dict[str, Any]]) -> None:
    new = not path.is_file()
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def _drop_rows_after(path: Path, timesteps: int) -> None:
    """Keep the rows up to ``timesteps`` (a row cut short by a killed run is dropped too)."""
    if not path.is_file():
        return
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = [r for r in reader if _row_steps(r, fields) is not None and _row_steps(r, fields) <= timesteps]
    if not fields:
        path.unlink()
        return
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def _row_steps(row: dict[str, Any], fields: Any) -> int | None:
    """A whole row's timesteps; None for a row with missing fields."""
    if None in row or any(row.get(k) is None for k in fields):
        return None
    try:
        return int(row["timesteps"])
    except (TypeError, ValueError):
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
        return out.stdout.strip() or None
    except OSError:
        return None


__all__ = ["STATE_MEMBER", "Trainer", "export_policy", "read_checkpoint_state"]
