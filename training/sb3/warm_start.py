"""Where an SB3 run's reinforcement learning starts: the weights of a policy file
(``init``), imitation of a teacher with DAgger rounds (:mod:`training.imitate`),
the sharpened imitation and its KL anchor (:mod:`training.sb3.distill`). Imitation's own
fits outside a run (``python -m training.imitate fit`` and ``value``) are
:mod:`training.imitate.network`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.config import ConfigError
from ..imitate.fit import fit_demonstrations, sharpen
from ..imitate.record import record_demonstrations
from ..imitate.select import play_selector
from .config import PretrainConfig, TrainConfig

#: DAgger rounds start only within this share of ``max_minutes`` (imitation must leave time for RL)
DAGGER_SHARE = 0.4


def imitate_teacher(model: Any, config: TrainConfig, export: Callable[[Path], None], checkpoints: Path,
                    session_start: float, progress: bool) -> dict[str, Any]:
    """Fit ``model`` to ``record.teacher``'s games, then to its labels of the games of
    ``record.dagger_rounds`` DAgger rounds (each played by the policy of the round
    before, exported with ``export`` into ``checkpoints`` for the workers and removed
    after); returns the statistics the report shows."""
    cfg, env, seed = config.record, config.env, config.seed
    start = time.perf_counter()
    log = lambda text: print(text, flush=True)  # noqa: E731
    log(f"pretrain: recording {cfg.games} games of {cfg.teacher!r}")
    data = record_demonstrations(env, cfg, seed, config.workers, progress=progress)
    log(f"pretrain: {len(data):,} decisions recorded ({time.perf_counter() - start:.0f} s)")
    select = play_selector(export, checkpoints / "fit_select.zip", config.fit, env, seed, config.workers, log=log)
    stats: dict[str, Any] = fit_demonstrations(model, data, config.fit, env, seed, log=log, select=select)
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
        data = data + record_demonstrations(env, cfg, seed, config.workers, actor=f"ppo:{actor}", round_=k,
                                            progress=progress)
        stats = fit_demonstrations(model, data, config.fit, env, seed, log=log, select=select, select_start=True)
        actor.unlink()
        rounds = k
    log(f"pretrain: done ({time.perf_counter() - start:.0f} s)")
    stats.update(teacher=cfg.teacher, games=cfg.games + rounds * cfg.dagger_games,
                 dagger_rounds=rounds, decisions_recorded=len(data),
                 soft_temperature=cfg.target_temperature, anchor=config.pretrain.anchor,
                 seconds=round(time.perf_counter() - start, 1))
    return stats


def sharpen_and_anchor(model: Any, cfg: PretrainConfig, export: Callable[[Path], None], anchor: Path) -> None:
    """Divide the warm-started policy's logits by ``pretrain.sharpen``, then freeze it
    as the anchor of reinforcement learning (exported to ``anchor``, :mod:`training.sb3.distill`)."""
    if cfg.sharpen != 1.0:
        sharpen(model, cfg.sharpen)
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


__all__ = ["DAGGER_SHARE", "imitate_teacher", "restore_anchor", "sharpen_and_anchor"]
