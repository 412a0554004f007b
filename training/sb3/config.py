"""The config of an SB3 run (``python -m training.train``): one YAML file, loaded by
:mod:`training.common.config`.

A config file mirrors :class:`TrainConfig`: top-level run settings plus the sections
``env``, ``network``, ``ppo``, ``pool``, ``eval``, and for a warm start ``record`` and
``fit`` (imitation of a teacher, :mod:`training.imitate`) and ``pretrain`` (the policy RL
starts from). Every key is optional; what a file leaves out
comes from the defaults below (the *defaults block* of every experiment). A file may
name another one to start from with ``base: other.yaml`` (relative to the file), so
experiments are small overrides of a shared base, as in RL Baselines3 Zoo::

    base: default.yaml
    name: 3p
    env: {num_players: 3}

Command-line overrides use dotted keys and YAML values: ``--set ppo.learning_rate=1e-4
--set pool.weights={self: 1.0}``. Unknown keys, wrong types and values out of range fail
at once with a :class:`ConfigError` that names the key and what is allowed. An integer
key takes any exact integer however it is written: ``3000000``, ``3_000_000``, ``3e6``
or ``3.0e6``; ``3.5`` is refused. Floats must be finite, a key may appear once, and an
empty file is refused (:mod:`training.common.config`). Counts have upper bounds
(:data:`MAX_SEED`, :data:`MAX_ENVS`, :data:`MAX_WORKERS`, :data:`MAX_GAMES`,
:data:`MAX_ROLLOUT`), so that a typo cannot exhaust the machine.

The game is found by name in the registry of :mod:`keltis_env.core.game` (``env.game``);
its options (``env.options``, e.g. ``{tile_layout: random}`` for the card game or
``{bonus_layout: random}`` for the dice game) and every agent spec are checked against
that game when the config is loaded; so is a ``ppo:PATH`` policy, which must have been
trained for the same game and number of players.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..common.config import (
    ConfigError,
    apply_override,
    build,
    check_renamed,
    option,
    read_with_base,
    sections,
    translate_renamed,
)
from ..common.config import describe as describe_fields
from ..common.sections import (
    MAX_ENVS,
    MAX_GAMES,
    MAX_ROLLOUT,
    MAX_SEED,
    MAX_STEPS,
    MAX_WORKERS,
    EnvConfig,
    check_augment,
    check_env,
    check_policy_file,
    check_specs,
    help_,
)
from ..imitate.config import (
    FitConfig,
    NetworkConfig,
    RecordConfig,
    check_network,
    check_select,
    check_teacher_values,
)


@dataclass
class PPOConfig:
    """sb3-contrib MaskablePPO hyperparameters."""

    learning_rate: float = option(3e-4, "Adam step size", lo=0.0, lo_open=True)
    lr_schedule: str = option("constant", "constant, or linear decay to 0", choices=("constant", "linear"))
    n_steps: int = option(1024, "steps per environment per rollout", lo=2, hi=MAX_ROLLOUT)
    batch_size: int = option(1024, "minibatch size", lo=2)
    n_epochs: int = option(4, "passes over each rollout", lo=1, hi=1000)
    gamma: float = option(1.0, "discount factor", lo=0.0, hi=1.0)
    gae_lambda: float = option(0.95, "GAE lambda", lo=0.0, hi=1.0)
    clip_range: float = option(0.2, "PPO clip range", lo=0.0, lo_open=True)
    ent_coef: float = option(0.01, "entropy bonus", lo=0.0)
    vf_coef: float = option(0.5, "value loss weight", lo=0.0)
    max_grad_norm: float = option(0.5, "gradient clipping", lo=0.0, lo_open=True)
    target_kl: float | None = option(None, "stop an update early past this KL (null: never)", lo=0.0, lo_open=True)
    slow_kl: float = option(
        0.0, "weight of KL(slow copy || policy) in the loss: a regulariser toward a slowly updated copy of the policy "
        "(training.sb3.pipeline; 0: none)", lo=0.0)
    slow_tau: float = option(0.01, "after each update the slow copy's weights move this share of the way to the "
                             "policy's", lo=0.0, hi=1.0, lo_open=True)


@dataclass
class PoolConfig:
    """The opponents of the learner: frozen snapshots of itself plus fixed bots."""

    weights: dict[str, float] = field(
        default_factory=lambda: {"self": 0.5, "random": 0.2, "heuristic": 0.3},
        metadata=help_("sampling weight per opponent: 'self' (all snapshots together) or an agent spec"),
    )
    snapshot_every: int = option(50_000, "env steps between snapshots of the learner", lo=1, hi=MAX_STEPS)
    max_snapshots: int = option(8, "snapshots kept in the pool (oldest dropped)", lo=1, hi=1000)
    prioritize: float = option(
        1.0, "favour opponents the learner does not beat: weight x (1 - win rate + 0.05) ** prioritize", lo=0.0
    )
    window: int = option(200, "recent games per opponent behind its win rate", lo=1, hi=MAX_GAMES)


@dataclass
class EvalConfig:
    """Periodic and final evaluation (duplicate deals, keltis_env.evaluation)."""

    every: int = option(50_000, "env steps between evaluations (0: final evaluation only)", lo=0, hi=MAX_STEPS)
    games: int = option(200, "games per opponent in a periodic evaluation", lo=2, hi=MAX_GAMES)
    games_by: dict[str, int] = field(
        default_factory=dict, metadata=help_(
            "games in a periodic evaluation against the opponents named here (e.g. {heuristic: 400}: fewer "
            "against one that does not pick the best checkpoint); the others play eval.games")
    )
    opponents: list[str] = field(
        default_factory=lambda: ["random", "heuristic"], metadata=help_("agent specs evaluated against")
    )
    best_by: str = option("", "opponent whose win rate picks the best checkpoint (empty: the last opponent)")
    final_games: int = option(1000, "games per opponent in the final evaluation (0: skip)", lo=0, hi=MAX_GAMES)
    warm_start: bool = option(
        False, "the final evaluation also plays the run's policy against its warm start (the policy RL starts "
        "from: init, or the imitation of record.teacher; checkpoints/warm_start.zip), head to head: what the "
        "reinforcement learning added")


@dataclass
class PretrainConfig:
    """Where reinforcement learning starts: the policy of ``init`` or of the imitation
    (``record`` and ``fit``), sharpened, and held near it by a decaying KL anchor."""

    sharpen: float = option(
        1.0, "divide the warm-started policy's logits by this before RL (< 1 sharpens it: sampling from an "
        "imitation plays much worse than its most probable moves)", lo=0.0, lo_open=True)
    anchor: float = option(
        0.0, "weight of KL(warm-started policy || policy) in the PPO loss when RL starts (training.sb3.distill); "
        "0: none", lo=0.0)
    anchor_steps: int = option(500_000, "learner steps over which the anchor's weight decays linearly to 0", lo=1,
                               hi=MAX_STEPS)


@dataclass
class TrainConfig:
    """One training run."""

    name: str = option("default", "run name; the run folder is RUNS_DIR/NAME-TIMESTAMP")
    seed: int = option(0, "seed of the run (environments, network, evaluation): 0 to 2**32 - 1", lo=0, hi=MAX_SEED)
    total_timesteps: int = option(1_000_000, "learner decisions to train for", lo=1, hi=MAX_STEPS)
    max_minutes: float = option(
        0.0, "stop training after this many wall-clock minutes of this session, evaluations included (0: no limit)",
        lo=0.0)
    n_envs: int = option(16, "environments stepped together (one batch for the policy)", lo=1, hi=MAX_ENVS)
    workers: int = option(2, "worker processes of the run: the collector's (sharing the environments; 0: the games "
                        "in this process), the teacher's recording's and the evaluations' (0 counts as 1)", lo=0,
                          hi=MAX_WORKERS)
    pipeline: int = option(
        2, "every worker's games in this many parts, in flight in turn, so that choosing the "
        "learner's actions overlaps the games' steps (training.sb3.pipeline; 1: no overlap)", lo=1, hi=64)
    collector_backend: str = option(
        "auto", "the engine of the collector's games: compiled (the game's numba kernels: engine, encoder and the "
        "random/heuristic/planner opponents compiled; neural and other opponents decided in Python; deals of its "
        "own), python (the Python engine), auto (compiled where the game has the kernels, numba is installed and "
        "they compute env.features, else python)", choices=("auto", "compiled", "python"))
    torch_threads: int = option(
        1, "torch threads for the policy updates (collection uses 1); more than 1 only on an otherwise idle machine",
        lo=1, hi=MAX_WORKERS)
    first_layer: str = option(
        "dense", "how training computes the first layer of the actor and the critic (rollouts and updates): dense "
        "(torch's product) or sparse (over each observation's non-zero inputs, in numba kernels: "
        "training.common.sparse; measured as fast as dense end to end on 2 cores, docs/speed.md); the same weights "
        "and files either way",
        choices=("dense", "sparse"))
    critic: str = option(
        "seat", "what the value head reads in training: seat (the learner's observation, as the actor) or full (the "
        "observation and what the seat does not see: the card game's other hands and removed cards; the actor "
        "still reads the seat's view alone, and policy files hold the actor only: training.common.critic)",
        choices=("seat", "full"))
    checkpoint_every: int = option(100_000, "env steps between resumable checkpoints", lo=1, hi=MAX_STEPS)
    runs_dir: str = option("runs", "where run folders are made")
    init: str = option(
        "", "a policy file (a run's policy.zip, a checkpoint) to start from instead of random weights: same game, "
        "players, observation features and network; imitation (record.teacher), pretrain.sharpen and "
        "pretrain.anchor then apply to it; if it plays averaged over the game's relabellings (its symmetry), "
        "so do the run's policies (a shipped file is found by its repository path from any folder)",
        path=True)
    play_symmetry: str = option(
        "", "the relabellings every policy file of the run plays averaged over (its metadata: the warm start, "
        "snapshots, checkpoints, evaluations and policy.zip play by the mean of the network's logits over them; "
        "the learner still samples from the network alone): one of the game's, e.g. the card game's "
        "colours_affine (20 colour relabellings); none; or empty: the init file's (none without init)")
    relabel: str = option(
        "none", "the relabellings the learner's games are played under: each game draws one at its deal, and the "
        "learner sees it relabelled and plays it back through the map (data augmentation: every game teaches every "
        "colour's part); one of the game's, e.g. the card game's colours_affine (20) or colours (120); or none")
    env: EnvConfig = field(default_factory=EnvConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    pool: PoolConfig = field(default_factory=PoolConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    record: RecordConfig = field(default_factory=RecordConfig)
    fit: FitConfig = field(default_factory=FitConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


# ---------------------------------------------------------------------- loading
#: Keys of earlier versions and what they are now. A config file or ``--set`` that gives one
#: is refused with the new name; a run folder made before is translated on resume
#: (:func:`upgrade`).
RENAMED = {
    "pretrain.init": "init",
    "pretrain.teacher": "record.teacher",
    "pretrain.games": "record.games",
    "pretrain.dagger_rounds": "record.dagger_rounds",
    "pretrain.dagger_games": "record.dagger_games",
    "pretrain.soft_temperature": "record.target_temperature",
    "pretrain.workers": "workers",
    "pretrain.epochs": "fit.epochs",
    "pretrain.batch_size": "fit.batch_size",
    "pretrain.learning_rate": "fit.learning_rate",
    "pretrain.value_coef": "fit.value_coef",
    "pretrain.augment": "fit.augment",
    "pretrain.temperature": "pretrain.sharpen",
    "ppo.net_arch": "network.net_arch",
    "ppo.activation": "network.activation",
    "eval.workers": "workers",
}

#: Keys of earlier versions that are gone, and why.
REMOVED = {
    "vec_env": "the batched self-play collector (training.sb3.collector) is the one vectoriser; leave the key out",
    "backend": "python -m training.train trains with SB3 alone; an RLlib run is python -m training.rllib --config "
               "configs/rllib/NAME.yaml, in that command's own keys (python -m training.rllib --describe; "
               "configs/rllib/rllib_warm_2p.yaml is the earlier backend: rllib file rllib_warm_2p); leave the key out",
}

#: How a run folder's resolved ``config.yaml`` of an earlier version is read: each old key
#: moved to its new place (``None``: dropped, its value now given by another key; the process
#: counts of recording and evaluation are the run's ``workers``).
_MOVES: dict[str, str | None] = {
    **{old: new for old, new in RENAMED.items() if new != "workers"},
    "pretrain.workers": None,
    "eval.workers": None,
    "vec_env": None,
    "backend": None,  # every run folder that holds it is an SB3 run's (backend: sb3)
}


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """The config in the YAML file ``path`` (following ``base:``), then ``overrides``
    (``"section.key=value"``), validated."""
    data = read_with_base(Path(path), sections(TrainConfig))
    check_renamed(data, RENAMED, f"config {str(path)!r}", REMOVED)
    for item in overrides:
        apply_override(data, item)
        check_renamed(data, RENAMED, f"--set {item.partition('=')[0].strip()}", REMOVED)
    return from_dict(data)


def from_dict(data: Mapping[str, Any]) -> TrainConfig:
    """The config of ``data`` (a resolved mapping), validated."""
    config: TrainConfig = build(TrainConfig, data)
    _check_cross(config)
    return config


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved config of a run folder made by an earlier version, in today's keys
    (``env.tile_layout`` became the game option of that name; the keys of :data:`RENAMED`
    moved), so that the run resumes as it was."""
    out = translate_renamed(dict(data), _MOVES)
    env = out.get("env")
    if isinstance(env, Mapping) and "tile_layout" in env:
        env = dict(env)
        options = env.get("options") or {}
        if isinstance(options, Mapping):  # otherwise reported by the checks
            env["options"] = {"tile_layout": env.pop("tile_layout"), **options}
            out["env"] = env
    return out


def _check_full_critic(c: TrainConfig, game: Any) -> None:
    """``critic: full`` needs a game that hides something, and a run whose every network
    reads the seat's view: no relabelling, no imitation and no anchor (their networks are
    fitted on seat observations)."""
    if game.privileged is None:
        raise ConfigError(f"critic: full needs hidden information to read; the game {game.name!r} hides nothing "
                          "(use critic: seat)")
    for key, value in (("relabel", c.relabel != "none"), ("record.teacher", bool(c.record.teacher)),
                       ("pretrain.anchor", c.pretrain.anchor > 0)):
        if value:
            raise ConfigError(f"critic: full does not combine with {key} (the relabelled games, the imitation and the "
                              "anchor read the seat's view only); use critic: seat, or drop it")


def _check_cross(c: TrainConfig) -> None:
    """Checks that involve several keys."""
    check_network(c.network)
    rollout = c.ppo.n_steps * c.n_envs
    if rollout > MAX_ROLLOUT:
        raise ConfigError(f"ppo.n_steps x n_envs ({c.ppo.n_steps} x {c.n_envs} = {rollout}) must be at most "
                          f"{MAX_ROLLOUT:,} decisions per rollout")
    if c.ppo.batch_size > rollout:
        raise ConfigError(
            f"ppo.batch_size ({c.ppo.batch_size}) must be at most ppo.n_steps x n_envs ({rollout})"
        )
    if not c.pool.weights or sum(c.pool.weights.values()) <= 0:
        raise ConfigError("pool.weights must give at least one opponent a weight > 0, e.g. {self: 0.5, random: 0.5}")
    if c.pretrain.anchor > 0 and not (c.record.teacher or c.init):
        raise ConfigError("pretrain.anchor needs record.teacher or init: the anchor is the policy RL starts from "
                          "(after imitation)")
    if not c.name or "/" in c.name or c.name.startswith("."):
        raise ConfigError(f"name must be a plain folder name, got {c.name!r}")
    if c.eval.best_by and c.eval.best_by not in c.eval.opponents:
        raise ConfigError(f"eval.best_by must be one of eval.opponents ({', '.join(c.eval.opponents)}), "
                          f"got {c.eval.best_by!r}")
    for opponent, games in c.eval.games_by.items():
        if opponent not in c.eval.opponents:
            raise ConfigError(f"eval.games_by names {opponent!r}, which is not one of eval.opponents "
                              f"({', '.join(c.eval.opponents)})")
        if not 2 <= games <= MAX_GAMES:
            raise ConfigError(f"eval.games_by.{opponent} must be from 2 to {MAX_GAMES:,} games, got {games}")
    if c.eval.warm_start and not (c.record.teacher or c.init):
        raise ConfigError("eval.warm_start needs a warm start to play against: set init or record.teacher "
                          "(or eval.warm_start: false)")
    if c.eval.warm_start and not c.eval.final_games:
        raise ConfigError("eval.warm_start plays in the final evaluation: set eval.final_games > 0 "
                          "(or eval.warm_start: false)")
    if (c.eval.every or c.eval.final_games) and not c.eval.opponents:
        raise ConfigError("eval.opponents must list at least one agent spec (or set eval.every and "
                          "eval.final_games to 0)")
    game = check_env(c.env)
    if c.collector_backend == "compiled":
        from .compiled_batch import compiled_unsupported

        reason = compiled_unsupported(c.env.game, c.env.features)
        if reason is not None:
            raise ConfigError(f"collector_backend: compiled cannot run this config: {reason}; use auto or python")
    if c.first_layer == "sparse":
        import importlib.util

        if importlib.util.find_spec("numba") is None:
            raise ConfigError("first_layer: sparse needs numba (the 'fast' extra: pip install 'keltis-rl[fast]'); "
                              "use dense")
    if c.critic == "full":
        _check_full_critic(c, game)
    check_augment(game, c.fit.augment, "fit.augment")
    if c.play_symmetry:
        check_augment(game, c.play_symmetry, "play_symmetry")
    check_augment(game, c.relabel, "relabel")
    if c.init:
        check_policy_file(c.init, c.env, "init")
    check_specs([s for s in c.pool.weights if s != "self"], c.env.game, c.env.num_players, field="pool.weights")
    check_specs(list(c.eval.opponents), c.env.game, c.env.num_players, field="eval.opponents")
    if c.record.teacher:
        check_specs([c.record.teacher], c.env.game, c.env.num_players, field="record.teacher")
        if c.record.target_temperature > 0:
            check_teacher_values(c.record.teacher, c.env.game, "record.target_temperature")
    check_select(c.fit, c.env)


def describe() -> str:
    """Every key with its default and help (``python -m training.train --describe``)."""
    return describe_fields(TrainConfig)


__all__ = [
    "REMOVED",
    "RENAMED",
    "EvalConfig",
    "PPOConfig",
    "PoolConfig",
    "PretrainConfig",
    "TrainConfig",
    "describe",
    "from_dict",
    "load_config",
    "upgrade",
]
