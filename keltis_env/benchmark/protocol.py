"""The benchmark's protocol: its tracks, their deals and ladders, and the rungs' frozen
ratings, read from a folder such as ``benchmarks/v1/`` (``protocol.yaml``, the ratings
file it names, and the frozen policies under ``policies/``).

A frozen policy is named by the SHA-256 of its contents; :func:`load_protocol` checks
every one against its name, so a corrupt or altered file is refused before any game is
played. The protocol file's own SHA-256 is part of every scorecard.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keltis_env.core.errors import KeltisError
from keltis_env.core.output_files import sha256_file

#: the protocol the ladder plays when none is given
DEFAULT_VERSION = "v1"
#: where the protocol folders live in a source checkout: <repository>/benchmarks/<version>/
BENCHMARKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"

_TRACK_NAME = re.compile(r"[a-z]+-[2-9]p")
_SHA_NAME = re.compile(r"[0-9a-f]{64}")


class BenchmarkError(KeltisError):
    """A protocol that cannot be read (a track, rung or frozen file that is wrong), a bad
    agent or option for the ladder, or a run folder that does not fit the run."""


@dataclass(frozen=True)
class Track:
    """One track: a game, its number of players, the seed of its deals, the deals of a
    full and of a quick run, its rungs (name -> bot spec, in ladder order) and the rungs'
    frozen ratings (empty before calibration)."""

    name: str
    game: str
    players: int
    seed: int
    deals: int
    quick_deals: int
    rungs: dict[str, str]
    ratings: dict[str, float] = field(default_factory=dict)

    def deals_for(self, quick: bool) -> int:
        return self.quick_deals if quick else self.deals

    def games_for(self, quick: bool) -> int:
        return self.deals_for(quick) * self.players

    def table(self, agent: str, rung: str) -> list[str]:
        """The agent specs of a rung's games: the agent, then ``players - 1`` copies of the rung."""
        return [agent] + [self.rungs[rung]] * (self.players - 1)


@dataclass(frozen=True)
class Protocol:
    version: str
    folder: Path
    sha256: str  # of protocol.yaml
    tracks: dict[str, Track]
    ratings_file: Path

    def track(self, name: str) -> Track:
        if name not in self.tracks:
            raise BenchmarkError(f"unknown track {name!r}; the tracks of protocol {self.version} are "
                                f"{', '.join(self.tracks)}")
        return self.tracks[name]


def protocol_folder(version: str = DEFAULT_VERSION) -> Path:
    return BENCHMARKS_DIR / version


def load_protocol(path: str | Path | None = None) -> Protocol:
    """The protocol in folder ``path`` (a folder holding ``protocol.yaml``, or that file
    itself); the default is :data:`DEFAULT_VERSION` under :data:`BENCHMARKS_DIR`.
    :class:`BenchmarkError` names what is wrong."""
    import yaml

    file = Path(path) if path is not None else protocol_folder()
    if file.is_dir():
        file = file / "protocol.yaml"
    if not file.is_file():
        raise BenchmarkError(f"no protocol file {file}; a protocol folder holds protocol.yaml "
                            f"(the shipped one: {protocol_folder()})")
    folder = file.parent
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BenchmarkError(f"cannot read the protocol {file}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tracks"), dict) or not data["tracks"]:
        raise BenchmarkError(f"the protocol {file} must be a mapping with 'version' and 'tracks'")
    version = str(data.get("version", ""))
    if not version:
        raise BenchmarkError(f"the protocol {file} has no 'version'")
    ratings_file = folder / str(data.get("ratings", "calibration.json"))
    all_ratings = _read_ratings(ratings_file)
    tracks = {}
    for name, spec in data["tracks"].items():
        tracks[name] = _track(str(name), spec, folder, all_ratings.get(str(name), {}), file)
    return Protocol(version, folder, sha256_file(file), tracks, ratings_file)


def _read_ratings(path: Path) -> dict[str, dict[str, float]]:
    """track -> rung -> rating, from the calibration file (missing: no track rated yet)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {track: {rung: float(v["rating"]) for rung, v in entry["ratings"].items()}
                for track, entry in data["tracks"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BenchmarkError(f"cannot read the rungs' ratings {path}: {exc!r}") from None


def _track(name: str, spec: Any, folder: Path, ratings: dict[str, float], file: Path) -> Track:
    where = f"track {name!r} of {file}"
    if not _TRACK_NAME.fullmatch(name):
        raise BenchmarkError(f"{where}: a track is named GAME-Np, e.g. keltis-2p")
    if not isinstance(spec, dict):
        raise BenchmarkError(f"{where} must be a mapping")
    try:
        game, players, seed = str(spec["game"]), int(spec["players"]), int(spec["seed"])
        deals, quick = int(spec["deals"]), int(spec["quick_deals"])
        rungs = {str(k): str(v) for k, v in dict(spec["rungs"]).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise BenchmarkError(f"{where}: needs game, players, seed, deals, quick_deals and rungs ({exc!r})") from None
    if not 2 <= players <= 4 or deals < 1 or not 1 <= quick <= deals or not rungs:
        raise BenchmarkError(f"{where}: players must be 2 to 4, 1 <= quick_deals <= deals, and rungs not empty")
    if "random" not in rungs:
        raise BenchmarkError(f"{where}: the ladder must have the rung 'random', the anchor of the rating scale")
    return Track(name, game, players, seed, deals, quick,
                 {rung: _frozen_spec(rung_spec, folder, where) for rung, rung_spec in rungs.items()}, ratings)


def _frozen_spec(spec: str, folder: Path, where: str) -> str:
    """A rung spec with its file (``ppo:policies/SHA.zip``) made absolute and checked
    against the SHA-256 in its name."""
    from keltis_env.bots import parse_spec

    name, options = parse_spec(spec)
    if "path" not in options:
        return spec
    relative = str(options["path"])
    path = (folder / relative).resolve()
    stem = Path(relative).name.split(".")[0]
    if not _SHA_NAME.fullmatch(stem):
        raise BenchmarkError(f"{where}: the frozen file {relative} must be named by its SHA-256")
    if not path.is_file():
        raise BenchmarkError(f"{where}: the frozen file {path} is missing")
    actual = sha256_file(path)
    if actual != stem:
        raise BenchmarkError(f"{where}: the frozen file {path} is altered or corrupt: its SHA-256 is {actual}, "
                            f"its name says {stem}; restore it from the repository")
    _, sep, rest = spec.partition(":")
    return f"{name}:{path}" + rest[len(relative):] if sep else spec


__all__ = [
    "BENCHMARKS_DIR",
    "DEFAULT_VERSION",
    "BenchmarkError",
    "Protocol",
    "Track",
    "load_protocol",
    "protocol_folder",
    "sha256_file",
]
