"""The run config of SB3 training and of imitation (``python -m training.train``,
``python -m training.imitate``): one YAML file, loaded by :mod:`training.common.config`.

A config file mirrors :class:`TrainConfig`: top-level run settings plus the sections
``env``, ``ppo``, ``pool``, ``eval`` and ``pretrain``. Every key is optional; what a file leaves out
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
from typing import TYPE_CHECKING, Any

import yaml

from .config import ConfigError, apply_override, build, option, read_with_base, sections
from .config import describe as describe_fields

if TYPE_CHECKING:
    from keltis_env.core.game import GameDescriptor


#: Upper bounds of the counts of a run (a larger value is refused when the config is
#: loaded, before anything is made): a seed fits numpy's seeding (32 bits); environments,
#: processes and threads, games per evaluation or recording, and decisions per rollout
#: (ppo.n_steps x n_envs) stay within what one machine can hold.
MAX_SEED = 2**32 - 1
MAX_ENVS = 4096
MAX_WORKERS = 256
MAX_GAMES = 1_000_000
MAX_ROLLOUT = 1_000_000


def _help(help: str) -> dict[str, str]:
    return {"help": help}


@dataclass
class EnvConfig:
    """The game the learner plays (see ``keltis_env.learner``)."""

    game: str = option("keltis", "the game, by its registry name (keltis_env.core.game.game_names())")
    num_players: int = option(2, "players per game (within the game's range)", lo=1)
    reward: str = option("win", "final reward: win (+1/0/-1) or score (score margin / 50)", choices=("win", "score"))
    max_turns: int = option(500, "a game is truncated after this many turns (R8, R11)", lo=1)
    options: dict[str, Any] = field(
        default_factory=dict,
        metadata=_help("the game's other options, e.g. {tile_layout: random} (keltis) or {bonus_layout: random} "
                       "(dice)"),
    )
    features: list[str] = field(
        default_factory=list,
        metadata=_help("optional observation features appended to the learner's observation, e.g. [plan] "
                       "(keltis: the plan model's action values; keltis_env.core.features); the policy file "
                       "records them"),
    )

    def game_options(self) -> dict[str, Any]:
        """The keyword options of the game's config (``max_turns`` and ``options``)."""
        return {"max_turns": self.max_turns, **self.options}


@dataclass
class PPOConfig:
    """sb3-contrib MaskablePPO hyperparameters."""

    learning_rate: float = option(3e-4, "Adam step size", lo=0.0, lo_open=True)
    lr_schedule: str = option("constant", "constant, or linear decay to 0", choices=("constant", "linear"))
    n_steps: int = option(1024, "steps per environment per rollout", lo=2, hi=MAX_ROLLOUT)
    batch_size: int = option(1024, "minibatch size", lo=2)
    n_epochs: int = option(4, "passes over each rollout", lo=1)
    gamma: float = option(1.0, "discount factor", lo=0.0, hi=1.0)
    gae_lambda: float = option(0.95, "GAE lambda", lo=0.0, hi=1.0)
    clip_range: float = option(0.2, "PPO clip range", lo=0.0, lo_open=True)
    ent_coef: float = option(0.01, "entropy bonus", lo=0.0)
    vf_coef: float = option(0.5, "value loss weight", lo=0.0)
    max_grad_norm: float = option(0.5, "gradient clipping", lo=0.0, lo_open=True)
    target_kl: float | None = option(None, "stop an update early past this KL (null: never)", lo=0.0, lo_open=True)
    net_arch: list[int] = field(
        default_factory=lambda: [256, 256], metadata=_help("hidden layer sizes of the policy and value networks")
    )
    activation: str = option("tanh", "hidden activation", choices=("tanh", "relu"))


@dataclass
class PoolConfig:
    """The opponents of the learner: frozen snapshots of itself plus fixed bots."""

    weights: dict[str, float] = field(
        default_factory=lambda: {"self": 0.5, "random": 0.2, "heuristic": 0.3},
        metadata=_help("sampling weight per opponent: 'self' (all snapshots together) or an agent spec"),
    )
    snapshot_every: int = option(50_000, "env steps between snapshots of the learner", lo=1)
    max_snapshots: int = option(8, "snapshots kept in the pool (oldest dropped)", lo=1, hi=1000)
    prioritize: float = option(
        1.0, "favour opponents the learner does not beat: weight x (1 - win rate + 0.05) ** prioritize", lo=0.0
    )
    window: int = option(200, "recent games per opponent behind its win rate", lo=1, hi=MAX_GAMES)


@dataclass
class EvalConfig:
    """Periodic and final evaluation (duplicate deals, keltis_env.evaluation)."""

    every: int = option(50_000, "env steps between evaluations (0: final evaluation only)", lo=0)
    games: int = option(200, "games per opponent in a periodic evaluation", lo=2, hi=MAX_GAMES)
    opponents: list[str] = field(
        default_factory=lambda: ["random", "heuristic"], metadata=_help("agent specs evaluated against")
    )
    best_by: str = option("", "opponent whose win rate picks the best checkpoint (empty: the last opponent)")
    final_games: int = option(1000, "games per opponent in the final evaluation (0: skip)", lo=0, hi=MAX_GAMES)
    workers: int = option(2, "evaluation processes", lo=1, hi=MAX_WORKERS)


@dataclass
class PretrainConfig:
    """Optional warm start: imitate a teacher bot before self-play (training.imitation)."""

    init: str = option(
        "", "a policy file (a run's policy.zip, a checkpoint) to start from instead of random weights: same game, "
        "players, observation features and network; imitation (teacher), temperature and anchor then apply to it")
    teacher: str = option("", "agent spec whose decisions the policy first imitates (empty: start from scratch)")
    games: int = option(1000, "teacher games recorded (the teacher in every seat)", lo=1, hi=MAX_GAMES)
    epochs: int = option(4, "passes over the recorded decisions", lo=1)
    batch_size: int = option(1024, "minibatch size", lo=1)
    learning_rate: float = option(1e-3, "Adam step size", lo=0.0, lo_open=True)
    value_coef: float = option(0.5, "weight of the value loss (final rewards of the teacher's games)", lo=0.0)
    temperature: float = option(
        1.0, "divide the fitted policy's logits by this before RL (< 1 sharpens it: sampling from an imitation "
        "plays much worse than its most probable moves)", lo=0.0, lo_open=True)
    dagger_rounds: int = option(0, "DAgger rounds after the first fit (the policy plays, the teacher labels)", lo=0,
                               hi=1000)
    dagger_games: int = option(2000, "games recorded per DAgger round", lo=1, hi=MAX_GAMES)
    workers: int = option(2, "processes recording games", lo=1, hi=MAX_WORKERS)
    soft_temperature: float = option(
        0.0, "> 0: imitate softmax(teacher's action values / this) where the teacher gives values (planner, "
        "ismcts; values in points), not its move alone; 0: its move", lo=0.0)
    augment: str = option(
        "none", "show each fitted decision under a random one of the game's relabellings (colours: the card game's "
        "120 colour relabellings, keltis_env.games.keltis.symmetry); none: as recorded")
    anchor: float = option(
        0.0, "weight of KL(imitated policy || policy) in the PPO loss when RL starts (training.sb3.distill); 0: none",
        lo=0.0)
    anchor_steps: int = option(500_000, "learner steps over which the anchor's weight decays linearly to 0", lo=1)


@dataclass
class TrainConfig:
    """One training run."""

    name: str = option("default", "run name; the run folder is RUNS_DIR/NAME-TIMESTAMP")
    seed: int = option(0, "seed of the run (environments, network, evaluation): 0 to 2**32 - 1", lo=0, hi=MAX_SEED)
    total_timesteps: int = option(1_000_000, "learner decisions to train for", lo=1)
    max_minutes: float = option(
        0.0, "stop training after this many wall-clock minutes of this session, evaluations included (0: no limit)",
        lo=0.0)
    n_envs: int = option(16, "environments stepped together (one batch for the policy)", lo=1, hi=MAX_ENVS)
    vec_env: str = option(
        "batched", "batched (training.sb3.collector: games stepped together in worker processes, neural opponents "
        "batched), subproc (one learner env object per game in worker processes) or dummy (all in this process)",
        choices=("batched", "subproc", "dummy"))
    workers: int = option(2, "worker processes sharing the environments (vec_env batched or subproc; batched also "
                        "takes 0: the games in this process)", lo=0, hi=MAX_WORKERS)
    pipeline: int = option(
        2, "vec_env batched: every worker's games in this many parts, in flight in turn, so that choosing the "
        "learner's actions overlaps the games' steps (training.sb3.pipeline; 1: no overlap)", lo=1, hi=64)
    torch_threads: int = option(
        1, "torch threads for the policy updates (collection uses 1); more than 1 only on an otherwise idle machine",
        lo=1, hi=MAX_WORKERS)
    checkpoint_every: int = option(100_000, "env steps between resumable checkpoints", lo=1)
    runs_dir: str = option("runs", "where run folders are made")
    env: EnvConfig = field(default_factory=EnvConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    pool: PoolConfig = field(default_factory=PoolConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


# ---------------------------------------------------------------------- loading
def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> TrainConfig:
    """The config in the YAML file ``path`` (following ``base:``), then ``overrides``
    (``"section.key=value"``), validated."""
    data = read_with_base(Path(path), sections(TrainConfig))
    for item in overrides:
        apply_override(data, item)
    return from_dict(data)


def from_dict(data: Mapping[str, Any]) -> TrainConfig:
    config: TrainConfig = build(TrainConfig, _upgrade(data))
    _check_cross(config)
    return config


def _upgrade(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Configs written before ``env.options`` (resolved ``config.yaml`` files of older runs)
    had the card game's ``env.tile_layout``: it is the game option of that name."""
    env = data.get("env")
    if not isinstance(env, Mapping) or "tile_layout" not in env:
        return data
    env = dict(env)
    options = env.get("options") or {}
    if not isinstance(options, Mapping):
        return data  # reported by the checks
    env["options"] = {"tile_layout": env.pop("tile_layout"), **options}
    return {**data, "env": env}


def _check_cross(c: TrainConfig) -> None:
    """Checks that involve several keys."""
    if not c.ppo.net_arch:
        raise ConfigError("ppo.net_arch must list at least one hidden layer size, e.g. [256, 256]")
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
    if c.workers == 0 and c.vec_env != "batched":
        raise ConfigError(f"workers must be >= 1 for vec_env {c.vec_env} (0, the games in this process, is for "
                          "vec_env batched)")
    if c.pretrain.anchor > 0 and not (c.pretrain.teacher or c.pretrain.init):
        raise ConfigError("pretrain.anchor needs pretrain.teacher or pretrain.init: the anchor is the policy RL "
                          "starts from (after imitation)")
    if not c.name or "/" in c.name or c.name.startswith("."):
        raise ConfigError(f"name must be a plain folder name, got {c.name!r}")
    if c.eval.best_by and c.eval.best_by not in c.eval.opponents:
        raise ConfigError(f"eval.best_by must be one of eval.opponents ({', '.join(c.eval.opponents)}), "
                          f"got {c.eval.best_by!r}")
    if (c.eval.every or c.eval.final_games) and not c.eval.opponents:
        raise ConfigError("eval.opponents must list at least one agent spec (or set eval.every and "
                          "eval.final_games to 0)")
    _check_game(c)
    check_specs([s for s in c.pool.weights if s != "self"], c.env.game, c.env.num_players, field="pool.weights")
    check_specs(list(c.eval.opponents), c.env.game, c.env.num_players, field="eval.opponents")
    if c.pretrain.teacher:
        check_specs([c.pretrain.teacher], c.env.game, c.env.num_players, field="pretrain.teacher")
    if c.pretrain.teacher and c.pretrain.soft_temperature > 0:
        _check_values(c.pretrain.teacher, c.env.game)


def _check_values(spec: str, game: str) -> None:
    """Soft targets need a teacher that gives the values behind its choice."""
    from keltis_env.bots import bot_factory, bot_names, parse_spec

    def gives_values(bot: str) -> bool:
        try:
            return callable(getattr(bot_factory(bot, game), "action_values", None))
        except ImportError:  # a bot whose library is not installed here
            return False

    name, _ = parse_spec(spec)
    if not gives_values(name):
        with_values = [b for b in bot_names(game) if gives_values(b)]
        raise ConfigError(f"pretrain.soft_temperature > 0 needs a teacher that gives action values; {name!r} gives "
                          f"only its move (teachers with values in {game}: {', '.join(with_values) or 'none'}); "
                          "set pretrain.soft_temperature to 0")


def check_game_players(name: str, num_players: int) -> GameDescriptor:
    """The registered game ``name`` (its descriptor) if it takes ``num_players``; otherwise a
    :class:`ConfigError` naming ``env.game`` or ``env.num_players`` and what is allowed."""
    import keltis_env  # noqa: F401  (registers the games)
    from keltis_env.core.game import game_names, get_game

    if name not in game_names():
        raise ConfigError(f"env.game must be one of {', '.join(game_names())}; got {name!r}")
    game = get_game(name)
    if not game.min_players <= num_players <= game.max_players:
        raise ConfigError(f"env.num_players must be {game.min_players} to {game.max_players} for {game.name}, "
                          f"got {num_players}")
    return game


def check_augment(game: GameDescriptor, augment: str, field: str) -> None:
    """A fit's ``augment`` names one of the game's relabellings (or none)."""
    if augment != "none" and augment not in game.symmetries:
        offered = ", ".join(sorted(game.symmetries))
        raise ConfigError(f"{field}: the game {game.name!r} has no relabelling {augment!r}; "
                          + (f"give none or one of: {offered}" if offered else "it has none: give none"))


def _check_game(c: TrainConfig) -> None:
    """The game exists, takes ``env.num_players`` and ``env.options``."""
    from keltis_env.core.errors import KeltisError

    game = check_game_players(c.env.game, c.env.num_players)
    check_augment(game, c.pretrain.augment, "pretrain.augment")
    try:
        game.make_config(num_players=c.env.num_players, **c.env.game_options())
    except (KeltisError, TypeError, ValueError) as exc:
        raise ConfigError(f"env.options: {exc} (options of {game.name}: "
                          f"{', '.join(_game_option_names(game))})") from None
    try:
        game.check_features(c.env.features)
    except ValueError as exc:
        raise ConfigError(f"env.features: {exc}") from None
    if c.pretrain.init:
        _check_init(c)


def _check_init(c: TrainConfig) -> None:
    """``pretrain.init`` is a policy file for this run's game, players and features."""
    from keltis_env.policy import PolicyLoadError, read_policy_info

    try:
        info = read_policy_info(c.pretrain.init)
        info.check(c.env.game, c.env.num_players)
    except PolicyLoadError as exc:
        raise ConfigError(f"pretrain.init: {exc}") from None
    if list(info.features) != list(c.env.features):
        raise ConfigError(f"pretrain.init: {info.describe()}, trained with observation features "
                          f"{list(info.features)}; this run has env.features {list(c.env.features)}")


def _game_option_names(game: Any) -> list[str]:
    """What ``env.options`` may hold (``max_turns`` has its own key, ``env.max_turns``)."""
    return [name for name in game.option_names() if name != "max_turns"]


def check_specs(specs: list[str], game: str, num_players: int, field: str = "") -> None:
    """Every agent spec names a bot of ``game`` and is valid for it: the bot is made once
    (its options checked by the bot itself, as :func:`keltis_env.bots.make_bot` does), except
    a ``ppo:PATH`` policy, checked from its file's metadata (game, players) without loading
    the network, and an ``rllib`` checkpoint, whose library may not be installed here.
    ``field`` (e.g. ``eval.opponents``) names where the specs come from in the messages."""
    from keltis_env.bots import bot_names, make_bot, parse_spec

    where = f"{field}: " if field else ""
    known = bot_names(game)
    for spec in specs:
        try:
            name, options = parse_spec(spec)
        except ValueError as exc:
            raise ConfigError(f"{where}{exc}") from None
        if name not in known and not name.startswith("py:"):
            raise ConfigError(f"{where}unknown opponent {spec!r}; known bots: {', '.join(known)} (the bots of "
                              f"{game}; your own agent as py:MODULE:NAME or py:path/file.py:NAME; or 'self' in "
                              "pool.weights)")
        if name == "ppo":
            from keltis_env.policy import PolicyLoadError, read_policy_info

            path = str(options.get("path", ""))
            if not Path(path).is_file():
                raise ConfigError(f"{where}opponent {spec!r}: no policy file at {options.get('path')!r}")
            try:
                read_policy_info(path).check(game, num_players)
            except PolicyLoadError as exc:
                raise ConfigError(f"{where}opponent {spec!r}: {exc}") from None
        elif name != "rllib":
            try:
                make_bot(spec, seed=0, game=game, num_players=num_players)
            except (ValueError, TypeError) as exc:
                raise ConfigError(f"{where}agent spec {spec!r}: {exc}") from None


def describe() -> str:
    """Every key with its default and help (``python -m training.train --describe``)."""
    return describe_fields(TrainConfig)


__all__ = [
    "MAX_ENVS",
    "MAX_GAMES",
    "MAX_ROLLOUT",
    "MAX_SEED",
    "MAX_WORKERS",
    "EnvConfig",
    "EvalConfig",
    "PPOConfig",
    "PoolConfig",
    "PretrainConfig",
    "TrainConfig",
    "check_game_players",
    "check_specs",
    "describe",
    "from_dict",
    "load_config",
]
