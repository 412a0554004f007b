"""The config of an expert-iteration run (``python -m training.exit``): typed sections
loaded by the one config loader (:mod:`training.common.config`: ``base:``, ``--set
key=value``, exact integers such as ``4e2``), checked before anything is played; errors
name the key and what is allowed. ``python -m training.exit --describe`` prints every key
with its default and meaning.

The checks that involve several keys: the game takes ``env.num_players`` and
``env.options``; ``start`` is a policy file of that game, players and ``env.features``;
every agent spec is made once (the search with ``net=`` the start network when it is
guided); soft targets need a search that gives its candidates' values; the seeds of the
gating evaluations (``gate.seed + round``, one per round) are disjoint from the reporting
seeds (``eval.seeds``). Labelling games take their deals from ``seed`` in a namespace of
their own, so they never repeat an evaluation's deals.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.config import ConfigError, SavedConfig, load, option, translate_renamed
from ..common.config import describe as describe_fields
from ..common.folders import check_resume_folder
from ..common.sections import (
    MAX_GAMES,
    MAX_SEED,
    MAX_WORKERS,
    EnvConfig,
    check_augment,
    check_env,
    check_policy_file,
    check_specs,
)
from ..imitate.config import FitConfig

#: The most rounds of a run, games per labelling shard, rounds in the replay window and
#: reporting seeds: a typo cannot start a run that would never end.
MAX_ROUNDS = 1000
MAX_SHARD_GAMES = 10_000
MAX_SEEDS = 16


@dataclass
class SearchSection:
    """The search that labels the games."""

    spec: str = option("ismcts", "the search's agent spec with its budget and options (e.g. ismcts:iterations=64)")
    guided: bool = option(True, "the search uses the network of the round before (the spec gets net=PATH); false: "
                                "the plain search labels every round")
    first_round_guided: bool = option(True, "round 0 is guided by the start network too (false: the plain search "
                                            "labels round 0)")


@dataclass
class LabelSection:
    """Labelling: the search's games, their decisions and targets, written in shards."""

    games: int = option(200, "games played per round", lo=1, hi=MAX_GAMES)
    shard_games: int = option(10, "games per shard (the unit of resuming and of the worker processes' tasks)", lo=1,
                              hi=MAX_SHARD_GAMES)
    opponent: str = option("", "agent spec in the other seats (the search's seat rotates over duplicate deals and "
                               "only it is labelled); empty: self-play, the search in every seat, all labelled")
    target_temperature: float = option(
        1.0, "the policy target: > 0 softmax of every searched candidate's mean rollout value / this, in points "
        "(SearchResult.policy_target); 0: the search's chosen move", lo=0.0)
    window: int = option(2, "the fit uses the labels of the last this many rounds (replay window)", lo=1,
                         hi=MAX_ROUNDS)


@dataclass
class GateSection:
    """Gating: the new network is kept only if it beats the one it started from."""

    games: int = option(400, "games of the new player against the previous one (duplicate deals)", lo=2,
                        hi=MAX_GAMES)
    seed: int = option(1000, "seed of round 0's gating evaluation; round k uses seed + k (disjoint from eval.seeds)",
                       lo=0, hi=MAX_SEED)
    player: str = option("network", "who plays the gating games: the raw network (ppo:PATH) or the search it guides",
                         choices=("network", "search"))


@dataclass
class EvalSection:
    """The report's evaluations, every round: raw network and guided search against an opponent."""

    opponent: str = option("ismcts", "agent spec both are measured against")
    games: int = option(200, "games per evaluation (duplicate deals)", lo=0, hi=MAX_GAMES)
    seeds: list[int] = field(default_factory=lambda: [7],
                             metadata={"help": "reporting seeds (one evaluation per seed, player and round)"})
    search: bool = option(True, "evaluate the guided search too (not only the raw network)")
    baseline: bool = option(True, "evaluate the start network before round 0 (the curve's first point)")


@dataclass
class ExitConfig(SavedConfig):
    """One expert-iteration run."""

    name: str = option("exit", "run name; the run folder is runs/NAME-TIMESTAMP unless --out is given")
    seed: int = option(0, "seed of the labelling games and of the fits: 0 to 2**32 - 1", lo=0, hi=MAX_SEED)
    rounds: int = option(10, "rounds of label, fit, gate, evaluate", lo=1, hi=MAX_ROUNDS)
    workers: int = option(2, "processes labelling, gating and evaluating (1: in this process)", lo=1, hi=MAX_WORKERS)
    torch_threads: int = option(1, "torch threads of the fits", lo=1, hi=MAX_WORKERS)
    init: str = option("policies/keltis_2p.zip", "the network of round 0's search and of the first warm start "
                                                 "(a policy file of env.game, env.num_players, env.features; a "
                                                 "shipped one by its repository path from any folder)", path=True)
    env: EnvConfig = field(default_factory=EnvConfig)
    search: SearchSection = field(default_factory=SearchSection)
    label: LabelSection = field(default_factory=LabelSection)
    fit: FitConfig = field(default_factory=lambda: FitConfig(epochs=2, batch_size=512, learning_rate=3e-4),
                           metadata={"help": "fitting the network of the round before (warm start) to the window's "
                                             "labels"})
    gate: GateSection = field(default_factory=GateSection)
    eval: EvalSection = field(default_factory=EvalSection)

    def gate_seed(self, round_: int) -> int:
        return self.gate.seed + round_

    def search_spec(self, network: str | None) -> str:
        """The search's agent spec, guided by the policy file ``network`` (``None``: plain)."""
        if network is None:
            return self.search.spec
        sep = "," if ":" in self.search.spec else ":"
        return f"{self.search.spec}{sep}net={network}"


#: Keys a resumed run may change (``--resume RUN --set ...``): how much more to do, with how
#: many processes, and at which reporting seeds (a seed added is evaluated for every round);
#: what the labels, networks and finished evaluations depend on stays as it was.
RESUMABLE = ("rounds", "workers", "torch_threads", "eval.seeds")

#: Keys of earlier versions and what they are now: a config file or ``--set`` that gives one
#: is refused with the new name; a run folder made before is translated on resume.
RENAMED = {
    "start": "init",
    "label.workers": "workers",
    "gate.workers": "workers",
    "eval.workers": "workers",
    "fit.torch_threads": "torch_threads",
    "label.temperature": "label.target_temperature",
    "label.target": "label.target_temperature (0: the search's move)",
}

#: How a run folder's ``config.yaml`` of an earlier version is read (``None``: dropped, the
#: one process count being ``workers``, which takes the labelling's).
_MOVES: dict[str, str | None] = {
    "start": "init",
    "label.workers": "workers",
    "gate.workers": None,
    "eval.workers": None,
    "fit.torch_threads": "torch_threads",
    "label.temperature": "label.target_temperature",
}


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """The ``config.yaml`` of a run folder made by an earlier version, in today's keys."""
    label = data.get("label")
    if isinstance(label, dict) and label.get("target") == "move":
        data = {**data, "label": {**{k: v for k, v in label.items() if k not in ("target", "temperature")},
                                  "target_temperature": 0.0}}
    elif isinstance(label, dict) and "target" in label:
        data = {**data, "label": {k: v for k, v in label.items() if k != "target"}}
    return translate_renamed(data, _MOVES)


def _load_saved(path: Path, overrides: list[str] | tuple[str, ...]) -> ExitConfig:
    """The resolved config of a run folder (translated from an earlier version's keys), then
    ``overrides``."""
    from ..common.config import apply_override, build, read_yaml

    data = upgrade(read_yaml(path.read_text()) or {})
    for item in overrides:
        apply_override(data, item)
    config: ExitConfig = build(ExitConfig, data)
    return config


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> ExitConfig:
    """The config in the YAML file ``path`` (following ``base:``; ``None``: every default),
    then ``overrides`` (``"section.key=value"``), checked."""
    config: ExitConfig = load(ExitConfig, path, overrides, renamed=RENAMED)
    check(config)
    return config


def _run_folder(run_dir: str | Path, overrides: list[str] | tuple[str, ...], allowed: tuple[str, ...], flag: str,
                why: str) -> Path:
    """``run_dir`` as a path, checked to be a run folder and ``overrides`` to name ``allowed``
    keys only (an entry ending in ``.`` allows every key of that section)."""
    run_dir = check_resume_folder(run_dir, "exit", flag)  # another command's run is named, with its resume
    for item in overrides:
        key = item.partition("=")[0].strip()
        if not any(key == k or (k.endswith(".") and key.startswith(k)) for k in allowed):
            raise ConfigError(f"{flag} cannot change {key!r} ({why}")
    return run_dir


def load_resume_config(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExitConfig:
    """The config of the run in ``run_dir`` with ``overrides`` of :data:`RESUMABLE` keys only."""
    run_dir = _run_folder(run_dir, overrides, RESUMABLE, "--resume",
                          f"the run's labels and networks depend on it); it may change {', '.join(RESUMABLE)}")
    saved = _load_saved(run_dir / "config.yaml", [])
    start = run_dir / "start.zip"  # the run's copy: the start file named in the config may be gone or changed
    config = _load_saved(run_dir / "config.yaml", [*overrides, f"init={start}"] if start.is_file() else overrides)
    check(config)
    return dataclasses.replace(config, init=saved.init)


#: Keys a refit (``--refit RUN_DIR``) may change: how the network is fitted (every ``fit.`` key)
#: and the fit's seed; the labels it fits are the run's.
REFITTABLE = ("seed", "torch_threads", "fit.")


def load_refit_config(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExitConfig:
    """The config of the run in ``run_dir``, its start network the run's copy, with
    ``overrides`` of :data:`REFITTABLE` keys only."""
    run_dir = _run_folder(run_dir, overrides, REFITTABLE, "--refit",
                          "the labels were made with it); it may change seed, torch_threads and the fit.* keys")
    start = run_dir / "start.zip"
    if not start.is_file():
        raise ConfigError(f"{run_dir} has no start.zip (the network a refit starts from)")
    config = _load_saved(run_dir / "config.yaml", [*overrides, f"init={start}"])
    check(config)
    return config


def check(c: ExitConfig) -> None:
    """The checks that involve several keys (see the module doc)."""

    if not c.name or "/" in c.name or c.name.startswith("."):
        raise ConfigError(f"name must be a plain folder name, got {c.name!r}")
    game = check_env(c.env)
    if not c.init:
        raise ConfigError("init must name a policy file (the network round 0 starts from), e.g. "
                          "policies/keltis_2p.zip")
    check_policy_file(c.init, c.env, "init", value_head=True)
    check_augment(game, c.fit.augment, "fit.augment")
    if c.fit.select_by:
        raise ConfigError(f"fit.select_by ({c.fit.select_by!r}) chooses among an imitation's epochs; expert "
                          "iteration keeps each round's fit and gates it by play (eval): leave fit.select_by empty")
    n = c.env.num_players
    search = c.search_spec(c.init if c.search.guided else None)
    check_specs([search], c.env.game, n, field="search.spec")
    if not c.search.first_round_guided or not c.search.guided:
        check_specs([c.search.spec], c.env.game, n, field="search.spec")
    if c.label.opponent:
        check_specs([c.label.opponent], c.env.game, n, field="label.opponent")
    check_specs([c.eval.opponent], c.env.game, n, field="eval.opponent")
    if c.label.target_temperature > 0:
        _check_values(search, c.env.game, n)
    if not c.eval.seeds:
        raise ConfigError("eval.seeds must list at least one reporting seed, e.g. [7]")
    if len(c.eval.seeds) > MAX_SEEDS or len(set(c.eval.seeds)) != len(c.eval.seeds):
        raise ConfigError(f"eval.seeds must list 1 to {MAX_SEEDS} different seeds, got {c.eval.seeds}")
    if any(s > MAX_SEED for s in c.eval.seeds):
        raise ConfigError(f"eval.seeds must be 0 to {MAX_SEED}, got {c.eval.seeds}")
    gates = range(c.gate.seed, c.gate.seed + c.rounds)
    shared = sorted(s for s in c.eval.seeds if s in gates)
    if shared:
        raise ConfigError(f"the gating seeds (gate.seed + round: {gates.start} to {gates.stop - 1}) must be disjoint "
                          f"from the reporting seeds eval.seeds {c.eval.seeds}; {shared} is in both: move gate.seed")
    if c.gate.seed + c.rounds - 1 > MAX_SEED:
        raise ConfigError(f"gate.seed + rounds - 1 must be at most {MAX_SEED}, got {c.gate.seed + c.rounds - 1}")


def _check_values(spec: str, game: str, num_players: int) -> None:
    """Soft targets need a search that gives the values behind its choice."""
    from keltis_env.bots import make_bot

    bot = make_bot(spec, seed=0, game=game, num_players=num_players)
    if not callable(getattr(bot, "analyse", None)):
        raise ConfigError(f"label.target_temperature > 0 needs a search that gives its candidates' values; {spec!r} "
                          "gives only its move: set label.target_temperature to 0, or search.spec to a search (ismcts)")


def describe() -> str:
    """Every key with its default and help (``python -m training.exit --describe``)."""
    return describe_fields(ExitConfig)


__all__ = ["MAX_ROUNDS", "MAX_SEEDS", "MAX_SHARD_GAMES", "REFITTABLE", "RENAMED", "RESUMABLE", "EvalSection",
           "ExitConfig", "GateSection", "LabelSection", "SearchSection", "describe", "load_config", "load_refit_config",
           "load_resume_config"]
