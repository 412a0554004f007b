"""Where an SB3 run's reinforcement learning starts: the weights of a policy file
(``pretrain.init``), imitation of a teacher with DAgger rounds (:mod:`training.imitation`),
the sharpened imitation and its KL anchor (:mod:`training.sb3.distill`); and
``python -m training.imitate fit``: a new network, built as a run builds it, fitted to
recordings and exported as a policy file.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.config import ConfigError
from ..common.run_config import PretrainConfig, TrainConfig
from ..imitation.demonstrations import load_recordings
from ..imitation.fit import pretrain, sharpen
from ..imitation.record import record_demonstrations
from .model import export_policy, new_model

#: DAgger rounds start only within this share of ``max_minutes`` (imitation must leave time for RL)
DAGGER_SHARE = 0.4


def init_weights(model: Any, path: str, net_arch: list[int]) -> None:
    """Load the policy and value networks of the policy file ``path`` into ``model`` (the
    optimizer starts afresh)."""
    from sb3_contrib import MaskablePPO

    try:
        loaded = MaskablePPO.load(path, device="cpu", print_system_info=False)
    except Exception as exc:  # a file that passed the metadata checks but not SB3's loader
        raise ConfigError(f"pretrain.init: {path!r} cannot be loaded ({type(exc).__name__}: {exc})") from None
    try:
        model.policy.load_state_dict(loaded.policy.state_dict())
    except RuntimeError as exc:
        raise ConfigError(f"pretrain.init: {path!r} has another network than ppo.net_arch "
                          f"{net_arch} ({str(exc).splitlines()[0]})") from None


def imitate_teacher(model: Any, config: TrainConfig, export: Callable[[Path], None], checkpoints: Path,
                    session_start: float, progress: bool) -> dict[str, Any]:
    """Fit ``model`` to ``pretrain.teacher``'s games, then to its labels of the games of
    ``pretrain.dagger_rounds`` DAgger rounds (each played by the policy of the round
    before, exported with ``export`` into ``checkpoints`` for the workers and removed
    after); returns the statistics the report shows."""
    cfg = config.pretrain
    start = time.perf_counter()
    log = lambda text: print(text, flush=True)  # noqa: E731
    log(f"pretrain: recording {cfg.games} games of {cfg.teacher!r}")
    data = record_demonstrations(config, progress=progress)
    log(f"pretrain: {len(data):,} decisions recorded ({time.perf_counter() - start:.0f} s)")
    stats: dict[str, Any] = pretrain(model, data, config, log=log)
    rounds = 0
    limit = config.max_minutes
    for k in range(1, cfg.dagger_rounds + 1):
        if limit and time.perf_counter() - session_start > 60 * limit * DAGGER_SHARE:
            log(f"pretrain: DAgger rounds from {k} on skipped: past {DAGGER_SHARE:.0%} of max_minutes ({limit:g})")
            break
        actor = checkpoints / f"pretrain_{k - 1}.zip"
        export(actor)
        log(f"pretrain: DAgger round {k}/{cfg.dagger_rounds}, recording {cfg.dagger_games} games "
            f"({time.perf_counter() - start:.0f} s)")
        data = data + record_demonstrations(config, actor=f"ppo:{actor}", round_=k, progress=progress)
        stats = pretrain(model, data, config, log=log)
        actor.unlink()
        rounds = k
    log(f"pretrain: done ({time.perf_counter() - start:.0f} s)")
    stats.update(teacher=cfg.teacher, games=cfg.games + rounds * cfg.dagger_games,
                 dagger_rounds=rounds, decisions_recorded=len(data),
                 soft_temperature=cfg.soft_temperature, anchor=cfg.anchor,
                 seconds=round(time.perf_counter() - start, 1))
    return stats


def sharpen_and_anchor(model: Any, cfg: PretrainConfig, export: Callable[[Path], None], anchor: Path) -> None:
    """Divide the warm-started policy's logits by ``pretrain.temperature``, then freeze it
    as the anchor of reinforcement learning (exported to ``anchor``, :mod:`training.sb3.distill`)."""
    if cfg.temperature != 1.0:
        sharpen(model, cfg.temperature)
    if cfg.anchor <= 0:
        return
    from .distill import load_anchor

    export(anchor)
    model.set_anchor(load_anchor(anchor), cfg.anchor, cfg.anchor_steps, start=model.num_timesteps)


def restore_anchor(model: Any, cfg: PretrainConfig, anchor: Path) -> None:
    """A resumed run's anchor, from ``anchor`` (when the run has one)."""
    if cfg.anchor <= 0 or not anchor.is_file():
        return
    from keltis_env.policy import PolicyLoadError, load_policy

    from .distill import load_anchor

    try:
        load_policy(anchor)  # a truncated or corrupt file is named before torch reads it
    except PolicyLoadError as exc:
        raise ConfigError(f"cannot resume: the anchor policy is unusable: {exc}") from None
    start = int(getattr(model, "anchor_start", 0))
    model.set_anchor(load_anchor(anchor), cfg.anchor, cfg.anchor_steps, start=start)


def fit_policy(config: TrainConfig, data_paths: list[str], out: str | Path, log: Any = print,
               held_out_paths: list[str] | tuple[str, ...] = ()) -> dict[str, float]:
    """Fit a new policy to the recordings (``python -m training.imitate fit``) and export it
    to ``out``; the held-out statistics: on the recordings ``held_out_paths`` (whole games
    never fitted) when given, else on a random 5% of the fitted decisions."""
    import torch

    from .envs import make_vec_env

    overlap = sorted({str(Path(p).resolve()) for p in data_paths} & {str(Path(p).resolve()) for p in held_out_paths})
    if overlap:
        raise ConfigError(f"a recording cannot be both fitted and held out: {', '.join(overlap)}")
    data = load_recordings(config, data_paths)
    held_out = load_recordings(config, list(held_out_paths)) if held_out_paths else None
    # the network as a run builds it: one learner game in this process is enough for its spaces
    built = dataclasses.replace(config, vec_env="dummy", n_envs=1,
                                ppo=dataclasses.replace(config.ppo, n_steps=config.ppo.batch_size))
    torch.set_num_threads(config.torch_threads)
    venv = make_vec_env(built, ["random"], [1.0])
    try:
        model = new_model(built, venv)
        width = model.observation_space.shape[0]
        if data.obs.shape[1] != width or data.masks.shape[1] != model.action_space.n:
            raise ConfigError(f"the recordings hold observations of {data.obs.shape[1]} values and "
                              f"{data.masks.shape[1]} actions; this config's network takes {width} and "
                              f"{model.action_space.n}")
        kept = f", {len(held_out):,} held out" if held_out is not None else ""
        log(f"fit: {len(data):,} decisions of {len(data_paths)} recording(s){kept}, {config.pretrain.epochs} epochs")
        stats = pretrain(model, data, config, log=log, held_out=held_out)
        env = config.env
        export_policy(model, Path(out), env.game, env.num_players, env.features, value_reward=env.reward)
    finally:
        venv.close()
    return stats


__all__ = ["DAGGER_SHARE", "fit_policy", "imitate_teacher", "init_weights", "restore_anchor", "sharpen_and_anchor"]
