"""An SB3 run's folder: made for a new run, its config read back for a resume, and the
files that describe it (``config.yaml``, ``command.txt``, ``run.json``, the progress CSVs).

Run folder ``RUNS_DIR/NAME-YYYYmmdd-HHMMSS/``::

    config.yaml           the resolved config (every key, defaults included)
    command.txt           the exact command of every session of the run (resumes add theirs)
    run.json              seed, versions, git commit, timings
    checkpoints/last.zip  full model (optimizer included) and the run's state for --resume;
                          state.json is a readable copy of that state (training.sb3.checkpoints)
    checkpoints/best.zip  the policy with the best periodic evaluation
    checkpoints/anchor.zip  the imitated policy that RL is anchored to (pretrain.anchor > 0)
    snapshots/            the learner's frozen snapshots in the opponent pool
    logs/                 TensorBoard events
    eval.csv, games.csv   periodic evaluations; training games per rollout
    learning_curve.png    win rates over training, game length and truncation rate
    report.md, report.json  final evaluation of policy.zip (= the best checkpoint)
    policy.zip            the policy to use: ``make_bot("ppo:RUN/policy.zip", game=..., num_players=...)``

Every file is written whole (:mod:`keltis_env.core.output_files`: a temporary file, then
``os.replace``), except the CSVs and TensorBoard's events, which grow row by row.

One process at a time uses a run folder: :func:`make_run_dir` and :func:`resume_config`
claim it (:func:`claim_run_dir`, a lock the operating system drops when the process ends)
before they write anything, so a second ``--resume`` of a running run is refused with
:class:`RunFolderInUseError` (naming the folder and the process holding it) and changes nothing.
The claim lasts until :func:`release_run_dir` (which :meth:`training.sb3.trainer.Trainer.close`
calls, and a refused resume) or the end of the process.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from keltis_env.core.output_files import (
    FolderInUseError,
    FolderLock,
    OutputPathError,
    atomic_path,
    atomic_write_text,
    check_output_dir,
)
from keltis_env.core.recorded_paths import recorded_text

from ..common.config import ConfigError, apply_override, check_renamed
from ..common.files import EVAL_FIELDS, append_csv, copy_file
from ..common.jsonfile import finite_json
from .config import REMOVED, RENAMED, TrainConfig, from_dict, upgrade

GAME_FIELDS = ["timesteps", "learning_s", "games", "win_rate", "mean_turns", "truncation_rate", "fps"]
#: what a resumed run keeps: its network and rollouts, n_envs and env settings
_KEPT_PPO = ("n_steps", "gamma", "gae_lambda")
#: the run folders this process holds (resolved path -> its lock)
_CLAIMED: dict[Path, FolderLock] = {}


class RunFolderInUseError(ConfigError):
    """The run folder is used by another running process; the message names both."""


def claim_run_dir(run_dir: Path) -> None:
    """Claim ``run_dir`` for this process (again: nothing to do) until :func:`release_run_dir`
    or the end of the process; :class:`RunFolderInUseError` when another process holds it."""
    key = Path(os.path.realpath(run_dir))
    if key in _CLAIMED:
        return
    lock = FolderLock(run_dir, "the training run folder")
    try:
        lock.acquire()
    except FolderInUseError as exc:
        raise RunFolderInUseError(str(exc)) from None
    except OutputPathError as exc:
        raise ConfigError(str(exc)) from None
    _CLAIMED[key] = lock


def holds_run_dir(run_dir: Path) -> bool:
    """Whether this process holds ``run_dir`` (:func:`claim_run_dir`, not yet released)."""
    return Path(os.path.realpath(run_dir)) in _CLAIMED


def release_run_dir(run_dir: Path) -> None:
    """Give back a run folder claimed by :func:`claim_run_dir` (not claimed: nothing to do)."""
    lock = _CLAIMED.pop(Path(os.path.realpath(run_dir)), None)
    if lock is not None:
        lock.release()


def make_run_dir(config: TrainConfig) -> Path:
    """A new run folder ``runs_dir/NAME-TIMESTAMP`` (``-1``, ``-2``... if taken) with its
    sub-folders and ``config.yaml``; :class:`ConfigError` when ``runs_dir`` cannot hold it
    (a file of that name, a folder that takes no files)."""
    try:
        check_output_dir(config.runs_dir, "the runs folder (runs_dir)")
    except OutputPathError as exc:
        raise ConfigError(f"runs_dir: {exc}") from None
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = Path(config.runs_dir) / f"{config.name}-{stamp}"
    suffix = 1
    Path(config.runs_dir).mkdir(parents=True, exist_ok=True)
    while True:
        try:
            run_dir.mkdir()  # atomic: two runs started in the same second get two folders
            break
        except FileExistsError:
            run_dir = Path(config.runs_dir) / f"{config.name}-{stamp}-{suffix}"
            suffix += 1
    claim_run_dir(run_dir)
    for sub in ("checkpoints", "snapshots", "logs"):
        (run_dir / sub).mkdir(parents=True)
    atomic_write_text(run_dir / "config.yaml", config.to_yaml())
    return run_dir


def resume_config(run_dir: Path, overrides: list[str] | tuple[str, ...]) -> TrainConfig:
    """The config of the run in ``run_dir`` with ``overrides``, which may change keys such as
    ``total_timesteps`` but not the network, the rollouts or the environments; the folder's
    ``config.yaml`` is rewritten with it. The folder is claimed first (:func:`claim_run_dir`):
    :class:`RunFolderInUseError`, with nothing changed, while another process runs it."""
    claim_run_dir(run_dir)
    try:
        saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot resume {str(run_dir)!r}: its config.yaml is unreadable ({exc})") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"cannot resume {str(run_dir)!r}: its config.yaml is not a mapping of keys")
    saved = upgrade(saved)  # a run folder of an earlier version: its keys as they are named now
    data = yaml.safe_load(yaml.safe_dump(saved))  # a copy to apply the overrides to
    for item in overrides:
        apply_override(data, item)
        check_renamed(data, RENAMED, f"--set {item.partition('=')[0].strip()}", REMOVED)
    config = from_dict(data)
    old = from_dict(saved)
    if [getattr(config.ppo, k) for k in _KEPT_PPO] != [getattr(old.ppo, k) for k in _KEPT_PPO] \
            or config.network != old.network or config.env != old.env or config.n_envs != old.n_envs:
        raise ConfigError(
            "a resumed run keeps its network and rollouts (network.net_arch, network.activation, ppo.n_steps, "
            "ppo.gamma, ppo.gae_lambda), n_envs and env settings"
        )
    atomic_write_text(run_dir / "config.yaml", config.to_yaml())
    return config


def write_session(run_dir: Path, config: TrainConfig, command: str, resumed: bool) -> None:
    """Add this session's command to ``command.txt`` and ``run.json`` (a new run's
    ``run.json`` also gets the seed, the versions and the git commit). The command names
    its paths relative to the repository (:mod:`keltis_env.core.recorded_paths`)."""
    now = datetime.now().isoformat(timespec="seconds")
    command = recorded_text(command)
    commands = run_dir / "command.txt"
    before = commands.read_text() if commands.is_file() else ""
    atomic_write_text(commands, f"{before}# {now}{' (resume)' if resumed else ''}\n{command}\n")
    meta_file = run_dir / "run.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    if not resumed:
        import sb3_contrib
        import stable_baselines3
        import torch

        meta.update(
            seed=config.seed,
            started=now,
            python=platform.python_version(),
            torch=torch.__version__,
            stable_baselines3=stable_baselines3.__version__,
            sb3_contrib=sb3_contrib.__version__,
            git_commit=git_commit(),
            host_cpus=os.cpu_count(),
        )
    meta.setdefault("sessions", []).append({"started": now, "resumed": resumed, "command": command})
    atomic_write_text(meta_file, finite_json(meta, meta_file, indent=1))


def finish_meta(run_dir: Path, **fields: Any) -> None:
    """``run.json`` with ``fields`` added (the end of a session)."""
    meta = json.loads((run_dir / "run.json").read_text())
    meta.update(fields)
    atomic_write_text(run_dir / "run.json", finite_json(meta, run_dir / "run.json", indent=1))


def drop_rows_after(path: Path, timesteps: int) -> None:
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
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _row_steps(row: dict[str, Any], fields: Any) -> int | None:
    """A whole row's timesteps; None for a row with missing fields."""
    if None in row or any(row.get(k) is None for k in fields):
        return None
    try:
        return int(row["timesteps"])
    except (TypeError, ValueError):
        return None


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
        return out.stdout.strip() or None
    except OSError:
        return None


__all__ = ["EVAL_FIELDS", "GAME_FIELDS", "RunFolderInUseError", "append_csv", "claim_run_dir", "copy_file",
           "drop_rows_after", "finish_meta", "git_commit", "holds_run_dir", "make_run_dir", "release_run_dir",
           "resume_config", "write_session"]
