"""Demonstrations: a teacher's recorded decisions, and the file they are saved in.

A recording (``python -m training.imitate record``) is an uncompressed ``.npz`` holding
the decisions' observations, masks, the teacher's moves, the final rewards and (with
``record.target_temperature > 0``) the teacher's soft targets, with what they were
recorded for: game, players, observation features, reward, teacher, seed and target
temperature (the file's ``soft_temperature``). A recording is fitted only by a config of
the same game, players, features and reward (:func:`check_recording`); its soft targets
are re-tempered to the fit's ``target_temperature`` (:func:`targets_at`).
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from keltis_env.core.output_files import atomic_path

from ..common.config import ConfigError
from ..common.sections import EnvConfig
from .config import RecordConfig


@dataclass
class Demonstrations:
    obs: np.ndarray  # float16 (N, obs size): exact for the encoder's values up to 1/2048
    masks: np.ndarray  # bool (N, actions)
    actions: np.ndarray  # int64 (N,)
    returns: np.ndarray  # float32 (N,): the final reward of the deciding seat
    #: float16 (N, actions): the teacher's soft targets, or (N, 0) where the move is the target
    targets: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    def __add__(self, other: Demonstrations) -> Demonstrations:
        return Demonstrations(*(np.concatenate([a, b]) for a, b in zip(self.parts(), other.parts(), strict=True)))

    def parts(self) -> tuple[np.ndarray, ...]:
        return self.obs, self.masks, self.actions, self.returns, self.targets


FORMAT = 1
_ARRAYS = ("obs", "masks", "actions", "returns", "targets")
#: what a recording must share with the config that fits it
_MATCHED = ("game", "num_players", "features", "reward")


def recording_meta(env: EnvConfig, record: RecordConfig, seed: int, decisions: int, actor: str | None = None,
                   round_: int = 0) -> dict[str, Any]:
    """What a recording holds beside its arrays (the file's ``soft_temperature`` is
    ``record.target_temperature``)."""
    return {"format": FORMAT, "game": env.game, "num_players": env.num_players, "features": list(env.features),
            "reward": env.reward, "teacher": record.teacher,
            "games": record.dagger_games if actor else record.games, "seed": seed,
            "soft_temperature": record.target_temperature, "decisions": decisions, "actor": actor, "round": round_}


def save_demonstrations(path: str | Path, data: Demonstrations, meta: dict[str, Any]) -> None:
    """Write ``data`` and its ``meta`` to ``path`` (an uncompressed ``.npz``), atomically."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:  # a file object: numpy adds no ".npz" to its name
        np.savez(f, meta=np.array(json.dumps(meta)), **dict(zip(_ARRAYS, data.parts(), strict=True)))


def load_demonstrations(path: str | Path) -> tuple[Demonstrations, dict[str, Any]]:
    """The demonstrations and metadata saved by :func:`save_demonstrations`;
    :class:`ConfigError` for a missing, unreadable or malformed file."""
    where = f"demonstrations {str(path)!r}"
    if str(path) == "":
        raise ConfigError("demonstrations: the path is empty; give a recording (.npz) written by "
                          "`python -m training.imitate record`")
    if Path(path).is_dir():
        raise ConfigError(f"{where} is a folder; give a recording file (.npz) written by "
                          "`python -m training.imitate record`")
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


def check_recording(meta: dict[str, Any], env: EnvConfig, where: str) -> None:
    """The recording must be of the config's game, players, features and reward."""
    mine = recording_meta(env, RecordConfig(), 0, 0)
    wrong = [f"{k} {meta.get(k)!r} (the config's: {mine[k]!r})" for k in _MATCHED if meta.get(k) != mine[k]]
    if wrong:
        raise ConfigError(f"{where} was recorded for another setting: {'; '.join(wrong)}")


def targets_at(data: Demonstrations, recorded_at: float, temperature: float | None, where: str) -> Demonstrations:
    """``data`` with the targets of ``softmax(value / temperature)`` (0: the moves alone;
    ``None``: as recorded), from targets recorded at ``recorded_at`` (0: moves only)."""
    if temperature is None:
        return data
    if temperature == 0:
        return dataclasses.replace(data, targets=np.zeros((len(data), 0), np.float16))
    if recorded_at == 0 or data.targets.shape[1] == 0:
        raise ConfigError(f"{where} holds the teacher's moves only (recorded with record.target_temperature 0): "
                          "fit it with fit.target_temperature=0, or record with record.target_temperature > 0")
    if temperature == recorded_at:
        return data
    t = data.targets.astype(np.float64) ** (recorded_at / temperature)
    t /= t.sum(axis=1, keepdims=True)
    return dataclasses.replace(data, targets=t.astype(np.float16))


def load_recordings(env: EnvConfig, paths: list[str] | list[Path], temperature: float | None,
                    what: str = "demonstrations") -> Demonstrations:
    """The recordings at ``paths`` together, each checked against ``env`` and its targets
    re-tempered to ``temperature`` (:func:`targets_at`), in one pass of copies."""
    if not paths:
        raise ConfigError(f"no {what} to fit: give at least one recording")
    parts = []
    for path in paths:
        data, meta = load_demonstrations(path)
        where = f"{what} {str(path)!r}"
        check_recording(meta, env, where)
        parts.append(targets_at(data, meta["soft_temperature"], temperature, where))
    if len({p.targets.shape[1] for p in parts}) > 1:
        raise ConfigError(f"the {what} hold targets of different kinds (moves alone and soft targets): give "
                          "fit.target_temperature to fit them alike")
    return Demonstrations(*(np.concatenate([p.parts()[i] for p in parts]) for i in range(5)))


__all__ = ["FORMAT", "Demonstrations", "check_recording", "load_demonstrations", "load_recordings",
           "recording_meta", "save_demonstrations", "targets_at"]
