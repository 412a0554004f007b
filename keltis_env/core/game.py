"""The game descriptor and the one registry of games (standard library only).

Modelled on OpenSpiel's ``GameType``/``GameInfo``: a :class:`GameDescriptor` declares a
game's static facts (name, version, players, number of actions, score bounds, maximum
length) next to what the rest of the package needs to run it: the state factories, the
action codec, its bots, and, loaded only when asked for, its observation encoder and its
picture painter (numpy and Pillow stay out of an engine-only import).

Each game package registers its descriptor once (:func:`register_game`). Environments,
the learner view, evaluation, the CLI, bots and training find a game by its name
(:func:`get_game`); nothing else branches on which game it is.

Games of other distributions
----------------------------
The package's own games register themselves when ``keltis_env`` is imported. A game
shipped in another installed distribution is found through the Python entry-point group
``keltis_env.games`` (:data:`ENTRY_POINT_GROUP`): each entry point names either a
:class:`GameDescriptor` object or a module that registers one when imported, e.g. in the
distribution's ``pyproject.toml``::

    [project.entry-points."keltis_env.games"]
    toy = "keltis_toy.game:GAME"

The entry points are loaded once, on the first registry lookup (:func:`get_game`,
:func:`game_names`, :func:`game_for_env`, :func:`load_record`), after the games already
registered; one that fails to load raises a :class:`GamePluginError` naming it (the
lookup fails again, naming it again, until the distribution is fixed or removed). Such a
game then has everything a built-in game has: its environment
(``keltis_env.make_env(name)``), the bots every game has (:mod:`keltis_env.bots`), the
CLI, evaluation and training. :func:`register_game` stays the in-process hook (a game
defined in a script or a test).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import ConfigError, GamePluginError, RecordError
from .validation import as_integer

#: the entry-point group through which other distributions add games
ENTRY_POINT_GROUP = "keltis_env.games"


def load_object(target: str) -> Any:
    """``"package.module:attribute"`` -> that attribute, importing the module first."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class CompiledCore:
    """Where a game's compiled core lives (numba kernels, the ``fast`` extra): module names,
    imported only when a compiled path is asked for (:mod:`keltis_env.compiled`).

    * ``kernels``: one game as a row of integers: ``pack``/``unpack``, and the AEC
      backend's ``to_row``, ``from_row``, ``observer_args``, ``observe``, ``advance``, ``END``;
    * ``batch``: batches of rows: the learner batch's ``KERNELS``, deals from seeds, the
      observation ``FEATURES`` it computes, and the kernels that start, act in, advance,
      observe and settle games for the collector, RLlib and evaluation;
    * ``match``: whole games between the kernels' own players (evaluation), or ``None``;
    * ``worlds``: the network-guided search's worlds (:mod:`keltis_env.bots.gumbel`: sampled
      from a seat's view, played on by moves chosen outside), or ``None``.
    """

    kernels: str
    batch: str
    match: str | None = None
    worlds: str | None = None

    def module_name(self, part: str) -> str | None:
        """The module of ``part`` (``"kernels"``, ``"batch"``, ``"match"`` or ``"worlds"``), or ``None``."""
        if part not in ("kernels", "batch", "match", "worlds"):
            raise ValueError(f"a compiled core's parts are 'kernels', 'batch', 'match' and 'worlds', got {part!r}")
        name: str | None = getattr(self, part)
        return name


@dataclass(frozen=True)
class GameDescriptor:
    """Static facts of a game and the factories the package runs it with."""

    # -- identity (OpenSpiel's GameType)
    name: str  # registry name: "keltis", "dice"
    long_name: str
    env_name: str  # the PettingZoo environment: "keltis_v0"
    version: int  # bumped with any change of rules, observation or actions
    min_players: int
    max_players: int
    #: "imperfect" (hidden cards) or "perfect"; "deterministic" or "explicit_stochastic"
    information: str
    chance: str
    # -- sizes and bounds (OpenSpiel's GameInfo)
    num_actions: int
    min_score: int
    max_score: int
    #: config -> most decisions a game with these options can take (truncation included)
    max_game_length: Callable[[Any], int]
    # -- engine
    config_cls: Any  # GameConfig: (num_players=..., **options), .to_dict(), .from_dict()
    state_cls: Any  # GameState: .new_game(config, seed), .from_dict(dict)
    record_cls: Any  # GameRecord subclass of keltis_env.core.record.Record
    action_to_string: Callable[[int], str]
    string_to_action: Callable[[str], int]
    action_ranges: Mapping[str, tuple[int, int]]
    #: (state, seat) -> zero-copy view with a PlayerView's fields (encoders and read-only bots)
    live_view: Callable[[Any, int], Any]
    #: (view, random.Random) -> a full state consistent with the view (determinisation)
    sample_state: Callable[[Any, Any], Any]
    board_text: Callable[..., str]
    # -- loaded on demand ("module:attribute")
    encoder: str  # num_players -> encoder with .size, .segments, .encode(view), .mask(legal)
    painter: str | None = None  # (state, **options) -> (H, W, 3) uint8 picture
    #: the game's own bots: name -> "module:attribute" of a factory(seed=..., **options) -> Bot.
    #: The bots every game has (random, ppo, rllib) are not listed here; they and these are
    #: looked up together by :func:`keltis_env.bots.make_bot` and ``bot_names``.
    bots: Mapping[str, str] = field(default_factory=dict)
    #: optional observation feature name -> "module:attribute" of a factory(num_players) ->
    #: :class:`~keltis_env.core.features.Feature` (for learners; see that module)
    features: Mapping[str, str] = field(default_factory=dict)
    obs_low: float = -1.0
    obs_high: float = 2.0
    #: (state, seat) -> that seat's hidden hand as one line, shown to a person playing the
    #: game (``keltis play``); None for a game without hidden hands
    hand_text: Callable[[Any, int], str] | None = None
    #: "module:attribute" of the game's explicit-chance model (:mod:`keltis_env.core.chance`),
    #: which OpenSpiel needs (:mod:`keltis_env.integrations.openspiel`); None for a game without one
    chance_model: str | None = None
    #: relabelling name -> "module:attribute" of a factory(num_players, features) ->
    #: :class:`~keltis_env.core.symmetry.Symmetry` (the card game's ``colours``); see that module
    symmetries: Mapping[str, str] = field(default_factory=dict)
    #: the game's compiled core (:class:`CompiledCore`), or None for a game that runs on its
    #: Python engine alone: the one place that says whether and where a game has kernels
    compiled: CompiledCore | None = None
    #: "module:attribute" of a factory(num_players) -> encoder of what a seat does not see
    #: (``.size``, ``.encode(state, seat, out)``), for critics that read it in training only
    #: (:mod:`training.common.critic`); None for a game that hides nothing
    privileged: str | None = None
    #: the page of the game's environment whose generated tables (observation, actions)
    #: ``keltis docs`` keeps current, relative to the repository root (``docs/keltis_v0.md``);
    #: None for a game without one (a plugin documents itself)
    docs_page: str | None = None

    # ------------------------------------------------------------------ factories
    def make_config(self, num_players: int = 2, **options: Any) -> Any:
        """The game's options; a wrong player count names the allowed range."""
        n = as_integer(num_players)
        if n is None or not self.min_players <= n <= self.max_players:
            raise ConfigError(
                f"{self.name} is for {self.min_players} to {self.max_players} players, got num_players={num_players!r}"
            )
        return self.config_cls(num_players=n, **options)

    def option_names(self) -> list[str]:
        """The keyword options :meth:`make_config` takes besides ``num_players``."""
        return [name for name in getattr(self.config_cls, "__dataclass_fields__", {}) if name != "num_players"]

    def new_state(self, config: Any, seed: int) -> Any:
        return self.state_cls.new_game(config, seed)

    def state_from_dict(self, data: Mapping[str, Any]) -> Any:
        return self.state_cls.from_dict(data)

    def make_encoder(self, num_players: int, features: Sequence[str] | None = ()) -> Any:
        """The observation encoder for ``num_players`` (imports numpy), with the named
        optional ``features`` appended (:mod:`keltis_env.core.features`)."""
        names = self.check_features(features)
        base = load_object(self.encoder)(num_players)
        if not names:
            return base
        from .features import FeatureEncoder

        return FeatureEncoder(base, [load_object(self.features[name])(num_players) for name in names])

    def make_privileged(self, num_players: int) -> Any:
        """The encoder of what a seat of ``num_players`` does not see (:attr:`privileged`); a
        ``ValueError`` for a game that hides nothing."""
        if self.privileged is None:
            raise ValueError(f"the game {self.name!r} hides nothing from its seats ({self.information} information): "
                             "a critic that reads hidden information has nothing to read")
        return load_object(self.privileged)(num_players)

    def check_features(self, features: Sequence[str] | None) -> tuple[str, ...]:
        """``features`` as a tuple of this game's feature names; a ``ValueError`` names an
        unknown one and lists the game's features."""
        from .features import check_features

        return check_features(features, self.features, self.name)

    def make_symmetry(self, name: str, num_players: int, features: Sequence[str] | None = ()) -> Any:
        """The game's relabellings ``name`` (:mod:`keltis_env.core.symmetry`, imports numpy) of
        the observation of ``num_players`` with ``features``; a ``ValueError`` names an unknown
        one and lists the game's."""
        if name not in self.symmetries:
            offered = ", ".join(sorted(self.symmetries)) or "none"
            raise ValueError(f"the game {self.name!r} has no relabelling {name!r}; its relabellings: {offered}")
        return load_object(self.symmetries[name])(num_players, self.check_features(features))

    def compiled_module(self, part: str = "batch") -> ModuleType | None:
        """The module of ``part`` (``"kernels"``, ``"batch"``, ``"match"`` or ``"worlds"``) of the game's
        compiled core, imported now, or ``None`` where the descriptor declares none. Without
        numba the kernels' one-line ``ImportError`` naming the extra is raised."""
        if self.compiled is None:
            return None
        name = self.compiled.module_name(part)
        return None if name is None else importlib.import_module(name)

    @property
    def has_pictures(self) -> bool:
        return self.painter is not None

    def board_image(self, state: Any, **options: Any) -> Any:
        """The picture of ``state`` as an (H, W, 3) uint8 array (imports Pillow)."""
        if self.painter is None:
            raise NotImplementedError(f"the game {self.name!r} draws no picture")
        return load_object(self.painter)(state, **options)


_GAMES: dict[str, GameDescriptor] = {}


def register_game(game: GameDescriptor) -> GameDescriptor:
    """Add a game to the registry (once: a second descriptor under the same name is refused)."""
    known = _GAMES.get(game.name)
    if known is not None and known is not game:
        raise ValueError(f"a game named {game.name!r} is already registered")
    _GAMES[game.name] = game
    return game


_plugins_loaded = False


def load_plugins() -> None:
    """Register the games of the entry-point group :data:`ENTRY_POINT_GROUP` (once; every
    registry lookup calls this). A failing entry point raises :class:`GamePluginError`."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True  # a plugin that looks games up while it loads must not recurse
    from importlib.metadata import entry_points

    try:
        for point in entry_points(group=ENTRY_POINT_GROUP):
            _load_plugin(point)
    except GamePluginError:
        _plugins_loaded = False  # every lookup names the broken entry point, not only the first
        raise


def _load_plugin(point: Any) -> None:
    where = f"the game entry point {point.name!r} = {point.value!r} (group {ENTRY_POINT_GROUP!r}"
    dist = getattr(point, "dist", None)
    where += f", distribution {dist.name!r})" if dist is not None else ")"
    try:
        loaded = point.load()
    except Exception as exc:
        raise GamePluginError(f"{where} failed to load: {type(exc).__name__}: {exc}") from exc
    if isinstance(loaded, GameDescriptor):
        try:
            register_game(loaded)
        except ValueError as exc:
            raise GamePluginError(f"{where}: {exc}") from None
    elif not isinstance(loaded, ModuleType):
        raise GamePluginError(f"{where} names a {type(loaded).__name__}; it must name a GameDescriptor or a module "
                              "that registers one")


def get_game(name: str | GameDescriptor) -> GameDescriptor:
    """The registered game called ``name`` (a descriptor is returned as it is)."""
    if isinstance(name, GameDescriptor):
        return name
    load_plugins()
    try:
        return _GAMES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown game {name!r}; games are {', '.join(_GAMES)}") from None


def game_for_env(name: str | GameDescriptor) -> GameDescriptor:
    """The registered game whose registry name or environment name (``env_name``) is
    ``name``: ``"keltis"`` and ``"keltis_v0"`` name the same game."""
    if isinstance(name, GameDescriptor):
        return name
    load_plugins()
    if name in _GAMES:
        return _GAMES[name]
    for game in _GAMES.values():
        if game.env_name == name:
            return game
    known = ", ".join(f"{g.name} ({g.env_name})" for g in _GAMES.values())
    raise ValueError(f"unknown game or environment {name!r}; games (environments) are {known}")


def game_names() -> list[str]:
    """The registered games' names, in registration order (the package's own first)."""
    load_plugins()
    return list(_GAMES)


def load_record(source: str | Path | Mapping[str, Any]) -> Any:
    """A game record of any registered game, from a JSON file or a dict (its ``"game"``
    field names the game)."""
    if isinstance(source, Mapping):
        data = source
    else:
        from .record import read_record_json

        data = read_record_json(source)  # bounded: a regular file, of limited size
    if not isinstance(data, Mapping):
        raise RecordError("a game record must be a JSON object")
    name = data.get("game", "keltis")
    load_plugins()
    if not isinstance(name, str) or name not in _GAMES:
        raise RecordError(f"unknown game {name!r} in the record's 'game' field; games are {', '.join(_GAMES)}")
    try:
        return _GAMES[name].record_cls.from_dict(data)
    except RecursionError:
        raise RecordError("not a game record: it is nested too deeply") from None


__all__ = [
    "ENTRY_POINT_GROUP",
    "CompiledCore",
    "GameDescriptor",
    "GamePluginError",
    "game_for_env",
    "game_names",
    "get_game",
    "load_object",
    "load_plugins",
    "load_record",
    "register_game",
]
