"""Every game of the registry as an OpenSpiel game (the ``openspiel`` extra, Python 3.11+).

Importing this module registers, through ``pyspiel.register_game``, each registered game
that declares an explicit-chance model (``GameDescriptor.chance_model``; both of the
package's games do, a game without one is left out), named ``python_`` plus its
environment name without the version: ``python_keltis`` and ``python_keltis_dice``::

    import pyspiel
    import keltis_env.integrations.openspiel  # registers the games
    game = pyspiel.load_game("python_keltis(players=3)")

Parameters: ``players`` (2 to 4, default 2), ``reward`` (``"win"``, the default, or
``"score"``, as in the environments, :mod:`keltis_env.core.rewards`) and the game's
options whose values are numbers or words (``tile_layout`` / ``bonus_layout``:
``"default"`` or ``"random"``; ``max_turns``).

What OpenSpiel sees:

* **Chance**: every random event is an explicit chance node with its exact probabilities
  (the game's ``chance`` module: the set-up, every draw from the pile, every roll). The
  dice game then hides nothing and is declared perfect information.
* **Observations**: the observation tensor is the game's encoding, the same vector as the
  AEC environment's ``observation`` for the same position and seat (its named segments
  are the observation's ``dict``); the observation string lists the seat's view; the
  information-state string has perfect recall: every decision and every chance event in
  order, an event hidden from the seat shown only by its public part ("deal a card to
  player 1"). No information-state tensor.
* **Resampling**: ``resample_from_infostate`` deals the hidden cards anew with the game's
  ``sample_state`` from the seat's view, so the sample never holds what the view hides;
  its history of events keeps the seat's own information and only the public part of the
  rest. :func:`resampler` gives the same as a seeded callback for ``ISMCTSBot.set_resampler``.
* **Utility**: terminal rewards from the final scores. ``"win"`` is zero-sum with 2
  players and general-sum with more; ``"score"`` is zero-sum for any number of players.

Bots: :class:`EngineBot` plays any of our bots (``make_bot`` specs: ``heuristic``,
``ismcts``, ``ppo:PATH``) as a ``pyspiel.Bot``; :func:`ismcts_bot` and :func:`mcts_bot`
make OpenSpiel's Python search bots ready for ``evaluate_bots`` (seeded; MCTS searches a
world resampled from the acting seat's information).

``python -m keltis_env.integrations.openspiel`` plays the search bots against random
play and our ``heuristic`` (strength figures); ``keltis bench --loops aec openspiel``
measures random play.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

import numpy as np
import pyspiel

from keltis_env.core.chance import EVERYONE, NOBODY
from keltis_env.core.game import GameDescriptor, game_names, get_game, load_object
from keltis_env.core.rewards import REWARD_MODES, SCORE_SCALE, TERMINAL_MODES, check_reward_mode, final_rewards
from keltis_env.core.validation import as_finite, as_integer

#: the games registered with OpenSpiel: OpenSpiel name -> our game's registry name
GAMES: dict[str, str] = {}
#: the parameters every game takes besides its own options (``players`` defaults to the
#: game's fewest players)
COMMON_PARAMETERS = {"players": 2, "reward": "win"}


def openspiel_name(game: str | GameDescriptor) -> str:
    """``python_`` + the environment name without its version: ``keltis_v0`` -> ``python_keltis``."""
    return "python_" + re.sub(r"_v\d+$", "", get_game(game).env_name)


def _options(game: GameDescriptor) -> dict[str, Any]:
    """Every parameter of the game with its default: the common ones, then the game's
    options that OpenSpiel parameters can carry (numbers, words, flags)."""
    fields = {f.name: f for f in dataclasses.fields(game.config_cls)}
    out: dict[str, Any] = {**COMMON_PARAMETERS, "players": game.min_players}
    for name in game.option_names():
        default = fields[name].default
        if isinstance(default, (bool, int, float, str)):
            out[name] = default
    return out


def _game_type(game: GameDescriptor, num_players: int, reward: str) -> pyspiel.GameType:
    zero_sum = reward == "score" or num_players == 2
    return pyspiel.GameType(
        short_name=openspiel_name(game),
        long_name=f"{game.long_name} (Python)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        # explicit chance leaves hidden only what a game's views hide
        information=(pyspiel.GameType.Information.PERFECT_INFORMATION if game.information == "perfect"
                     else pyspiel.GameType.Information.IMPERFECT_INFORMATION),
        utility=pyspiel.GameType.Utility.ZERO_SUM if zero_sum else pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=game.max_players,
        min_num_players=game.min_players,
        provides_information_state_string=True,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=_options(game),
    )


class SpielGame(pyspiel.Game):
    """One of our games as a ``pyspiel.Game`` (made by ``pyspiel.load_game``)."""

    descriptor: GameDescriptor  # set by each game's subclass (see register_games)

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        descriptor = self.descriptor
        params = dict(params or {})
        options = _options(descriptor)
        unknown = sorted(set(params) - set(options))
        if unknown:
            raise ValueError(f"{openspiel_name(descriptor)} has no parameter {unknown[0]!r}; "
                             f"its parameters are {', '.join(options)}")
        options.update(params)
        reward = check_reward_mode(options.pop("reward"))
        if reward not in TERMINAL_MODES:  # OpenSpiel's games here pay at the end (RewardModel.TERMINAL)
            raise ValueError(f"reward {reward!r} pays after every action; an OpenSpiel game of this package pays at "
                             f"the end: give one of {', '.join(map(repr, TERMINAL_MODES))} ('score' is what "
                             "'shaped' sums to)")
        players = options.pop("players")
        self.config = descriptor.make_config(num_players=players, **options)
        self.reward = reward
        self.chance_cls = load_object(descriptor.chance_model or "")
        n = self.config.num_players
        if reward == "win":
            low, high = -1.0, 1.0
        else:
            high = (descriptor.max_score - descriptor.min_score) / SCORE_SCALE
            low = -high
        info = pyspiel.GameInfo(
            num_distinct_actions=descriptor.num_actions,
            max_chance_outcomes=self.chance_cls.max_outcomes(self.config),
            num_players=n,
            min_utility=low,
            max_utility=high,
            utility_sum=0.0 if reward == "score" or n == 2 else None,
            max_game_length=descriptor.max_game_length(self.config),
        )
        super().__init__(_game_type(descriptor, n, reward), info, {"players": n, "reward": reward, **options})

    def new_initial_state(self, *_: Any) -> SpielState:
        return SpielState(self)

    def max_chance_nodes_in_history(self) -> int:
        return int(self.chance_cls.max_nodes(self.config))

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> Observer:
        return Observer(self, iig_obs_type, params)


class _Play:
    """Everything a state holds, in one object that copies itself quickly (OpenSpiel
    clones a Python state by deep-copying its attributes)."""

    __slots__ = ("chance", "descriptor", "log", "reward")

    def __init__(self, descriptor: GameDescriptor, chance: Any, reward: str, log: list[tuple[int, str, str]]):
        self.descriptor = descriptor
        self.chance = chance
        self.reward = reward
        #: every decision and chance event: (seen_by, public text, full text)
        self.log = log

    def __deepcopy__(self, memo: Any) -> _Play:
        return _Play(self.descriptor, self.chance.clone(), self.reward, self.log[:])

    def __getstate__(self) -> dict[str, Any]:
        # a clone holds no cached chance node (its outcome texts are functions)
        return {"game": self.descriptor.name, "chance": self.chance.clone(), "reward": self.reward, "log": self.log}

    def __setstate__(self, data: dict[str, Any]) -> None:
        self.descriptor = get_game(data["game"])
        self.chance, self.reward, self.log = data["chance"], data["reward"], data["log"]


class SpielState(pyspiel.State):
    """A position of one of our games for OpenSpiel: the game's chance model around its
    engine state (see the module documentation)."""

    def __init__(self, game: SpielGame) -> None:
        super().__init__(game)
        self._play = _Play(game.descriptor, game.chance_cls(game.config), game.reward, [])

    @property
    def engine_state(self) -> Any:
        """Our engine state (``None`` while the set-up's chance events are pending); read it,
        do not change it."""
        return self._play.chance.state

    # ------------------------------------------------------------------ the tree
    def current_player(self) -> int:
        chance = self._play.chance
        if chance.node() is not None:
            return int(pyspiel.PlayerId.CHANCE)
        state = chance.state
        return int(pyspiel.PlayerId.TERMINAL) if state.is_over else int(state.current)

    def is_terminal(self) -> bool:
        chance = self._play.chance
        return chance.node() is None and chance.state.is_over

    def _legal_actions(self, player: int) -> list[int]:
        return list(self._play.chance.state.legal_actions())

    def chance_outcomes(self) -> list[tuple[int, float]]:
        node = self._play.chance.node()
        return [] if node is None else list(node.outcomes.items())

    def _apply_action(self, action: int) -> None:
        play = self._play
        chance = play.chance
        node = chance.node()
        if node is not None:
            text = chance.apply_outcome(int(action))
            play.log.append((node.seen_by, node.what, text))
        else:
            player = chance.state.current
            chance.apply_action(int(action))
            play.log.append((EVERYONE, "", f"player {player}: {play.descriptor.action_to_string(action)}"))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            node = self._play.chance.node()
            if node is not None and action in node.outcomes:
                return str(node.outcome_text(action))
            return f"chance outcome {action}"
        return str(self._play.descriptor.action_to_string(action))

    def returns(self) -> list[float]:
        play = self._play
        if not self.is_terminal():
            return [0.0] * self.num_players()
        return final_rewards(play.chance.state.scores(), play.reward)

    def __str__(self) -> str:
        play = self._play
        state = play.chance.state
        node = play.chance.node()
        if state is None:
            lines = [text for _, _, text in play.log]
            return "\n".join(["setting up:", *lines, f"next: {node.what}" if node else ""])
        text = play.descriptor.board_text(state)
        return f"{text}\nchance: {node.what}" if node is not None else text

    # ------------------------------------------------------------------ information
    def information_state_text(self, player: int) -> str:
        """The perfect-recall information of ``player``: every decision and chance event in
        order, an event hidden from the seat by its public part only, then the seat's view."""
        lines = [f"player {player}"]
        for seen_by, public, text in self._play.log:
            lines.append(text if seen_by in (EVERYONE, player) else public)
        # What the seat knows now, too: in a resampled state the history of another seat's
        # hidden events is lost, and its current view keeps its information state honest
        # (the seat's legal actions follow from it).
        state = self._play.chance.state
        if state is not None:
            lines.append(view_text(state.view(player)))
        return "\n".join(lines)

    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]) -> SpielState:
        """A state consistent with everything ``player_id`` knows, the hidden cards dealt
        anew (the game's ``sample_state``); ``probability_sampler()`` seeds the draw."""
        return self.resampled(player_id, random.Random(int(probability_sampler() * 2**53)))

    def resampled(self, player: int, rng: random.Random) -> SpielState:
        """:meth:`resample_from_infostate` with a ``random.Random``."""
        play = self._play
        state = play.chance.state
        if state is None:
            raise ValueError("no position to resample yet: the set-up's chance events are pending")
        if not 0 <= player < state.num_players:
            raise ValueError(f"player {player} does not exist; seats are 0..{state.num_players - 1}")
        sampled = play.descriptor.sample_state(state.view(player), rng)
        log = [entry if entry[0] in (EVERYONE, player) else (NOBODY, entry[1], entry[1]) for entry in play.log]
        other = self.get_game().new_initial_state()
        other._play = _Play(play.descriptor, play.chance.rebased(sampled), play.reward, log)
        return other


def view_text(view: Any) -> str:
    """A seat's view as one line, ``field=value`` for every field it holds (its options
    and legal actions left out)."""
    snapshot = view.snapshot() if hasattr(view, "snapshot") else view
    parts = []
    for f in dataclasses.fields(snapshot):
        if f.name in ("config", "legal_actions"):
            continue
        value = getattr(snapshot, f.name)
        parts.append(f"{f.name}={value.name.lower() if isinstance(value, Enum) else value}")
    return " ".join(parts)


class Observer:
    """OpenSpiel's Python observer for our games: the observation (the encoder's vector,
    its segments as ``dict``) and strings, or, with perfect recall, the information-state
    string (no tensor)."""

    def __init__(self, game: SpielGame, iig_obs_type: Any = None, params: Any = None) -> None:
        if params:
            raise ValueError(f"observation parameters are not supported; got {params}")
        if iig_obs_type is not None and (
            not iig_obs_type.public_info or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER
        ):
            raise ValueError("only observations of one seat's information (public_info=True, "
                             "private_info=SINGLE_PLAYER) are supported")
        self.perfect_recall = bool(iig_obs_type is not None and iig_obs_type.perfect_recall)
        self.descriptor = game.descriptor
        self.dict: dict[str, np.ndarray] = {}
        if self.perfect_recall:
            self.tensor = None
            return
        self.encoder = game.descriptor.make_encoder(game.config.num_players)
        self.tensor = np.zeros(self.encoder.size, np.float32)
        self.dict = {seg.name: self.tensor[seg.slice] for seg in self.encoder.segments}

    def set_from(self, state: SpielState, player: int) -> None:
        if self.tensor is None:
            return
        engine = state.engine_state
        if engine is None:  # no position before the set-up's chance events
            self.tensor.fill(0.0)
        else:
            self.tensor[:] = self.encoder.encode(self.descriptor.live_view(engine, player))

    def string_from(self, state: SpielState, player: int) -> str:
        if self.perfect_recall:
            return state.information_state_text(player)
        engine = state.engine_state
        if engine is None:
            return f"player {player}, setting up"
        return view_text(engine.view(player))


# ---------------------------------------------------------------------- registration
def register_games() -> list[str]:
    """Register every game of the registry that has a chance model (once; importing this
    module does it). Returns the OpenSpiel names registered by this call."""
    added = []
    registered = set(pyspiel.registered_names())
    for name in game_names():
        descriptor = get_game(name)
        spiel_name = openspiel_name(descriptor)
        if descriptor.chance_model is None or spiel_name in GAMES:
            continue
        if spiel_name not in registered:
            # OpenSpiel keeps the creator until the process ends; a class (as in OpenSpiel's
            # own Python games) outlives the interpreter's finalisation, a closure would not.
            creator = type(f"SpielGame_{descriptor.name}", (SpielGame,), {"descriptor": descriptor})
            defaults = _options(descriptor)
            pyspiel.register_game(_game_type(descriptor, defaults["players"], defaults["reward"]), creator)
        GAMES[spiel_name] = descriptor.name
        added.append(spiel_name)
    return added


def load(game: str | GameDescriptor, **params: Any) -> SpielGame:
    """``pyspiel.load_game`` of one of our games by our name: ``load("keltis", players=3)``."""
    descriptor = get_game(game)
    if descriptor.chance_model is None:
        raise ValueError(f"the game {descriptor.name!r} declares no chance model, so it has no OpenSpiel form")
    register_games()
    game_object: SpielGame = pyspiel.load_game(openspiel_name(descriptor), params)
    return game_object


# ---------------------------------------------------------------------- bots
class EngineBot(pyspiel.Bot):
    """One of our bots (an agent spec of :func:`keltis_env.bots.make_bot`) as a
    ``pyspiel.Bot``: it acts on the acting seat's view of the position."""

    def __init__(self, game: SpielGame, spec: str, seed: int | None = None) -> None:
        from keltis_env.bots import make_bot

        pyspiel.Bot.__init__(self)
        self.spec = spec
        self.bot = make_bot(spec, seed=seed, game=game.descriptor.name, num_players=game.config.num_players)

    def step(self, state: SpielState) -> int:
        return int(self.bot.act(state.engine_state.view(state.current_player())))

    def restart_at(self, state: SpielState) -> None:
        pass  # our bots decide from the view alone


def resampler(seed: int | None = None) -> Callable[[SpielState, int], SpielState]:
    """A seeded resampling callback for ``ISMCTSBot.set_resampler`` (and :class:`ResampledMCTSBot`)."""
    rng = random.Random(seed)

    def resample(state: SpielState, player: int) -> SpielState:
        return state.resampled(player, rng)

    return resample


def _search_modules() -> tuple[Any, Any]:
    from open_spiel.python.algorithms import ismcts, mcts

    return ismcts, mcts


#: the seeds numpy's ``RandomState`` takes, which the search bots' rollouts draw from
MAX_SEARCH_SEED = 2**32 - 1
#: the fewest simulations with which OpenSpiel's searches choose a move (the first only
#: expands the root: MCTS then has no child to pick, ISMCTS fails an assertion)
MIN_SIMULATIONS = 2


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def check_search_arguments(function: str, game: Any, simulations: Any, seed: Any,
                           uct_c: Any) -> tuple[int, int | None, float]:
    """The arguments of a search bot (:func:`ismcts_bot`, :func:`mcts_bot`, :func:`search_bot`),
    checked before anything is built: ``game`` one of this module's games, ``simulations`` an
    integer >= :data:`MIN_SIMULATIONS`, ``seed`` ``None`` or an integer in ``0..2**32 - 1``, ``uct_c`` a finite
    number >= 0 (bools are none of these). Returns them as plain Python numbers; a
    ``ValueError`` names the function, the argument and what it may be."""
    if not isinstance(game, SpielGame):
        raise ValueError(f"{function}: game must be one of our games in OpenSpiel (load('keltis'), or "
                         f"pyspiel.load_game('python_keltis')), got {_shown(game)}")
    count = as_integer(simulations) if not isinstance(simulations, np.ndarray) else None
    if count is None or count < MIN_SIMULATIONS:
        raise ValueError(f"{function}: simulations must be an integer >= {MIN_SIMULATIONS} (searches per decision; "
                         f"OpenSpiel's searches choose from the second on), got {_shown(simulations)}")
    number = as_integer(seed) if seed is not None and not isinstance(seed, np.ndarray) else None
    if seed is not None and (number is None or not 0 <= number <= MAX_SEARCH_SEED):
        raise ValueError(f"{function}: seed must be None or an integer from 0 to {MAX_SEARCH_SEED}, got {_shown(seed)}")
    exploration = as_finite(uct_c.item() if isinstance(uct_c, (np.floating, np.integer)) else uct_c)
    if exploration is None or exploration < 0:
        raise ValueError(f"{function}: uct_c must be a finite number >= 0 (UCT's exploration constant), "
                         f"got {_shown(uct_c)}")
    return count, number, exploration


def _perfect_information(game: SpielGame) -> bool:
    return bool(game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION)


def ismcts_bot(game: SpielGame, simulations: int = 100, seed: int | None = None, uct_c: float = 2.0) -> Any:
    """OpenSpiel's Python ISMCTS bot with random rollouts, seeded, resampling worlds with
    :func:`resampler` (imperfect-information games; a perfect-information game is refused,
    :func:`mcts_bot` searches it). The arguments are checked first
    (:func:`check_search_arguments`)."""
    simulations, seed, uct_c = check_search_arguments("ismcts_bot", game, simulations, seed, uct_c)
    if _perfect_information(game):
        raise ValueError(f"ismcts_bot: ISMCTS searches games of imperfect information; {game.descriptor.name!r} has "
                         "perfect information: use mcts_bot or search_bot")
    ismcts, mcts = _search_modules()

    class RestartableISMCTSBot(ismcts.ISMCTSBot):  # evaluate_bots restarts every bot
        def restart_at(self, state: Any) -> None:
            self.reset()

    rs = np.random.RandomState(seed)
    bot = RestartableISMCTSBot(game, mcts.RandomRolloutEvaluator(random_state=rs), uct_c, simulations,
                               random_state=rs)
    bot.set_resampler(resampler(seed))
    return bot


class ResampledMCTSBot(pyspiel.Bot):
    """OpenSpiel's MCTS searching a world resampled from the acting seat's information
    (determinised MCTS); on a perfect-information game the world is the position itself."""

    def __init__(self, search: Any, resample: Callable[[SpielState, int], SpielState]) -> None:
        pyspiel.Bot.__init__(self)
        self.search = search
        self.resample = resample

    def step(self, state: SpielState) -> int:
        return int(self.search.step(self.resample(state, state.current_player())))

    def restart_at(self, state: SpielState) -> None:
        pass


def mcts_bot(game: SpielGame, simulations: int = 100, seed: int | None = None, uct_c: float = 2.0) -> Any:
    """OpenSpiel's MCTS with random rollouts on a world resampled from the acting seat's
    information (:class:`ResampledMCTSBot`); on a perfect-information game (the dice
    game), plain MCTS. The arguments are checked first (:func:`check_search_arguments`)."""
    simulations, seed, uct_c = check_search_arguments("mcts_bot", game, simulations, seed, uct_c)
    _, mcts = _search_modules()
    rs = np.random.RandomState(seed)
    search = mcts.MCTSBot(game, uct_c, simulations, mcts.RandomRolloutEvaluator(random_state=rs), solve=False,
                          random_state=rs)
    if _perfect_information(game):
        return search
    return ResampledMCTSBot(search, resampler(seed))


def search_bot(game: SpielGame, simulations: int, seed: int | None = None) -> Any:
    """OpenSpiel's search for this game: ISMCTS on imperfect information, MCTS on perfect."""
    check_search_arguments("search_bot", game, simulations, seed, 2.0)
    if _perfect_information(game):
        return mcts_bot(game, simulations, seed)
    return ismcts_bot(game, simulations, seed)


# ---------------------------------------------------------------------- measurements
def random_play(game: str | GameDescriptor, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """Random legal play through the ``pyspiel`` API (``legal_actions`` / ``apply_action``,
    chance outcomes drawn by their probabilities): (decisions, games, elapsed seconds)."""
    spiel_game = load(game, players=num_players)
    rng = random.Random(seed)
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        state = spiel_game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(rng.choices(outcomes, probs)[0])
            else:
                legal = state.legal_actions()
                state.apply_action(legal[rng.randrange(len(legal))])
                decisions += 1
        games += 1
    return decisions, games, time.perf_counter() - start


def play_games(game: SpielGame, make_bots: Callable[[int], Sequence[Any]], games: int, seed: int,
               progress: Any = None) -> list[list[float]]:
    """``games`` games through OpenSpiel's ``evaluate_bots``, the bots of game ``g`` made by
    ``make_bots(g)`` (one per seat); the returns of each game, by seat."""
    from open_spiel.python.algorithms.evaluate_bots import evaluate_bots

    out = []
    rng = np.random.RandomState(seed)
    for g in range(games):
        out.append(list(evaluate_bots(game.new_initial_state(), list(make_bots(g)), rng)))
        if progress is not None:
            progress.update(1)
    return out


def strength(game_name: str, games: int, simulations: int, seed: int, ours: str = "heuristic",
             **params: Any) -> list[dict[str, Any]]:
    """OpenSpiel's search bot against OpenSpiel's random bot and against our ``ours`` bot,
    2 players, seats swapped every game: each pairing's mean return and win share of its
    first bot."""
    from tqdm import tqdm

    game = load(game_name, players=2, **params)
    search = "ISMCTS" if game.get_type().information == pyspiel.GameType.Information.IMPERFECT_INFORMATION \
        else "MCTS"
    searcher = f"OpenSpiel {search} ({simulations} simulations)"

    def search_seat(g: int, p: int) -> Any:
        return search_bot(game, simulations, seed + g)

    pairings: list[tuple[str, str, Callable[[int, int], Any], Callable[[int, int], Any]]] = [
        (searcher, "OpenSpiel random", search_seat, lambda g, p: pyspiel.make_uniform_random_bot(p, seed + g)),
        (f"ours: {ours}", searcher, lambda g, p: EngineBot(game, ours, seed + g), search_seat),
    ]
    results = []
    with tqdm(total=games * len(pairings), desc="openspiel strength", unit="game", leave=False) as bar:
        for first, second, make_first, make_second in pairings:
            def bots(g: int, make_first: Any = make_first, make_second: Any = make_second) -> list[Any]:
                if g % 2 == 0:
                    return [make_first(g, 0), make_second(g, 1)]
                return [make_second(g, 0), make_first(g, 1)]

            returns = play_games(game, bots, games, seed, bar)
            mine = [r[g % 2] for g, r in enumerate(returns)]
            results.append({
                "game": game_name, "first": first, "second": second, "games": games,
                "mean_return": statistics.fmean(mine),
                "win_share": statistics.fmean((1.0 if x > 0 else 0.5 if x == 0 else 0.0) for x in mine),
            })
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m keltis_env.integrations.openspiel",
        description="OpenSpiel's search bots on our games: against OpenSpiel's random bot and against one of our "
                    "bots, 2 players, seats swapped every game, full games through evaluate_bots",
    )
    names = [name for name in game_names() if get_game(name).chance_model is not None]
    parser.add_argument("--game", choices=names, default=names[0])
    parser.add_argument("--games", type=int, default=10, help="games per pairing (default 10)")
    parser.add_argument("--simulations", type=int, default=20,
                        help=f"search simulations per decision, at least {MIN_SIMULATIONS} (default 20)")
    parser.add_argument("--max-turns", type=int, default=None, help="truncate games after this many turns")
    parser.add_argument("--ours", default="heuristic", help="our bot's agent spec (default heuristic)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for option, value, least in (("--games", args.games, 1), ("--simulations", args.simulations, MIN_SIMULATIONS),
                                 ("--max-turns", args.max_turns, 1)):
        if value is not None and value < least:
            parser.error(f"{option} must be at least {least}, got {value}")
    highest = MAX_SEARCH_SEED - args.games + 1  # game g's bots are seeded with seed + g
    if not 0 <= args.seed <= highest:
        parser.error(f"--seed must be from 0 to {highest} (game g's bots take seed + g, at most {MAX_SEARCH_SEED}), "
                     f"got {args.seed}")
    params = {} if args.max_turns is None else {"max_turns": args.max_turns}
    started = time.perf_counter()
    try:
        rows = strength(args.game, args.games, args.simulations, args.seed, args.ours, **params)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{'first bot':<36}{'second bot':<36}{'games':>6}{'mean return':>13}{'win share':>11}")
    for r in rows:
        print(f"{r['first']:<36}{r['second']:<36}{r['games']:>6}{r['mean_return']:>13.2f}{r['win_share']:>11.2f}")
    print(f"{args.game}, 2 players, reward 'win' (+1 / -1, 0 for a tie), seats swapped every game, "
          f"seed {args.seed}; {time.perf_counter() - started:.0f} s")
    return 0


register_games()

__all__ = [
    "COMMON_PARAMETERS",
    "GAMES",
    "MAX_SEARCH_SEED",
    "MIN_SIMULATIONS",
    "REWARD_MODES",
    "EngineBot",
    "Observer",
    "ResampledMCTSBot",
    "SpielGame",
    "SpielState",
    "check_search_arguments",
    "ismcts_bot",
    "load",
    "main",
    "mcts_bot",
    "openspiel_name",
    "random_play",
    "register_games",
    "resampler",
    "search_bot",
    "strength",
    "view_text",
]

if __name__ == "__main__":
    sys.exit(main())
