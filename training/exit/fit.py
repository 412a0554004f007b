"""Fitting a round's network: the network of the round before, warm-started, fitted to the
labels of the replay window with the imitation's fit (:func:`training.imitate.fit.fit_demonstrations`:
cross-entropy to the policy targets over the legal actions, MSE of the value head to the
final rewards) and exported as a normal policy file (:func:`training.imitate.network.export_policy`:
SB3 zip plus the policy's metadata)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from keltis_env.policy import read_policy_info

from ..common.config import ConfigError
from ..imitate.demonstrations import Demonstrations, load_recordings
from ..imitate.fit import fit_demonstrations
from ..imitate.network import export_policy
from .config import ExitConfig

#: One shard in this many is held out of the fit, to measure it on games it never saw.
HELD_OUT_EVERY = 20


def load_labels(config: ExitConfig, paths: list[Path]) -> Demonstrations:
    """The shards at ``paths`` together, each checked against ``env`` (game, players,
    features, reward), their targets at ``fit.target_temperature`` (null: as labelled)."""
    if not paths:
        raise ConfigError("no labels to fit: the replay window holds no shard")
    return load_recordings(config.env, paths, config.fit.target_temperature, what="labels")


def fit_round(config: ExitConfig, round_: int, previous: Path, shards: list[Path], out: Path,
              log: Any = print) -> dict[str, Any]:
    """Fit the network in ``previous`` to the labels in ``shards`` (but the held-out ones),
    write it to ``out``; the statistics of the fit on the held-out shards, whole games it
    never fitted (accuracy of the searched move, policy and value loss, the value loss of
    guessing the mean)."""
    import torch
    from sb3_contrib import MaskablePPO

    start = time.perf_counter()
    # whole shards held out (one in HELD_OUT_EVERY, at least one where there are two): their
    # games are never fitted, so the held-out value loss is that of games the head never saw
    held = (shards[HELD_OUT_EVERY - 1 :: HELD_OUT_EVERY] or shards[-1:]) if len(shards) > 1 else []
    fitted = [s for s in shards if s not in held]
    data = load_labels(config, fitted)
    held_out = load_labels(config, held) if held else None
    torch.set_num_threads(config.torch_threads)
    try:
        model = MaskablePPO.load(previous, device="cpu", print_system_info=False)
    except Exception as exc:  # a file that passed the metadata checks but not SB3's loader
        raise ConfigError(f"the network {str(previous)!r} cannot be loaded ({type(exc).__name__}: {exc})") from None
    info = read_policy_info(previous)
    if data.obs.shape[1] != info.observation_size or data.masks.shape[1] != info.num_actions:
        raise ConfigError(f"the labels hold observations of {data.obs.shape[1]} values and {data.masks.shape[1]} "
                          f"actions; the network {str(previous)!r} takes {info.observation_size} and "
                          f"{info.num_actions}")
    log(f"round {round_}: fitting {len(data):,} decisions of {len(shards)} shard(s), {config.fit.epochs} epochs")
    stats: dict[str, Any] = fit_demonstrations(model, data, config.fit, config.env, config.seed + round_, log=log,
                                               held_out=held_out)
    env = config.env
    export_policy(model, out, env.game, env.num_players, env.features, value_reward=env.reward)
    stats.update(decisions_fitted=len(data), shards=len(shards), held_out_shards=len(held),
                 seconds=round(time.perf_counter() - start, 1))
    return stats


def labelled_shards(run_dir: Path) -> tuple[list[int], list[Path]]:
    """The rounds of the run in ``run_dir`` whose labelling finished, and their shards in the
    order the loop's fits take them (round by round)."""
    done = sorted(p.parent for p in run_dir.glob("round_*/label.json"))
    shards = [p for folder in done for p in sorted((folder / "labels").glob("shard_*.npz"))]
    return [int(folder.name.removeprefix("round_")) for folder in done], shards


def refit(config: ExitConfig, run_dir: Path, out: Path, log: Any = print) -> dict[str, Any]:
    """The start network of the run in ``run_dir`` fitted afresh, with the fit settings of
    ``config`` (:func:`training.exit.config.load_refit_config`), to the labels of every round
    of the run whose labelling finished, the same shards held out as in the loop's fits:
    ``out/network.zip`` and ``out/fit.json``. Labelling is the costly stage of a round; a
    refit tries other fit settings on labels already made."""
    rounds, shards = labelled_shards(run_dir)
    if not rounds:
        raise ConfigError(f"{run_dir} has no finished labelling (no round_*/label.json): nothing to refit")
    out.mkdir(parents=True, exist_ok=True)
    stats = fit_round(config, 0, Path(config.init), shards, out / "network.zip", log=log)
    stats.update({"from": str(config.init), "rounds": rounds, "seed": config.seed,
                  "fit": dataclasses.asdict(config.fit)})
    (out / "fit.json").write_text(json.dumps(stats, indent=1) + "\n")
    return stats


__all__ = ["HELD_OUT_EVERY", "fit_round", "labelled_shards", "load_labels", "refit"]
