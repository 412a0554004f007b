"""Imitation on its own: record a teacher's demonstrations once, fit policies to them.

    python -m training.imitate record --config configs/ship.yaml --out demos.npz [--set key=value ...]
    python -m training.imitate fit --config configs/ship.yaml --data demos.npz --out clone.zip [--set ...]

A run with ``pretrain.teacher`` records its teacher's games and fits the policy to them in
one go (:mod:`training.pretrain`). With a search as teacher the recording is nearly all of
the cost (``ismcts`` at its default budget: about 2.4 s of a core per game), so trying
several fits (epochs, soft targets, a larger network) is cheaper from a saved recording:

* ``record`` plays ``pretrain.games`` games of ``pretrain.teacher`` exactly as a run with
  that config would (same seeds, same decisions, same order) and saves them with what they
  were recorded for: game, players, observation features, reward, teacher, seed and
  ``pretrain.soft_temperature``. A different ``seed`` gives other games. With ``--actor
  SPEC`` it records a DAgger round instead: ``pretrain.dagger_games`` games in which that
  agent (a ``ppo:`` policy, say) plays every seat in half of the games and one random seat
  in the others, the teacher labelling every decision, as a run's DAgger round ``--round K``
  (default 1) would with its own policy.
* ``fit`` fits a new network (``ppo.net_arch``, ``ppo.activation``, initialised from
  ``seed`` as a run's) to one or more recordings with the config's ``pretrain`` settings
  (``epochs``, ``batch_size``, ``learning_rate``, ``value_coef``) and writes a policy file:
  it plays as ``ppo:PATH``, and a run starts from it with ``pretrain.init: PATH`` (where
  ``pretrain.temperature`` and ``pretrain.anchor`` then apply). With
  ``pretrain.soft_temperature = 0`` the teacher's moves are the targets; with ``T > 0`` its
  values are, as ``softmax(value / T)``: a recording made at ``T0 > 0`` holds
  ``softmax(value / T0)``, which is re-tempered to ``T`` (each probability raised to
  ``T0 / T``, then normalised).

The recording's game, players, features and reward must be the config's: a file recorded
for another observation or reward is refused with what differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .config import ConfigError, TrainConfig
from .pretrain import Demonstrations

FORMAT = 1
_ARRAYS = ("obs", "masks", "actions", "returns", "targets")
#: what a recording must share with the config that fits it
_MATCHED = ("game", "num_players", "features", "reward")


def recording_meta(config: TrainConfig, decisions: int, actor: str | None = None, round_: int = 0) -> dict[str, Any]:
    env, p = config.env, config.pretrain
    return {"format": FORMAT, "game": env.game, "num_players": env.num_players, "features": list(env.features),
            "reward": env.reward, "teacher": p.teacher, "games": p.dagger_games if actor else p.games,
            "seed": config.seed, "soft_temperature": p.soft_temperature, "decisions": decisions,
            "actor": actor, "round": round_}


def save_demonstrations(path: str | Path, data: Demonstrations, meta: dict[str, Any]) -> None:
    """Write ``data`` and its ``meta`` to ``path`` (an uncompressed ``.npz``), atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), **dict(zip(_ARRAYS, data.parts(), strict=True)))
    os.replace(tmp, path)


def load_demonstrations(path: str | Path) -> tuple[Demonstrations, dict[str, Any]]:
    """The demonstrations and metadata saved by :func:`save_demonstrations`;
    :class:`ConfigError` for a missing, unreadable or malformed file."""
    where = f"demonstrations {str(path)!r}"
    if not Path(path).is_file():
        raise ConfigError(f"{where}: no such file (write one with `python -m training.imitate record`)")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            arrays = [z[name] for name in _ARRAYS]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise ConfigError(f"{where} is not a recording written by `python -m training.imitate record` "
                          f"({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ConfigError(f"{where}: unknown format {meta.get('format') if isinstance(meta, dict) else meta!r} "
                          f"(this version reads format {FORMAT})")
    n = len(arrays[2])
    if any(len(a) != n for a in arrays) or arrays[0].ndim != 2 or arrays[1].shape[:1] != (n,):
        lengths = ", ".join(f"{k} {len(a)}" for k, a in zip(_ARRAYS, arrays, strict=True))
        raise ConfigError(f"{where}: its arrays disagree in length ({lengths})")
    return Demonstrations(*arrays), meta


def check_recording(meta: dict[str, Any], config: TrainConfig, where: str) -> None:
    """The recording must be of the config's game, players, features and reward."""
    mine = recording_meta(config, 0)
    wrong = [f"{k} {meta.get(k)!r} (the config's: {mine[k]!r})" for k in _MATCHED if meta.get(k) != mine[k]]
    if wrong:
        raise ConfigError(f"{where} was recorded for another setting: {'; '.join(wrong)}")


def targets_at(data: Demonstrations, recorded_at: float, temperature: float, where: str) -> Demonstrations:
    """``data`` with the targets of ``softmax(value / temperature)`` (0: the moves alone),
    from targets recorded at ``recorded_at`` (0: moves only)."""
    if temperature == 0:
        return dataclasses.replace(data, targets=np.zeros((len(data), 0), np.float16))
    if recorded_at == 0 or data.targets.shape[1] == 0:
        raise ConfigError(f"{where} holds the teacher's moves only (recorded with pretrain.soft_temperature 0): "
                          "fit it with pretrain.soft_temperature=0, or record with a soft temperature > 0")
    if temperature == recorded_at:
        return data
    t = data.targets.astype(np.float64) ** (recorded_at / temperature)
    t /= t.sum(axis=1, keepdims=True)
    return dataclasses.replace(data, targets=t.astype(np.float16))


def record(config: TrainConfig, out: str | Path, progress: bool = True, actor: str | None = None,
           round_: int = 1) -> dict[str, Any]:
    """Record the teacher's games (or, with ``actor``, DAgger round ``round_`` played by
    that agent) and save them to ``out``; the recording's metadata."""
    from .config import _check_specs
    from .pretrain import record_demonstrations

    if not config.pretrain.teacher:
        raise ConfigError("record needs pretrain.teacher (an agent spec: planner, ismcts, ...)")
    if actor is not None:
        _check_specs([actor], config.env.game, config.env.num_players)
        if isinstance(round_, bool) or not isinstance(round_, int) or round_ < 1:
            raise ConfigError(f"--round must be a positive integer, got {round_!r}")
    start = time.perf_counter()
    data = record_demonstrations(config, actor=actor, round_=round_ if actor else 0, progress=progress)
    meta = recording_meta(config, len(data), actor, round_ if actor else 0)
    meta["seconds"] = round(time.perf_counter() - start, 1)
    save_demonstrations(out, data, meta)
    return meta


def fit(config: TrainConfig, data_paths: list[str], out: str | Path, log: Any = print) -> dict[str, float]:
    """Fit a new policy to the recordings (see the module doc) and export it to ``out``."""
    import torch

    from .envs import make_vec_env
    from .pretrain import pretrain
    from .run import _new_model, export_policy

    parts = []
    for path in data_paths:
        data, meta = load_demonstrations(path)
        where = f"demonstrations {path!r}"
        check_recording(meta, config, where)
        parts.append(targets_at(data, meta["soft_temperature"], config.pretrain.soft_temperature, where))
    data = parts[0]
    for part in parts[1:]:
        data = data + part
    # the network as a run builds it: one learner game in this process is enough for its spaces
    built = dataclasses.replace(config, vec_env="dummy", n_envs=1,
                                ppo=dataclasses.replace(config.ppo, n_steps=config.ppo.batch_size))
    torch.set_num_threads(config.torch_threads)
    venv = make_vec_env(built, ["random"], [1.0])
    try:
        model = _new_model(built, venv)
        width = model.observation_space.shape[0]
        if data.obs.shape[1] != width or data.masks.shape[1] != model.action_space.n:
            raise ConfigError(f"the recordings hold observations of {data.obs.shape[1]} values and "
                              f"{data.masks.shape[1]} actions; this config's network takes {width} and "
                              f"{model.action_space.n}")
        log(f"fit: {len(data):,} decisions of {len(data_paths)} recording(s), {config.pretrain.epochs} epochs")
        stats = pretrain(model, data, config, log=log)
        env = config.env
        export_policy(model, Path(out), env.game, env.num_players, env.features)
    finally:
        venv.close()
    return stats


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.imitate", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record pretrain.games games of pretrain.teacher to a file")
    fitp = sub.add_parser("fit", help="fit a policy to recordings and write a policy file")
    for q in (rec, fitp):
        q.add_argument("--config", metavar="YAML", required=True, help="config file (see configs/)")
        q.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config key (repeatable)")
        q.add_argument("--out", metavar="PATH", required=True,
                       help="the recording (.npz) to write" if q is rec else "the policy file (.zip) to write")
    rec.add_argument("--no-progress", action="store_true", help="no progress bar")
    rec.add_argument("--actor", metavar="SPEC", help="record a DAgger round played by this agent (e.g. ppo:PATH)")
    rec.add_argument("--round", type=int, default=1, metavar="K", help="the DAgger round's number (its games' seeds)")
    fitp.add_argument("--data", metavar="NPZ", action="append", required=True,
                      help="a recording from `record` (repeatable: recordings are fitted together)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from .config import load_config

    try:
        config = load_config(args.config, args.overrides)
        if args.command == "record":
            meta = record(config, args.out, progress=not args.no_progress, actor=args.actor, round_=args.round)
            played = f", played by {args.actor!r}" if args.actor else ""
            print(f"recorded {meta['decisions']:,} decisions of {meta['games']} games labelled by "
                  f"{meta['teacher']!r}{played}, in {meta['seconds']:.0f} s: {args.out}")
        else:
            stats = fit(config, args.data, args.out, log=lambda text: print(text, flush=True))
            print(f"policy: {args.out} (teacher's move the most probable in {stats['accuracy']:.1%} of "
                  f"held-out decisions)")
    except ConfigError as exc:
        print(f"python -m training.imitate {args.command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
