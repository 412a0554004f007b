"""The Ray RLlib trainer's config (``python -m training.rllib``): typed sections loaded by
the training config loader (:mod:`training.common.config`: ``base:``, ``key=value``
overrides, exact integers such as ``3e6``), checked before Ray starts; the errors name the
key and what is allowed. ``python -m training.rllib --describe`` prints every key and its
default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.config import ConfigError, load, to_dict
from ..common.folders import check_resume_folder
from ..common.sections import MAX_ENVS, MAX_GAMES, MAX_ROLLOUT, MAX_SEED, MAX_WORKERS, check_game_players

#: how env runners sample (``resources.sampler``): batched league games on the compiled core, or one game per env
SAMPLERS = ("batched", "per_game")


# ---------------------------------------------------------------------- config
@dataclass
class EnvSection:
    game: str = "keltis"  # a registered game: keltis, dice
    num_players: int = 2
    reward: str = "score"  # win | score | shaped (see the env docs)
    options: dict[str, Any] = field(default_factory=lambda: {"max_turns": 500})  # the game's own options
    turn_cap: str = "truncate"  # a game cut at max_turns: truncate (its value bootstrapped) | end (terminated)
    # the relabellings main's games are played under (batched sampler): each game draws one at its deal, and main
    # sees it relabelled (training.rllib.games); none, or one of the game's (the card game's colours_affine)
    relabel: str = "none"


@dataclass
class StopSection:
    minutes: float = 12.0  # wall-clock budget of the training loop (0: none)
    env_steps: int = 0  # env steps (batched sampler: main's decisions; per_game: main's and snapshots' moves; 0: none)
    learner_steps: int = 0  # decisions of the learner "main" sampled, in all its seats (0: none)
    iterations: int = 0  # training iterations (0: none)


@dataclass
class ResourcesSection:
    num_cpus: int = 2  # CPUs for a local Ray (ignored with --address)
    env_runners: int = 1  # 0: sample in the driver process (local mode)
    envs_per_runner: int = 16  # games per env runner (batched: stepped together; per_game: RLlib's vector of envs)
    torch_threads: int = 1
    # batched: each env runner steps its games together on the compiled core, one forward pass per module and
    # decision round (training.rllib.sampling); per_game: one game per env with RLlib's own runner
    sampler: str = "batched"


@dataclass
class PPOSection:
    lr: float = 3.0e-4
    gamma: float = 0.999
    lambda_: float = 0.95  # written "lambda" in YAML
    clip: float = 0.2
    entropy: float = 0.01
    vf_coeff: float = 0.5
    grad_clip: float = 0.5
    train_batch: int = 4096  # env steps per training iteration
    minibatch: int = 1024
    epochs: int = 3
    # the weight of RLlib's adaptive KL penalty (its use_kl_loss, kl_coeff); 0: none, clipping alone, as in SB3's PPO
    kl_coeff: float = 0.2


@dataclass
class ModelSection:
    hidden: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "tanh"
    # the relabellings the trained module plays averaged over as a bot (rllib:, the final evaluation); training
    # samples from the network alone. "": the warm start's (none without one); none; or one of the game's
    symmetry: str = ""


@dataclass
class WarmStartSection:
    # a policy file (.zip) whose network the learner and every snapshot start from (training.rllib.warm_start)
    file: str = ""
    sharpen: float = 1.0  # the file's logits divided by this (< 1 sharpens the sampled policy)
    # the KL anchor to the warm start (sharpened): main's loss gains w * KL(anchor || policy), w decaying linearly
    # from anchor to 0 over anchor_steps learner steps (training.rllib.learner); 0: none
    anchor: float = 0.0
    anchor_steps: int = 300_000


@dataclass
class LeagueSection:
    # opponent kinds per seat: self (main), league (a snapshot), or a bot of `bots`
    weights: dict[str, float] = field(
        default_factory=lambda: {"self": 0.2, "league": 0.2, "random": 0.3, "heuristic": 0.3})
    bots: list[str] = field(default_factory=lambda: ["random", "heuristic"])
    slots: int = 4  # frozen snapshots main_v0..main_v{slots-1}
    snapshot_every: int = 10  # iterations (0: snapshots stay the untrained weights)


@dataclass
class EvalSection:
    games: int = 1000  # final evaluation per opponent (0: none)
    opponents: list[str] = field(default_factory=lambda: ["random", "heuristic"])
    workers: int = 2
    seed: int = 7
    warm_start: bool = False  # also play the final policy against the warm start (ppo:FILE), head to head
    # selection evaluations every this many learner steps of main (0: none; training.rllib.selection): select_games
    # against each opponent on the selection deals; the best against best_by (empty: the last opponent) is the
    # run's policy.zip, which the final evaluation plays
    every: int = 0
    select_games: int = 200
    best_by: str = ""


@dataclass
class RLlibConfig:
    name: str = "rllib"
    seed: int = 0
    checkpoint_every: int = 25  # iterations (the final checkpoint is always written)
    keep_checkpoints: int = 2  # periodic checkpoints kept besides the final one
    env: EnvSection = field(default_factory=EnvSection)
    stop: StopSection = field(default_factory=StopSection)
    resources: ResourcesSection = field(default_factory=ResourcesSection)
    ppo: PPOSection = field(default_factory=PPOSection)
    model: ModelSection = field(default_factory=ModelSection)
    league: LeagueSection = field(default_factory=LeagueSection)
    eval: EvalSection = field(default_factory=EvalSection)
    warm_start: WarmStartSection = field(default_factory=WarmStartSection)

    def to_dict(self) -> dict[str, Any]:
        return dict(to_dict(self))


def validate(config: RLlibConfig) -> RLlibConfig:
    """Checks that need more than types; returns the config."""
    spec = check_game_players(config.env.game, config.env.num_players)
    if config.env.reward not in ("win", "score", "shaped"):
        raise ConfigError(f"env.reward must be 'win', 'score' or 'shaped', got {config.env.reward!r}")
    if config.env.turn_cap not in ("truncate", "end"):
        raise ConfigError(f"env.turn_cap must be 'truncate' or 'end', got {config.env.turn_cap!r}")
    from keltis_env.bots import bot_names

    for bot in config.league.bots:
        if bot not in bot_names(spec) or bot in ("rllib", "ppo"):
            raise ConfigError(f"league.bots: {bot!r} is not a bot of {spec.name} that plays without files; "
                              f"choose from {', '.join(sorted(set(bot_names(spec)) - {'rllib', 'ppo'}))}")
    kinds = {"self", "league", *config.league.bots}
    for kind, weight in config.league.weights.items():
        if kind not in kinds:
            raise ConfigError(f"league.weights: unknown opponent kind {kind!r}; kinds are {', '.join(sorted(kinds))}")
        if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight < 0:
            raise ConfigError(f"league.weights.{kind} must be a number >= 0, got {weight!r}")
    if sum(config.league.weights.values()) <= 0:
        raise ConfigError("league.weights must have a positive sum")
    if config.league.weights.get("league", 0) > 0 and config.league.slots < 1:
        raise ConfigError("league.slots must be >= 1 when league.weights.league > 0")
    r = config.resources
    positive = {"ppo.train_batch": config.ppo.train_batch, "ppo.minibatch": config.ppo.minibatch,
                "ppo.epochs": config.ppo.epochs, "resources.envs_per_runner": r.envs_per_runner,
                "resources.num_cpus": r.num_cpus, "resources.torch_threads": r.torch_threads}
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{key} must be >= 1, got {value}")
    e = config.eval
    if e.every < 0 or e.select_games < 1 or e.select_games > MAX_GAMES:
        raise ConfigError(f"eval.every must be >= 0 (0: no selection) and eval.select_games from 1 to {MAX_GAMES:,}, "
                          f"got {e.every} and {e.select_games}")
    if e.best_by and e.best_by not in e.opponents:
        raise ConfigError(f"eval.best_by must be one of eval.opponents ({', '.join(e.opponents)}), got {e.best_by!r}")
    if e.every and not e.opponents:
        raise ConfigError("eval.every needs eval.opponents to play against")
    if not config.ppo.kl_coeff >= 0:
        raise ConfigError(f"ppo.kl_coeff must be >= 0 (0: no KL penalty), got {config.ppo.kl_coeff}")
    if config.resources.env_runners < 0:
        raise ConfigError(f"resources.env_runners must be >= 0, got {config.resources.env_runners}")
    if r.sampler not in SAMPLERS:
        raise ConfigError(f"resources.sampler must be one of {', '.join(SAMPLERS)}, got {r.sampler!r}")
    if config.env.relabel != "none":
        if config.env.relabel not in spec.symmetries:
            offered = ", ".join(["none", *sorted(spec.symmetries)])
            raise ConfigError(f"env.relabel: {spec.name} has no relabelling {config.env.relabel!r}; give one of: "
                              f"{offered}")
        if r.sampler != "batched":
            raise ConfigError("env.relabel needs resources.sampler: batched (the per-game sampler plays the games "
                              "as dealt); give env.relabel: none or the batched sampler")
    # the same upper bounds as the SB3 config's (training.common.sections): a typo must not exhaust the machine
    bounded = {"seed": (config.seed, 0, MAX_SEED), "eval.seed": (config.eval.seed, 0, MAX_SEED),
               "eval.games": (config.eval.games, 0, MAX_GAMES), "eval.workers": (config.eval.workers, 1, MAX_WORKERS),
               "resources.num_cpus": (r.num_cpus, 1, MAX_WORKERS),
               "resources.env_runners": (r.env_runners, 0, MAX_WORKERS),
               "resources.envs_per_runner": (r.envs_per_runner, 1, MAX_ENVS),
               "resources.torch_threads": (r.torch_threads, 1, MAX_WORKERS),
               "ppo.train_batch": (config.ppo.train_batch, 1, MAX_ROLLOUT),
               "league.slots": (config.league.slots, 0, 1000)}
    for key, (value, lo, hi) in bounded.items():
        if not lo <= value <= hi:
            raise ConfigError(f"{key} must be from {lo} to {hi:,}, got {value}")
    stops = {"stop.minutes": config.stop.minutes, "stop.env_steps": config.stop.env_steps,
             "stop.learner_steps": config.stop.learner_steps, "stop.iterations": config.stop.iterations}
    for key, value in stops.items():
        if value < 0:
            raise ConfigError(f"{key} must be >= 0 (0: no such limit), got {value}")
    if not any(value > 0 for value in stops.values()):
        raise ConfigError(f"give at least one of {', '.join(stops)} (> 0)")
    if not config.model.hidden or not all(isinstance(h, int) and h > 0 for h in config.model.hidden):
        raise ConfigError(f"model.hidden must be a list of positive layer sizes, got {config.model.hidden!r}")
    if config.model.activation not in ("tanh", "relu"):
        raise ConfigError(f"model.activation must be 'tanh' or 'relu', got {config.model.activation!r}")
    _check_warm_start(config, spec)
    return config


def warm_start_policy(config: RLlibConfig) -> Any:
    """The warm start's file as a :class:`~keltis_env.policy.NumpyPolicy`; a file that is
    missing, unusable or for another game or number of players is a :class:`ConfigError`
    naming ``warm_start.file``."""
    from keltis_env.policy import PolicyLoadError, load_policy

    from ..common.config import find_file

    path = find_file(config.warm_start.file)
    if not path.is_file():
        raise ConfigError(f"warm_start.file: no policy file at {config.warm_start.file!r}")
    try:
        policy = load_policy(path)
        policy.info.check(config.env.game, config.env.num_players)
    except PolicyLoadError as exc:
        raise ConfigError(f"warm_start.file: {exc}") from None
    return policy


def check_warm_start_file(config: RLlibConfig) -> None:
    """The warm start's file is one the module can take (:mod:`training.rllib.warm_start`): no
    observation features (the adapter observes without them), the network of ``model``."""
    policy = warm_start_policy(config)
    info = policy.info
    if info.features:
        raise ConfigError(
            f"warm_start.file: {info.describe()} observing the features {', '.join(info.features)}; the RLlib "
            "environment adapter observes the game's encoder alone: warm-start from a file trained without "
            "env.features")
    activation = {"Tanh": "tanh", "ReLU": "relu"}.get(info.activation, info.activation)
    hidden = [int(w.shape[1]) for w, _ in policy.layers[:-1]]
    if hidden != list(config.model.hidden) or activation != config.model.activation:
        raise ConfigError(
            f"warm_start.file: {info.describe()} with hidden layers {hidden} ({activation}); model.hidden is "
            f"{list(config.model.hidden)} ({config.model.activation}): give the file's network")
    if policy.value_layers is not None:
        value_hidden = [int(w.shape[1]) for w, _ in policy.value_layers[:-1]]
        if value_hidden != hidden:
            raise ConfigError(f"warm_start.file: {info.describe()} whose value network's hidden layers are "
                              f"{value_hidden}, not its policy's {hidden}; the module's are the same sizes")


def _check_warm_start(config: RLlibConfig, game: Any) -> None:
    """The warm start's file fits the module (:func:`check_warm_start_file`), its sharpening is
    positive, ``model.symmetry`` is one of the game's and ``eval.warm_start`` has a file to play."""
    if config.model.symmetry and config.model.symmetry != "none" and config.model.symmetry not in game.symmetries:
        offered = ", ".join(sorted(game.symmetries)) or "none"
        raise ConfigError(f"model.symmetry: {game.name} has no relabelling {config.model.symmetry!r}; give none, "
                          f"empty (the warm start's) or one of: {offered}")
    if not config.warm_start.sharpen > 0:
        raise ConfigError(f"warm_start.sharpen must be > 0, got {config.warm_start.sharpen}")
    if not config.warm_start.anchor >= 0:
        raise ConfigError(f"warm_start.anchor must be >= 0 (0: no anchor), got {config.warm_start.anchor}")
    if config.warm_start.anchor_steps < 1:
        raise ConfigError(f"warm_start.anchor_steps must be >= 1, got {config.warm_start.anchor_steps}")
    if config.warm_start.anchor > 0 and not config.warm_start.file:
        raise ConfigError("warm_start.anchor needs a warm start to anchor to: set warm_start.file "
                          "(or warm_start.anchor: 0)")
    if config.warm_start.file:
        check_warm_start_file(config)
    elif config.eval.warm_start:
        raise ConfigError("eval.warm_start needs a warm start to play against: set warm_start.file "
                          "(or eval.warm_start: false)")


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> RLlibConfig:
    """The config in ``path`` (YAML, following ``base:``; every key optional; ``None``: the
    defaults) with ``key=value`` overrides."""
    config: RLlibConfig = load(RLlibConfig, path, overrides)
    return validate(config)


#: What ``--resume`` may change: everything else is the algorithm that the checkpoint holds.
RESUMABLE = ("stop", "eval", "resources", "checkpoint_every", "keep_checkpoints")


def load_resume_config(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RLlibConfig:
    """The config of the run in ``run_dir`` with ``overrides`` of :data:`RESUMABLE` keys only;
    a folder of another command's run (an SB3 run, expert iteration, a recipe...) is refused
    naming what it is and the command that resumes it."""
    run_dir = check_resume_folder(run_dir, "rllib")  # another command's run is named, with its resume
    for item in overrides:
        key = item.partition("=")[0]
        if key.split(".")[0] not in RESUMABLE:
            raise ConfigError(f"--resume cannot change {key!r} (the checkpoint holds the algorithm); "
                              f"it may change {', '.join(RESUMABLE)}")
    return load_config(run_dir / "config.yaml", overrides)


def describe() -> str:
    """Every key with its default (the comments in this file say what they mean)."""
    import yaml

    return yaml.safe_dump(RLlibConfig().to_dict(), sort_keys=False)
