"""The runs of a budget: a training config (SB3, RLlib or expert iteration of
:mod:`training.zero`) trained for exactly the budget, one run per seed, each resumable; what
each run used and where its policy and curve are.

A seed's folder ``RUNS/seed-K/`` holds the config's run folder (SB3: ``NAME-TIMESTAMP/``,
made by :class:`training.sb3.trainer.Trainer`; RLlib and zero: ``run/``) and, once training
is over, ``trained.json`` (:class:`SeedRun`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_write_text

from ..common.config import ConfigError, check_moved, read_with_base
from ..common.jsonfile import finite_json

#: top-level keys only an RLlib config has (training.rllib.config.RLlibConfig)
RLLIB_KEYS = frozenset({"stop", "resources", "league", "model"})
#: top-level keys only a config of training.zero has (training.zero.config.ZeroConfig)
ZERO_KEYS = frozenset({"selfplay", "decisions", "minutes", "symmetry"})
#: top-level keys only a config of training.exit has (not a budget-track config)
EXIT_KEYS = frozenset({"rounds", "gate", "label"})
MAX_SEEDS = 100


@dataclass
class TrainingConfig:
    """A training config file of the budget track: which trainer runs it, its game and players, its
    name."""

    path: Path
    algorithm: str  # "sb3", "rllib" or "zero"
    name: str
    game: str
    players: int
    sha256: str
    warm_start: str = ""  # the policy file the learner starts from (SB3's init, RLlib's warm_start.file); "" none

    @property
    def track(self) -> str:
        return f"{self.game}-{self.players}p"


@dataclass
class SeedRun:
    """A finished run of one seed: what ``trained.json`` holds."""

    seed: int
    run_dir: str
    agent: str  # the agent spec of the policy at the end of the budget
    decisions_used: int
    learning_minutes: float
    teacher: dict[str, Any] | None = None
    curve: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_training_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainingConfig:
    """The training config in ``path`` with ``overrides``, checked by its trainer's config loader
    (:class:`ConfigError` naming what is wrong)."""
    check_moved(path)
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} not found (a training config such as configs/train/default.yaml "
                          "or configs/rllib/rllib_2p.yaml)")
    raw = read_with_base(path, ())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if "stages" in raw:  # a recipe of configs/recipes/: its SB3 run
        sb = sb3_config(path, list(overrides))
        return TrainingConfig(path, "sb3", sb.name, sb.env.game, sb.env.num_players, digest, sb.init)
    if EXIT_KEYS & set(raw):
        raise ConfigError(f"{path} is a config of training.exit (rounds of a labelling search), which the budget "
                          "track does not run: give an SB3, RLlib or training.zero config")
    if ZERO_KEYS & set(raw):
        from ..zero.config import load_config as load_zero

        zero = load_zero(path, list(overrides))
        return TrainingConfig(path, "zero", zero.name, zero.env.game, zero.env.num_players, digest, zero.init)
    if RLLIB_KEYS & set(raw):
        from ..rllib.config import load_config as load_rllib

        rl = load_rllib(path, list(overrides))
        return TrainingConfig(path, "rllib", rl.name, rl.env.game, rl.env.num_players, digest, rl.warm_start.file)
    from ..sb3.config import load_config

    sb = load_config(path, list(overrides))
    return TrainingConfig(path, "sb3", sb.name, sb.env.game, sb.env.num_players, digest, sb.init)


def sb3_config(path: str | Path, overrides: list[str]) -> Any:
    """The SB3 config of ``path``: a training config (configs/train/default.yaml), or the last
    ``train`` stage of a recipe of configs/recipes/ (its ``init`` a file, not a stage)."""
    from ..sb3.config import load_config

    if "stages" not in read_with_base(Path(path), ()):
        return load_config(path, overrides)
    from ..recipe.recipe import load_recipe
    from ..recipe.run import train_config

    recipe = load_recipe(path)
    stages = [s for s in recipe.stages if s.kind == "train"]
    if not stages:
        raise ConfigError(f"{path} has no train stage: the budget track trains an SB3 run (or an RLlib config)")
    return train_config(recipe, stages[-1], overrides)


def check_trainer(trained: TrainingConfig) -> None:
    """The config's trainer can run in this Python (Ray for an RLlib config)."""
    import importlib.util

    if trained.algorithm == "rllib" and importlib.util.find_spec("ray") is None:
        raise ConfigError(f"{trained.path} is an RLlib config, which needs Ray RLlib: run this command with the "
                          "python of the virtualenv that has it (make test-distributed makes .venv-distributed)")


def check_budget(decisions: int, seeds: int) -> None:
    if decisions <= 0:
        raise ConfigError(f"--decisions must be a positive number of the learning policy's decisions, got {decisions}")
    if not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(f"--seeds must be from 1 to {MAX_SEEDS}, got {seeds}")


def seed_dir(runs: Path, seed: int) -> Path:
    return runs / f"seed-{seed}"


def finished(runs: Path, seed: int) -> SeedRun | None:
    """The seed's finished run, or None when it has not finished."""
    marker = seed_dir(runs, seed) / "trained.json"
    if not marker.is_file():
        return None
    return SeedRun(**json.loads(marker.read_text()))


def train_seed(trained: TrainingConfig, decisions: int, seed: int, runs: Path, overrides: list[str], command: str,
               curve_points: int, progress: bool = True) -> SeedRun:
    """Train ``seed`` for ``decisions`` (or go on from its checkpoint), write ``trained.json``."""
    done = finished(runs, seed)
    if done is not None:
        done.curve = read_curve(Path(done.run_dir))  # from the run's own logs
        return done
    folder = seed_dir(runs, seed)
    folder.mkdir(parents=True, exist_ok=True)
    train = {"sb3": train_sb3, "rllib": train_rllib, "zero": train_zero}[trained.algorithm]
    run = train(trained, decisions, seed, folder, overrides, command, curve_points, progress)
    atomic_write_text(folder / "trained.json", finite_json(run.to_dict(), folder / "trained.json", indent=1) + "\n")
    return run


# ---------------------------------------------------------------------- SB3
def sb3_overrides(trained: TrainingConfig, decisions: int, seed: int, folder: Path, overrides: list[str],
                  curve_points: int) -> list[str]:
    """The SB3 config for one seed: the budget, no time limit, no final evaluation (the
    benchmark scores the policy, and so no warm-start match either), periodic evaluations
    often enough for ``curve_points``."""
    base = [*overrides, f"seed={seed}", f"total_timesteps={decisions}", "max_minutes=0", f"runs_dir={folder}",
            "eval.final_games=0", "eval.warm_start=false"]
    every = sb3_config(trained.path, base).eval.every
    target = math.ceil(decisions / curve_points)
    if curve_points and (every == 0 or every > target):
        base.append(f"eval.every={target}")
    return base


def train_sb3(trained: TrainingConfig, decisions: int, seed: int, folder: Path, overrides: list[str], command: str,
              curve_points: int, progress: bool) -> SeedRun:
    from ..sb3.trainer import Trainer

    started = sorted(p.parent.parent for p in folder.glob("*/checkpoints/last.zip"))
    if started:  # the newest run that saved a checkpoint (an earlier attempt may have saved none)
        trainer = Trainer.resume(started[-1], command, [f"total_timesteps={decisions}", "max_minutes=0"],
                                 progress=progress)
    else:
        config = sb3_config(trained.path, sb3_overrides(trained, decisions, seed, folder, overrides, curve_points))
        trainer = Trainer.new(config, command, progress=progress)
    print(f"seed {seed}: run folder {trainer.run_dir}", flush=True)
    try:
        trainer.train()
        final = trainer.run_dir / "final_policy.zip"
        trainer.export(final)
        trainer.final_report()  # the run's own report.md and learning_curve.png
        state = trainer.state
        used = int(trainer.model.num_timesteps)
    finally:
        trainer.close()
    pretrain = state.get("pretrain")
    teacher = None if not pretrain else {"spec": pretrain["teacher"], "games": pretrain["games"],
                                         "decisions": pretrain["decisions_recorded"]}
    return SeedRun(seed=seed, run_dir=str(trainer.run_dir), agent=f"ppo:{final}", decisions_used=used,
                   learning_minutes=round(state.get("learning_s", 0.0) / 60, 2), teacher=teacher,
                   curve=sb3_curve(trainer.run_dir))


def sb3_curve(run_dir: Path) -> dict[str, Any]:
    """The periodic evaluations of a run (``eval.csv``, SB3's or an RLlib run's selection): win rate per opponent."""
    points: dict[str, list[list[float]]] = {}
    games = 0
    path = run_dir / "eval.csv"
    if path.is_file():
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                points.setdefault(row["opponent"], []).append([int(row["timesteps"]), float(row["win_rate"])])
                games = int(row["games"])
    return {"source": f"eval.csv: periodic evaluations, {games} games per opponent", "points": points}


# ---------------------------------------------------------------------- RLlib
def rllib_config(trained: TrainingConfig, decisions: int, seed: int, overrides: list[str], curve_points: int) -> Any:
    """The RLlib config of one seed: ``seed``, stopped by ``decisions`` learner steps alone (no
    time limit), no final evaluation; its selection evaluations, if any, at least
    ``curve_points`` times (they make the learning curve, as SB3's do)."""
    from ..rllib.config import load_config

    base = [*overrides, f"seed={seed}", "stop.minutes=0", "stop.env_steps=0", "stop.iterations=0",
            f"stop.learner_steps={decisions}", "eval.games=0", "eval.warm_start=false"]
    every = load_config(trained.path, base).eval.every
    target = math.ceil(decisions / curve_points) if curve_points else 0
    if every and target and every > target:
        base.append(f"eval.every={target}")
    return load_config(trained.path, base)


def train_rllib(trained: TrainingConfig, decisions: int, seed: int, folder: Path, overrides: list[str], command: str,
                curve_points: int, progress: bool) -> SeedRun:
    """One seed of an RLlib config: stopped by ``stop.learner_steps`` alone."""
    from ..rllib.trainer import train

    config = rllib_config(trained, decisions, seed, overrides, curve_points)
    run_dir = folder / "run"
    resume = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
    print(f"seed {seed}: run folder {run_dir}{' (resumed)' if resume else ''}", flush=True)
    summary = train(config, run_dir, command, progress=progress, resume=resume, sigterm_stops=True)
    final = Path(summary["policy"]).parent / "final_policy.zip"  # the weights at the end of the budget
    rows = read_progress(run_dir)
    minutes = _learning_minutes(rows)
    return SeedRun(seed=seed, run_dir=str(run_dir), agent=f"ppo:{final}",
                   decisions_used=int(float(rows[-1]["learner_steps"])) if rows else 0,
                   learning_minutes=minutes, teacher=None,
                   curve=sb3_curve(run_dir) if (run_dir / "eval.csv").is_file() else rllib_curve(rows))


# ---------------------------------------------------------------------- training.zero
def zero_config(trained: TrainingConfig, decisions: int, seed: int, overrides: list[str], curve_points: int) -> Any:
    """The config of one seed of a :mod:`training.zero` config: ``seed``, stopped by
    ``decisions`` of self-play alone (no time limit); its selection evaluations at least
    ``curve_points`` times (they make the learning curve)."""
    from ..zero.config import load_config

    base = [*overrides, f"seed={seed}", f"decisions={decisions}", "minutes=0"]
    every = load_config(trained.path, base).eval.every
    target = math.ceil(decisions / curve_points) if curve_points else 0
    if target and (every == 0 or every > target):
        base.append(f"eval.every={target}")
    return load_config(trained.path, base)


def train_zero(trained: TrainingConfig, decisions: int, seed: int, folder: Path, overrides: list[str], command: str,
               curve_points: int, progress: bool) -> SeedRun:
    """One seed of a :mod:`training.zero` config, in ``folder/run`` (a stopped one goes on from
    its last generation); the policy at the end of the budget is the run's ``network.zip``."""
    from ..zero.config import load_resume_config
    from ..zero.loop import Run

    run_dir = folder / "run"
    resume = (run_dir / "state.pt").is_file()
    config = load_resume_config(run_dir) if resume else zero_config(trained, decisions, seed, overrides,
                                                                     curve_points)
    print(f"seed {seed}: run folder {run_dir}{' (resumed)' if resume else ''}", flush=True)
    run = Run(config, run_dir, progress=progress)
    run.prepare(command)
    summary = run.run()
    return SeedRun(seed=seed, run_dir=str(run_dir), agent=f"ppo:{summary['network']}",
                   decisions_used=run.decisions, learning_minutes=round(run.seconds / 60, 2), teacher=None,
                   curve=zero_curve(run_dir))


def zero_curve(run_dir: Path) -> dict[str, Any]:
    """A :mod:`training.zero` run's selection evaluations (``evals.jsonl``): win rate per opponent."""
    points: dict[str, list[list[float]]] = {}
    games = 0
    path = run_dir / "evals.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    for line in lines:
        points.setdefault(line["opponent"], []).append([int(line["decisions"]), float(line["win_rate"])])
        games = int(line["games"])
    return {"source": f"evals.jsonl: selection evaluations, {games} games per opponent", "points": points}


def read_progress(run_dir: Path) -> list[dict[str, str]]:
    path = run_dir / "progress.csv"
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _learning_minutes(rows: list[dict[str, str]]) -> float:
    """The training minutes of every session (``minutes`` restarts at 0 with each session)."""
    total, last = 0.0, 0.0
    for row in rows:
        minutes = float(row["minutes"])
        if minutes < last:
            total += last
        last = minutes
    return round(total + last, 2)


def rllib_curve(rows: list[dict[str, str]]) -> dict[str, Any]:
    """The win rates of ``main`` in its training games against the league's bots, by
    decisions of ``main`` (``progress.csv``; an RLlib config has no periodic evaluation)."""
    points: dict[str, list[list[float]]] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("win_rate_") and value not in ("", None):
                points.setdefault(key[len("win_rate_"):], []).append([int(float(row["learner_steps"])),
                                                                       float(value)])
    return {"source": "progress.csv: win rates of the training games against the league's opponents, per iteration",
            "points": points}


def read_curve(run_dir: Path) -> dict[str, Any]:
    """The learning curve of a finished run: an SB3 run's evaluations, a zero run's, an RLlib run's progress."""
    if (run_dir / "evals.jsonl").is_file():
        return zero_curve(run_dir)
    return sb3_curve(run_dir) if (run_dir / "eval.csv").is_file() else rllib_curve(read_progress(run_dir))


__all__ = [
    "EXIT_KEYS",
    "MAX_SEEDS",
    "RLLIB_KEYS",
    "ZERO_KEYS",
    "SeedRun",
    "TrainingConfig",
    "check_budget",
    "check_trainer",
    "finished",
    "read_curve",
    "read_progress",
    "read_training_config",
    "rllib_curve",
    "sb3_curve",
    "sb3_overrides",
    "seed_dir",
    "train_seed",
    "train_zero",
    "zero_config",
    "zero_curve",
]
