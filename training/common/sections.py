"""What the configs of every training job share: the game section (``env``), the bounds of
their counts, and the checks of a game, its options and features, an agent spec and a
relabelling, each naming the key at fault and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .config import ConfigError, option

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
#: the most decisions or env steps a step count of a run may name (``total_timesteps``, the
#: periods of checkpoints, snapshots and evaluations): a trillion, years of training
MAX_STEPS = 10**12
#: the longest game cap (``env.max_turns``): the compiled kernels keep it in 32 bits
MAX_TURNS = 2**31 - 1
#: the widest hidden layer and the most hidden layers of a network (``network.net_arch``)
MAX_LAYER_WIDTH = 65_536
MAX_LAYERS = 64


def help_(text: str) -> dict[str, str]:
    """A field's metadata holding only its help (for fields with a default factory)."""
    return {"help": text}


@dataclass
class EnvConfig:
    """The game the learner plays (see ``keltis_env.envs.learner``)."""

    game: str = option("keltis", "the game, by its registry name (keltis_env.core.game.game_names())")
    num_players: int = option(2, "players per game (within the game's range)", lo=1)
    reward: str = option("win", "the reward: win (+1/0/-1 at the end), score (score margin / 50 at the end) or "
                         "shaped (after every action, the change of the score margin / 50: sums to score)",
                         choices=("win", "score", "shaped"))
    max_turns: int = option(500, "a game is truncated after this many turns (R8, R11)", lo=1, hi=MAX_TURNS)
    turn_cap: str = option("truncate", "a game cut at max_turns ends the learner's episode as truncate (the value "
                           "of the cut position bootstrapped) or end (terminated at the standings)",
                           choices=("truncate", "end"))
    options: dict[str, Any] = field(
        default_factory=dict,
        metadata=help_("the game's other options, e.g. {tile_layout: random} (keltis) or {bonus_layout: random} "
                       "(dice)"),
    )
    features: list[str] = field(
        default_factory=list,
        metadata=help_("optional observation features appended to the learner's observation, e.g. [plan] "
                       "(keltis: the plan model's action values) or [rows] (keltis: what the rules make of each "
                       "card on each row, from the observation itself; keltis_env.core.features); the policy "
                       "file records them"),
    )

    def game_options(self) -> dict[str, Any]:
        """The keyword options of the game's config (``max_turns`` and ``options``)."""
        return {"max_turns": self.max_turns, **self.options}


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


def check_env(env: EnvConfig) -> GameDescriptor:
    """The game of ``env`` exists, takes its players, ``env.options`` and ``env.features``;
    its descriptor."""
    from keltis_env.core.errors import KeltisError

    game = check_game_players(env.game, env.num_players)
    try:
        game.make_config(num_players=env.num_players, **env.game_options())
    except (KeltisError, TypeError, ValueError) as exc:
        options = ", ".join(name for name in game.option_names() if name != "max_turns")
        raise ConfigError(f"env.options: {exc} (options of {game.name}: {options})") from None
    try:
        game.check_features(env.features)
    except ValueError as exc:
        raise ConfigError(f"env.features: {exc}") from None
    return game


def check_augment(game: GameDescriptor, augment: str, field: str) -> None:
    """A fit's ``augment`` names one of the game's relabellings (or none)."""
    if augment != "none" and augment not in game.symmetries:
        offered = ", ".join(sorted(game.symmetries))
        raise ConfigError(f"{field}: the game {game.name!r} has no relabelling {augment!r}; "
                          + (f"give none or one of: {offered}" if offered else "it has none: give none"))


def check_specs(specs: list[str], game: str, num_players: int, field: str = "") -> None:
    """Every agent spec is valid for ``game`` (:func:`keltis_env.bots.check_spec`); ``field``
    (e.g. ``eval.opponents``) names where the specs come from in the messages."""
    from keltis_env.bots import check_spec

    for spec in dict.fromkeys(specs):
        try:
            check_spec(spec, game, num_players)
        except ValueError as exc:
            raise ConfigError(f"{field}: {exc}" if field else str(exc)) from None


def check_policy_file(path: str, env: EnvConfig, field: str, value_head: bool = False) -> None:
    """``path`` is a policy file for the game, players and features of ``env`` (with
    ``value_head``: its value head estimates ``env.reward``)."""
    from pathlib import Path

    from keltis_env.policy import PolicyLoadError, read_policy_info

    if not Path(path).is_file():
        raise ConfigError(f"{field}: no policy file at {path!r}")
    try:
        info = read_policy_info(path)
        info.check(env.game, env.num_players)
    except PolicyLoadError as exc:
        raise ConfigError(f"{field}: {exc}") from None
    if value_head and info.value_target != env.reward:
        raise ConfigError(f"{field}: {info.describe()} whose value head estimates the {info.value_target!r} reward; "
                          f"env.reward is {env.reward!r}: give the same (the value head is fitted to env.reward)")
    if list(info.features) != list(env.features):
        raise ConfigError(f"{field}: {info.describe()}, trained with observation features {list(info.features)}; "
                          f"env.features is {list(env.features)}: give the same")


__all__ = ["MAX_ENVS", "MAX_GAMES", "MAX_ROLLOUT", "MAX_SEED", "MAX_WORKERS", "EnvConfig", "check_augment", "check_env",
           "check_game_players", "check_policy_file", "check_specs", "help_"]
