"""The configs of imitation: recording a teacher's decisions (:class:`RecordConfig`),
fitting a policy to them (:class:`FitConfig`), and ``python -m training.imitate``'s own
config (:class:`ImitateConfig`), loaded by the one config loader
(:mod:`training.common.config`). The SB3 run (``record`` and ``fit`` sections) and expert
iteration (its ``fit`` section) hold the same sections: one name per knob."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from ..common.config import ConfigError, load, option
from ..common.config import describe as describe_fields
from ..common.sections import (
    MAX_GAMES,
    MAX_LAYER_WIDTH,
    MAX_LAYERS,
    MAX_SEED,
    MAX_WORKERS,
    EnvConfig,
    check_augment,
    check_env,
    check_policy_file,
    check_specs,
    help_,
)


@dataclass
class RecordConfig:
    """A teacher's games recorded, the teacher in every seat (:mod:`training.imitate.record`)."""

    teacher: str = option("", "agent spec whose decisions are recorded and imitated (empty: no teacher)")
    games: int = option(1000, "teacher games recorded (the teacher in every seat)", lo=1, hi=MAX_GAMES)
    dagger_rounds: int = option(0, "DAgger rounds after the first fit (the policy plays, the teacher labels)", lo=0,
                                hi=1000)
    dagger_games: int = option(2000, "games recorded per DAgger round", lo=1, hi=MAX_GAMES)
    target_temperature: float = option(
        0.0, "> 0: record softmax(teacher's action values / this) as the policy target where the teacher gives "
        "values (planner, ismcts; values in points), beside its move; 0: its move alone", lo=0.0)


@dataclass
class FitConfig:
    """Fitting a policy (and its value head) to recorded decisions (:mod:`training.imitate.fit`)."""

    epochs: int = option(4, "passes over the recorded decisions", lo=1, hi=1000)
    batch_size: int = option(1024, "minibatch size", lo=1, hi=1_000_000)
    learning_rate: float = option(1e-3, "Adam step size", lo=0.0, lo_open=True)
    lr_schedule: str = option(
        "constant", "constant, or linear: the step size decays to 0 over the fit's minibatches (each fit of a DAgger "
        "round decays anew)", choices=("constant", "linear"))
    value_coef: float = option(0.5, "weight of the value loss (MSE to the final reward of the deciding seat)", lo=0.0)
    target_temperature: float | None = option(
        None, "the policy targets fitted: null as recorded; 0 the teacher's moves alone; T > 0 softmax(value / T), "
        "re-tempered from the recording's targets", lo=0.0)
    augment: str = option(
        "none", "show each fitted decision under a random one of the game's relabellings (colours: the card game's "
        "120 colour relabellings, keltis_env.games.keltis.symmetry); none: as recorded")
    select_by: str = option(
        "", "agent spec: after each epoch the fitted policy plays select_games games against it on selection deals, "
        "and the fit ends with the weights of the epoch that won most (empty: the last epoch's)")
    select_games: int = option(1000, "games per epoch when select_by is set (rounded up to whole deals)", lo=1,
                               hi=MAX_GAMES)


@dataclass
class NetworkConfig:
    """The policy and value networks (an MLP each, as SB3's MaskablePPO builds them)."""

    net_arch: list[int] = field(default_factory=lambda: [256, 256],
                                metadata=help_("hidden layer sizes of the policy and value networks"))
    activation: str = option("tanh", "hidden activation", choices=("tanh", "relu"))


def check_network(network: NetworkConfig, key: str = "network.net_arch") -> None:
    """The hidden layers a run can build: at least one, at most :data:`MAX_LAYERS` of at most
    :data:`MAX_LAYER_WIDTH` units, whose weights with their gradients and Adam's two moments
    (four float32 copies of the policy's and the value network's) fit in half of this
    machine's memory. A network too large is refused here, before a run folder is made,
    not by torch when it asks for the memory."""
    arch = network.net_arch
    if not arch:
        raise ConfigError(f"{key} must list at least one hidden layer size, e.g. [256, 256]")
    if len(arch) > MAX_LAYERS:
        raise ConfigError(f"{key} has {len(arch)} hidden layers; a network may have at most {MAX_LAYERS}")
    widest = max(arch)
    if widest > MAX_LAYER_WIDTH:
        raise ConfigError(f"{key} asks for a layer of {widest:,} units; a hidden layer may have at most "
                          f"{MAX_LAYER_WIDTH:,}")
    per_network = sum(a * b for a, b in itertools.pairwise(arch)) + sum(arch) + arch[-1]
    needed = 2 * per_network * 4 * 4  # policy and value networks; weights, gradients, Adam's moments
    memory = _machine_memory()
    if memory is not None and needed > memory // 2:
        raise ConfigError(f"{key} {arch} needs about {needed / 2**30:,.1f} GiB for its weights, gradients and "
                          f"optimiser state; this machine has {memory / 2**30:,.1f} GiB of memory, of which a "
                          "network may take half: use smaller layers")


def _machine_memory() -> int | None:
    """This machine's physical memory in bytes, ``None`` where the system does not say."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


@dataclass
class ImitateConfig:
    """``python -m training.imitate``: record a teacher's games, fit a policy or a value head."""

    seed: int = option(0, "seed of the recorded games and of the fit: 0 to 2**32 - 1", lo=0, hi=MAX_SEED)
    workers: int = option(2, "processes recording games (1: in this process)", lo=1, hi=MAX_WORKERS)
    torch_threads: int = option(1, "torch threads of the fit", lo=1, hi=MAX_WORKERS)
    init: str = option("", "a policy file the fit starts from (empty: new weights); `value` fits its value head",
                       path=True)
    env: EnvConfig = field(default_factory=EnvConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)
    record: RecordConfig = field(default_factory=RecordConfig)
    fit: FitConfig = field(default_factory=FitConfig)


#: Keys of ``python -m training.imitate`` configs written before the configs of imitation
#: had their own sections (they were a training run's), and what they are now.
RENAMED = {
    "pretrain.init": "init",
    "pretrain.teacher": "record.teacher",
    "pretrain.games": "record.games",
    "pretrain.dagger_rounds": "record.dagger_rounds",
    "pretrain.dagger_games": "record.dagger_games",
    "pretrain.soft_temperature": "record.target_temperature (recording) or fit.target_temperature (fit)",
    "pretrain.workers": "workers",
    "pretrain.epochs": "fit.epochs",
    "pretrain.batch_size": "fit.batch_size",
    "pretrain.learning_rate": "fit.learning_rate",
    "pretrain.value_coef": "fit.value_coef",
    "pretrain.augment": "fit.augment",
    "ppo.net_arch": "network.net_arch",
    "ppo.activation": "network.activation",
}


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> ImitateConfig:
    """The config in the YAML file ``path`` (following ``base:``; ``None``: every default),
    then ``overrides``, checked."""
    config: ImitateConfig = load(ImitateConfig, path, overrides, renamed=RENAMED)
    check(config)
    return config


def check(c: ImitateConfig) -> None:
    """The checks that involve several keys: the game, its options and features, the teacher,
    the relabelling, and ``init`` a policy file of the same game, players and features."""
    game = check_env(c.env)
    check_augment(game, c.fit.augment, "fit.augment")
    check_network(c.network)
    if c.record.teacher:
        check_specs([c.record.teacher], c.env.game, c.env.num_players, field="record.teacher")
        if c.record.target_temperature > 0:
            check_teacher_values(c.record.teacher, c.env.game, "record.target_temperature")
    check_select(c.fit, c.env)
    if c.init:
        check_policy_file(c.init, c.env, "init")


def check_select(fit: FitConfig, env: EnvConfig) -> None:
    """``fit.select_by``: an agent spec of the game, when set."""
    if fit.select_by:
        check_specs([fit.select_by], env.game, env.num_players, field="fit.select_by")


def check_teacher_values(spec: str, game: str, field: str) -> None:
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
        raise ConfigError(f"{field} > 0 needs a teacher that gives action values; {name!r} gives only its move "
                          f"(teachers with values in {game}: {', '.join(with_values) or 'none'}); set {field} to 0")


def describe() -> str:
    """Every key with its default and help (``python -m training.imitate --describe``)."""
    return describe_fields(ImitateConfig)


__all__ = ["RENAMED", "FitConfig", "ImitateConfig", "NetworkConfig", "RecordConfig", "check", "check_network",
           "check_select",
           "check_teacher_values", "describe", "load_config"]
