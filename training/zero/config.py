"""The config of a run of expert iteration from zero (``python -m training.zero``): typed
sections loaded by the one config loader (:mod:`training.common.config`: ``base:``,
``--set key=value``), checked before anything is played; errors name the key and what is
allowed. ``python -m training.zero --describe`` prints every key with its default and
meaning.

Nothing in a run of this config may use a hand-written player: the search is
:class:`keltis_env.bots.gumbel.GumbelSearch` (the rules and the network), the observation
features must be computed from the rules alone (``plan``, the plan model's values, is
refused), and the bots of ``eval.opponents`` only score checkpoints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ..common.config import ConfigError, SavedConfig, load, option
from ..common.config import describe as describe_fields
from ..common.folders import check_resume_folder
from ..common.sections import MAX_GAMES, MAX_SEED, EnvConfig, check_augment, check_env, check_policy_file, check_specs
from ..imitate.config import NetworkConfig, check_network

#: observation features a run may not use: computed by a hand-written model of the game
HAND_WRITTEN_FEATURES = ("plan",)


@dataclass
class SearchSection:
    """The search that plays the self-play games (:class:`keltis_env.bots.gumbel.GumbelSearch`)."""

    simulations: int = option(16, "simulations a move (sequential halving's budget)", lo=1, hi=4096)
    top_k: int = option(8, "candidates searched at the root (Gumbel top-k)", lo=2, hi=256)
    c_visit: float = option(50.0, "sigma's c_visit", lo=0.0, lo_open=True)
    c_scale: float = option(0.1, "sigma's c_scale", lo=0.0, lo_open=True)
    depth: int = option(0, "moves of the searching seat the network plays on in a simulation before its value is read "
                           "(65 moves of all seats at most in a simulation: depth 64 is a rollout of up to 65 moves)",
                        lo=0, hi=64)
    q_range: float = option(0.2, "values are rescaled over at least this range (0.2: ten points of score margin)",
                            lo=0.0, lo_open=True)
    replies: str = option("sample", "the network's moves inside a simulation: drawn from its policy (sample) or its "
                                    "most likely move (best)", choices=("sample", "best"))
    temperature: float = option(1.0, "the temperature of the network's policy that replies=sample draws from (below 1: "
                                      "sharper, nearer its most likely move)", lo=0.0, lo_open=True, hi=100.0)


@dataclass
class SelfPlaySection:
    """The games of a generation: the search in every seat, every decision a sample."""

    games: int = option(256, "games a generation", lo=1, hi=MAX_GAMES)
    parallel: int = option(128, "games played side by side (one batch of the search)", lo=1, hi=4096)


@dataclass
class FitSection:
    """Fitting the network to the replay buffer after every generation."""

    buffer: int = option(200_000, "samples kept (the latest generations' decisions)", lo=1, hi=50_000_000)
    reuse: float = option(4.0, "each generation fits reuse x its new samples (minibatches of batch_size)",
                          lo=0.0, lo_open=True, hi=1000.0)
    batch_size: int = option(512, "minibatch size", lo=1, hi=1_000_000)
    learning_rate: float = option(1e-3, "Adam step size", lo=0.0, lo_open=True)
    weight_decay: float = option(1e-4, "Adam's weight decay (L2)", lo=0.0)
    value_coef: float = option(1.0, "weight of the value loss (MSE to the value target)", lo=0.0)
    search_value: float = option(0.0, "the value target: (1 - search_value) x the deciding seat's final score "
                                      "reward + search_value x the search's mean simulated value of the move it "
                                      "chose (0: the final reward alone)", lo=0.0, hi=1.0)
    augment: str = option("", "the game's relabellings every sample is shown under, one drawn at random each time it "
                              "is fitted (data augmentation, e.g. colours_affine; empty: none)")


@dataclass
class EvalSection:
    """Scoring checkpoints: the raw network against the bots, on selection deals (they never teach)."""

    every: int = option(200_000, "decisions of self-play between two evaluations (0: never)", lo=0)
    games: int = option(200, "games against each opponent (duplicate deals, seats rotated)", lo=0, hi=MAX_GAMES)
    opponents: list[str] = field(default_factory=lambda: ["heuristic", "planner"],
                                 metadata={"help": "agent specs the network is scored against"})
    seed: int = option(500, "selection deals' seed (the same deals every evaluation; reporting deals differ)",
                       lo=0, hi=MAX_SEED)
    workers: int = option(2, "processes playing the evaluations", lo=1, hi=64)


@dataclass
class ZeroConfig(SavedConfig):
    """One run of expert iteration from zero."""

    name: str = option("zero", "run name; the run folder is runs/NAME-TIMESTAMP unless --out is given")
    seed: int = option(0, "seed of the network's first weights, the games and the fits", lo=0, hi=MAX_SEED)
    decisions: int = option(20_000_000, "budget: self-play decisions of the whole run", lo=1)
    minutes: float = option(240.0, "budget: minutes of learning (self-play and fits, not evaluations; 0: none)",
                            lo=0.0)
    torch_threads: int = option(2, "torch threads", lo=1, hi=64)
    device: str = option("cpu", "where the network runs, in the search's batched calls and the fits: cpu, cuda (a "
                                "GPU through PyTorch; the games and the search's own work stay on the CPU) or auto "
                                "(cuda where PyTorch sees one). The files a run writes are the same on either",
                         choices=("cpu", "cuda", "auto"))
    first_layer: str = option(
        "dense", "how the network's first layers (the actor's and the critic's) are computed on the CPU, in the "
        "search's batched calls and the fits: dense (torch's product) or sparse (over each observation's non-zero "
        "inputs, in numba kernels: training.common.sparse); the same weights and files either way",
        choices=("dense", "sparse"))
    init: str = option("", "a policy file to start from (its network, features and value head); empty: random "
                           "weights of network", path=True)
    critic: str = option(
        "seat", "what the value head reads: seat (the deciding seat's observation) or full (the observation, then "
        "what the seat does not see: fitted on the self-play games' true hidden cards, read by the search on the "
        "hidden cards of each world it deals; training.common.critic). The actor reads the seat's view either way, "
        "and the files it writes hold the actor alone with full", choices=("seat", "full"))
    symmetry: str = option("", "the game's relabellings the policy files it writes play averaged over as bots (e.g. "
                               "colours_affine, as policies/keltis_2p.zip plays; keltis policy --symmetry); the search "
                               "and the fits read the network as it is. Empty: none")
    env: EnvConfig = field(default_factory=lambda: EnvConfig(reward="score", turn_cap="end"))
    network: NetworkConfig = field(default_factory=NetworkConfig)
    search: SearchSection = field(default_factory=SearchSection)
    selfplay: SelfPlaySection = field(default_factory=SelfPlaySection)
    fit: FitSection = field(default_factory=FitSection)
    eval: EvalSection = field(default_factory=EvalSection)


#: Keys a resumed run may change: its budgets, threads, where and how its network is computed
#: (the same weights and files; sums in another order) and its evaluation processes.
RESUMABLE = ("decisions", "minutes", "torch_threads", "device", "first_layer", "eval.workers")


def check(config: ZeroConfig) -> ZeroConfig:
    """The checks across keys (see the module)."""
    env = config.env
    game = check_env(env)
    check_network(config.network)
    if env.game != "keltis":
        raise ConfigError(f"env.game: the network-guided search has worlds for the card game only ('keltis'), "
                          f"got {env.game!r}")
    if env.reward != "score":
        raise ConfigError(f"env.reward: the search's values are score rewards; give score, got {env.reward!r}")
    used = sorted(set(env.features) & set(HAND_WRITTEN_FEATURES))
    if used and not config.init:
        raise ConfigError(f"env.features: {used[0]!r} is computed by a hand-written model of the game, which a run "
                          f"from zero may not use; the rules' own features are allowed (e.g. rows)")
    if config.init:
        check_policy_file(config.init, env, "init", value_head=True)
    if config.symmetry:
        check_augment(game, config.symmetry, "symmetry")
    if config.fit.augment:
        check_augment(game, config.fit.augment, "fit.augment")
        if config.critic == "full" and config.fit.augment != "none":
            raise ConfigError("fit.augment: the relabellings map the seat's observation, not the hidden block a "
                              "critic: full reads after it; give critic: seat or no fit.augment")
    check_specs(config.eval.opponents, env.game, env.num_players, "eval.opponents")
    check_device(config.device)
    if config.first_layer == "sparse" and config.device != "cpu":
        raise ConfigError(f"first_layer: sparse is computed on the CPU; with device {config.device} give dense")
    if config.selfplay.parallel > config.selfplay.games:
        raise ConfigError(f"selfplay.parallel ({config.selfplay.parallel}) must be at most selfplay.games "
                          f"({config.selfplay.games})")
    return config


def check_device(device: str) -> None:
    """:class:`ConfigError` where ``device`` is ``cuda`` and PyTorch sees no GPU."""
    if device != "cuda":
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(f"device: cuda, but PyTorch {torch.__version__} sees no GPU here (torch.cuda.is_available() "
                          "is False); give cpu, or auto to take a GPU only where there is one")


def torch_device(device: str) -> str:
    """The PyTorch device of the ``device`` key: ``auto`` is ``cuda`` where PyTorch sees a GPU."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> ZeroConfig:
    config: ZeroConfig = load(ZeroConfig, path, overrides)
    return check(config)


def load_resume_config(run_dir: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ZeroConfig:
    """The config of the run in ``run_dir`` with ``overrides`` of :data:`RESUMABLE` keys only."""
    run_dir = check_resume_folder(run_dir, "zero")
    for item in overrides:
        key = item.partition("=")[0].strip()
        if key not in RESUMABLE:
            raise ConfigError(f"--set {key}: a resumed run may change only {', '.join(RESUMABLE)} (its games and "
                              "networks depend on the rest)")
    config: ZeroConfig = load(ZeroConfig, Path(run_dir) / "config.yaml", overrides)
    return dataclasses.replace(check(config))


def describe() -> str:
    return describe_fields(ZeroConfig)


__all__ = ["HAND_WRITTEN_FEATURES", "RESUMABLE", "ZeroConfig", "check", "check_device", "describe", "load_config",
           "load_resume_config", "torch_device"]
