"""The benchmark's protocol: its tracks, their deals and ladders, and the rungs' frozen
ratings, read from a folder such as ``benchmarks/v1/`` (``protocol.yaml``, the ratings
file it names, and the frozen policies under ``policies/``).

A frozen policy is named by the SHA-256 of its contents; :func:`load_protocol` checks
every one against its name, so a corrupt or altered file is refused before any game is
played. The protocol file's own SHA-256 is part of every scorecard.

A protocol plays ``ppo`` agents and rungs by one forward pass (``ppo_forward``, the ``ppo``
bot's ``forward`` option, unless a spec names its own): ``dense`` where the protocol names
none, the forward pass v1 and v2 were frozen with, so their scorecards play the same games
again; a later protocol may name ``sparse``, the bot's default.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from keltis_env.core.errors import KeltisError
from keltis_env.core.input_files import read_bounded
from keltis_env.core.output_files import sha256_file

#: the protocol the ladder plays when none is given
DEFAULT_VERSION = "v1"
#: where the protocol folders live in a source checkout: <repository>/benchmarks/<version>/; an
#: installed wheel has no such folder and reads the copy it ships (:mod:`keltis_env.data`)
BENCHMARKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks"

#: the SHA-256 of each frozen protocol file: a file of the same version that differs is a custom protocol
FROZEN_SHA256 = {"v1": "5e224d3c5222e98726e1963541266eacb1b054493a4bdc55b2e2ba309d54691d",
                 "v2": "db6c4c55e7fce98d614eba467c30ad97276455ef147434cce9fe43d00b642387"}

_TRACK_NAME = re.compile(r"([a-z]+)-([2-9])p")
_SHA_NAME = re.compile(r"[0-9a-f]{64}")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_RUNG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_PROTOCOL_KEYS = ("version", "ratings", "tracks", "anchor", "anchor_rating", "ppo_forward")
#: the ppo forward pass of a protocol that names none (v1's and v2's)
DEFAULT_PPO_FORWARD = "dense"
#: the rung whose rating is fixed, and that rating, when a protocol names none (v1's scale)
DEFAULT_ANCHOR = ("random", 0.0)
_TRACK_KEYS = ("game", "players", "seed", "deals", "quick_deals", "rungs")
_MAX_DEALS = 1_000_000


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
    #: the ``ppo`` bot's ``forward`` for ppo specs that name none (the protocol's ``ppo_forward``)
    ppo_forward: str = DEFAULT_PPO_FORWARD

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
    #: the rung every track's scale is anchored on, and its fixed rating
    anchor: str = DEFAULT_ANCHOR[0]
    anchor_rating: float = DEFAULT_ANCHOR[1]

    @property
    def custom(self) -> bool:
        """A protocol file named like a frozen version (``v1``) whose contents differ from it."""
        frozen = FROZEN_SHA256.get(self.version)
        return frozen is not None and frozen != self.sha256

    @property
    def label(self) -> str:
        """The version as reports show it: ``v1``, or ``v1 (custom, sha256 5e224d3c…)`` for an edited copy."""
        return f"{self.version} (custom, sha256 {self.sha256[:8]}…)" if self.custom else self.version

    def track(self, name: str) -> Track:
        if name not in self.tracks:
            raise BenchmarkError(f"unknown track {name!r}; the tracks of protocol {self.version} are "
                                f"{', '.join(self.tracks)}")
        return self.tracks[name]


def protocol_folder(version: str = DEFAULT_VERSION) -> Path:
    """The folder of the shipped protocol ``version``: the checkout's ``benchmarks/<version>``,
    else (an installed wheel) the copy under ``keltis_env/data/benchmarks/``."""
    from keltis_env.data import DATA_DIR

    checkout = BENCHMARKS_DIR / version
    return checkout if checkout.is_dir() else DATA_DIR / "benchmarks" / version


def load_protocol(path: str | Path | None = None) -> Protocol:
    """The protocol in folder ``path`` (a folder holding ``protocol.yaml``, or that file
    itself); the default is :data:`DEFAULT_VERSION` under :data:`BENCHMARKS_DIR`. Every
    field is checked as strictly as a state dict (:func:`_track`): :class:`BenchmarkError`
    names the file, the track and the field that is wrong, and what is allowed."""
    import yaml

    from keltis_env.yaml_files import MAX_YAML_BYTES, load_yaml

    file = Path(path) if path is not None else protocol_folder()
    if file.is_dir():
        file = file / "protocol.yaml"
    if not file.is_file():
        shipped = protocol_folder() / "protocol.yaml"
        if path is None or not shipped.is_file():
            raise BenchmarkError(f"the shipped protocol file is missing: {file} (this installation lacks the package "
                                 "data keltis_env/data/benchmarks/; reinstall keltis-rl, or give --protocol DIR)")
        raise BenchmarkError(f"no protocol file {file}; a protocol folder holds protocol.yaml "
                             f"(the shipped one: {shipped})")
    folder = file.parent
    try:  # bounded: a regular file of limited size, no alias bombs
        data = load_yaml(read_bounded(file, MAX_YAML_BYTES).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BenchmarkError(f"cannot read the protocol {file}: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tracks"), dict) or not data["tracks"]:
        raise BenchmarkError(f"the protocol {file} must be a mapping with 'version' and 'tracks'")
    unknown = sorted(str(k) for k in data if k not in _PROTOCOL_KEYS)
    if unknown:
        raise BenchmarkError(f"the protocol {file}: unknown key {unknown[0]!r}; its keys are "
                             f"{', '.join(_PROTOCOL_KEYS)}")
    version = data.get("version")
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise BenchmarkError(f"the protocol {file}: version must be a name such as 'v1' (letters, digits, '.', "
                             f"'_', '-'), got {version!r}")
    ratings_name = data.get("ratings", "calibration.json")
    if not isinstance(ratings_name, str) or not _FILE_NAME.fullmatch(ratings_name):
        raise BenchmarkError(f"the protocol {file}: ratings must be the name of a file in its folder, such as "
                             f"'calibration.json', got {ratings_name!r}")
    ratings_file = folder / ratings_name
    anchor, anchor_rating = _anchor(data, file)
    forward = _ppo_forward(data, file)
    all_ratings = _read_ratings(ratings_file)
    tracks = {}
    for name, spec in data["tracks"].items():
        if not isinstance(name, str):
            raise BenchmarkError(f"the protocol {file}: a track is named GAME-Np, e.g. keltis-2p; got {name!r}")
        tracks[name] = dataclasses.replace(_track(name, spec, folder, all_ratings.get(name, {}), file, anchor),
                                           ppo_forward=forward)
    return Protocol(version, folder, sha256_file(file), tracks, ratings_file, anchor, anchor_rating)


def _ppo_forward(data: dict[str, Any], file: Path) -> str:
    """The protocol's ``ppo_forward`` (default :data:`DEFAULT_PPO_FORWARD`)."""
    from keltis_env.bots.ppo import FORWARDS

    forward = data.get("ppo_forward", DEFAULT_PPO_FORWARD)
    if forward not in FORWARDS:
        raise BenchmarkError(f"the protocol {file}: ppo_forward must be one of {', '.join(FORWARDS)} (the ppo "
                             f"bot's forward option), got {forward!r}")
    return str(forward)


def _anchor(data: dict[str, Any], file: Path) -> tuple[str, float]:
    """The protocol's ``anchor`` rung name and ``anchor_rating`` (default: random = 0, v1's scale)."""
    anchor = data.get("anchor", DEFAULT_ANCHOR[0])
    if not isinstance(anchor, str) or not _RUNG_NAME.fullmatch(anchor):
        raise BenchmarkError(f"the protocol {file}: anchor must be the name of a rung of every track, such as "
                             f"'heuristic', got {anchor!r}")
    value = data.get("anchor_rating", DEFAULT_ANCHOR[1])
    try:
        return anchor, _finite(value, "anchor_rating")
    except ValueError as exc:
        raise BenchmarkError(f"the protocol {file}: {exc}") from None


def _read_ratings(path: Path) -> dict[str, dict[str, float]]:
    """track -> rung -> rating, from the calibration file (missing: no track rated yet);
    every rating must be a finite number (NaN, infinities, bools and strings are refused)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
        found: dict[str, dict[str, float]] = {}
        for track, entry in data["tracks"].items():
            found[track] = {}
            for rung, v in entry["ratings"].items():
                found[track][rung] = _finite(v["rating"], f"the rating of rung {rung!r} of track {track!r}")
        return found
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise BenchmarkError(f"cannot read the rungs' ratings {path}: {exc}") from None


def _no_constant(name: str) -> float:
    """``json.loads``' hook for NaN and Infinity: refused (JSON has no such numbers)."""
    raise ValueError(f"{name} is not a JSON number; ratings are finite numbers")


def _finite(value: Any, what: str) -> float:
    """``value`` as a float when it is a finite int or float (not a bool); ``ValueError`` else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _integer(spec: dict[str, Any], key: str, where: str, low: int, high: int) -> int:
    """The whole number ``spec[key]`` (an int, not a float, bool or string) within [low, high]."""
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise BenchmarkError(f"{where}: {key} must be a whole number from {low:,} to {high:,}, got {value!r} "
                             f"({type(value).__name__})")
    if not low <= value <= high:
        raise BenchmarkError(f"{where}: {key} must be from {low:,} to {high:,}, got {value!r}")
    return value


def _track(name: str, spec: Any, folder: Path, ratings: dict[str, float], file: Path,
           anchor: str = DEFAULT_ANCHOR[0]) -> Track:
    """One track of the protocol ``file``, every field checked (types, ranges, the game and
    players its name says); the rungs' frozen files made absolute and checked."""
    from keltis_env.core.game import game_names, get_game

    where = f"{file}: track {name!r}"
    match = _TRACK_NAME.fullmatch(name)
    if match is None:
        raise BenchmarkError(f"{where}: a track is named GAME-Np, e.g. keltis-2p")
    if not isinstance(spec, dict):
        raise BenchmarkError(f"{where} must be a mapping of {', '.join(_TRACK_KEYS)}")
    missing = [k for k in _TRACK_KEYS if k not in spec]
    unknown = sorted(str(k) for k in spec if k not in _TRACK_KEYS)
    if missing or unknown:
        what = f"lacks {missing[0]}" if missing else f"has the unknown key {unknown[0]!r}"
        raise BenchmarkError(f"{where} {what}; a track has exactly {', '.join(_TRACK_KEYS)}")
    game = spec["game"]
    if not isinstance(game, str) or game not in game_names():
        raise BenchmarkError(f"{where}: game must be one of {', '.join(game_names())}, got {game!r}")
    if game != match.group(1):
        raise BenchmarkError(f"{where}: game is {game!r} but the track's name says {match.group(1)!r}; a track "
                             f"GAME-Np plays GAME")
    descriptor = get_game(game)
    players = _integer(spec, "players", where, descriptor.min_players, descriptor.max_players)
    if players != int(match.group(2)):
        raise BenchmarkError(f"{where}: players is {players} but the track's name says {match.group(2)}; a track "
                             "GAME-Np has N players")
    seed = _integer(spec, "seed", where, 0, 2**63 - 1)
    deals = _integer(spec, "deals", where, 1, _MAX_DEALS)
    quick = _integer(spec, "quick_deals", where, 1, deals)
    rungs = spec["rungs"]
    if not isinstance(rungs, dict) or not rungs:
        raise BenchmarkError(f"{where}: rungs must be a non-empty mapping of rung name -> agent spec")
    for rung, rung_spec in rungs.items():
        if not isinstance(rung, str) or not _RUNG_NAME.fullmatch(rung):
            raise BenchmarkError(f"{where}: the rung name {rung!r} must be a word of letters, digits, '_' and '-'")
        if not isinstance(rung_spec, str) or not rung_spec.strip():
            raise BenchmarkError(f"{where}: rungs.{rung} must be a non-empty agent spec string, got {rung_spec!r}")
    if anchor not in rungs:
        raise BenchmarkError(f"{where}: the ladder must have the rung {anchor!r}, the anchor of the rating scale")
    return Track(name, game, players, seed, deals, quick,
                 {rung: _frozen_spec(rung_spec, folder, f"{where}: rungs.{rung}") for rung, rung_spec in rungs.items()},
                 ratings)


def _frozen_spec(spec: str, folder: Path, where: str) -> str:
    """A rung spec with its file (``ppo:policies/SHA.zip``) made absolute and checked
    against the SHA-256 in its name."""
    from keltis_env.bots import parse_spec

    try:
        name, options = parse_spec(spec)
    except ValueError as exc:
        raise BenchmarkError(f"{where}: {exc}") from None
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
    "DEFAULT_ANCHOR",
    "DEFAULT_PPO_FORWARD",
    "DEFAULT_VERSION",
    "FROZEN_SHA256",
    "BenchmarkError",
    "Protocol",
    "Track",
    "load_protocol",
    "protocol_folder",
    "sha256_file",
]
