"""The learner's view: a single-agent Gymnasium environment for one learning seat.

The other seats are played inside :meth:`KeltisLearnerEnv.step` by *opponents*: bots
acting on their own player's view (``"random"``, ``"heuristic"``, ``"ppo:PATH"`` or any
:class:`~keltis_env.bots.Bot` instance). The game runs on the match loop
(:class:`~keltis_env.core.match.Match`): the learner's seat is decided from outside, the
opponents are the controllers of the other seats. This is what single-agent libraries
such as Stable-Baselines3 train on; self-play comes from frozen policies used as
opponents.

==================  ==========================================================
Import              ``from keltis_env.envs.learner import KeltisLearnerEnv``
Gymnasium id        ``keltis_env/KeltisLearner-v0``, registered by ``import
                    keltis_env``: ``gymnasium.make("keltis_env/KeltisLearner-v0")``,
                    SB3's ``make_vec_env("keltis_env/KeltisLearner-v0", n_envs=8)``
Actions             Discrete(187), the ids of ``keltis_v0``
Observation         Box(-1, 2, (831,), float32) with 2 players (1016 with 3, 1201
                    with 4): the learner's encoded view, ``keltis_v0``'s layout
Action mask         ``env.action_masks()`` (bool, 187), for sb3-contrib's MaskablePPO
Render modes        the game's, as in ``keltis_v0``: ``"ansi"``, ``"human"`` and,
                    where the game draws a picture, ``"rgb_array"``
==================  ==========================================================

``env.action_space.sample()`` draws a *legal* action of the current position (uniformly;
any action once the game is over), so random agents and SB3's environment checker, which
step with ``action_space.sample()``, play legal moves. The space compares equal to, and
pickles as, a plain ``Discrete(187)``.

Arguments
---------
``KeltisLearnerEnv(num_players=2, opponents=("random",), opponent_weights=None,
reward="win", seat=None, illegal_action="terminate", mask_in_info=False, render_mode=None,
game="keltis", features=(), move_seconds=None, turn_cap="truncate", backend="python",
**game_options)``

* ``opponents``: the pool the other seats are drawn from, each an agent spec
  (``make_bot``) or a ``Bot`` instance; a single spec or bot is a pool of one
  (``opponents="heuristic"``); anything else (``None``, a number) is refused, naming what
  it may be. At every reset each opponent seat draws one entry,
  independently, with probabilities proportional to ``opponent_weights`` (uniform when
  ``None``). Entries are named (specs by their text, bots by their ``name``) and can be
  changed between episodes with :meth:`add_opponent`, :meth:`remove_opponent` and
  :meth:`set_opponent_weights`, also in worker processes through ``VecEnv.env_method``.
* ``reward``: ``"win"``, ``"score"`` or ``"shaped"``, as in ``keltis_v0``
  (:mod:`keltis_env.core.rewards`). Under ``"shaped"`` every step pays the change of the
  learner's potential since its previous step (its own action and the opponents' moves
  after it); the rewards of an episode from the deal sum to its ``"score"`` reward.
* ``turn_cap``: how a game cut at ``max_turns`` ends the episode: ``"truncate"``
  (default: ``truncated=True``, Gymnasium's convention, under which a trainer such as
  SB3 bootstraps the value of the cut position) or ``"end"`` (``terminated=True`` at the
  standings: the cap is the end of the game, so a policy that stalls until the cap gets
  the standings and no more).
* ``seat``: the learner's seat, or ``None`` (default) for a random seat every episode.
* ``illegal_action``: the option of ``keltis_v0`` and the match loop, for the learner's
  actions. ``"terminate"`` (default, as ``keltis_v0.env``): the episode ends
  (``terminated``) with reward ``-1``, ``info["illegal_action"]`` (the action) and
  ``info["reason"]`` (PettingZoo's classic convention); ``"raise"``: the engine's
  :class:`~keltis_env.core.errors.ActionError` propagates, naming the action and the
  reason, and nothing changes (for code that should never act illegally). The default
  follows Gymnasium's contract that ``step`` accepts every element of the action space:
  a generic caller (Gymnasium's ``check_env`` samples an action *before* a seeded reset
  and steps it after, in another position) may send any of them. An opponent's illegal
  action always raises (a bot promises legal actions).
* ``mask_in_info``: also put ``action_masks()`` into every ``info`` (``"action_mask"``) of
  ``reset`` and ``step``, so that a vectorised trainer gets it without another call.
* ``game``: ``"keltis"``, or another game of :mod:`keltis_env.core.game`'s registry (``"dice"``), whose
  observation, actions and bots are then used.
* ``features``: optional observation features appended to the observation, by name
  (:mod:`keltis_env.core.features`; the card game's ``"plan"``: its plan model's value of
  every action and its choice, 374 more values; ``"rows"``: what the rules make of each card
  on each row, 165 values computed from the observation itself). A policy trained with them records them
  in its file, and its ``ppo`` bot encodes the same way.
* ``move_seconds``: the opponents' per-move time limit in seconds (``None``, the default:
  none). An opponent over it loses the game on time: the episode ends (``terminated``)
  with ``info["end"] == "time"`` and ``info["forfeit"]`` its seat, and the learner's reward
  is 0 (the offender's -1, as for an illegal action). In the main thread a move that runs
  over is interrupted when the limit runs out (``SIGALRM``); elsewhere (in a vectoriser's
  worker thread) it is judged when it returns.
* ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns the text board),
  ``"rgb_array"`` (the game's picture, an ``(H, W, 3)`` uint8 array; SB3's
  ``make_vec_env`` asks for it) or ``"human"`` (shows the picture after every reset and
  step, or prints the text board where no window can open), as in ``keltis_v0``; the
  board shows the hand of the player to act only.
* ``backend`` (:data:`~keltis_env.core.compiled_match.BACKENDS`): what runs the game, as in
  ``keltis_v0``: ``"python"`` (the default) the match loop and the Python engine;
  ``"compiled"`` the game's compiled core (the ``fast`` extra): the episode is drawn and
  dealt, and the opponents make their first moves, on the match loop, then the position
  moves into a row of the kernels (:mod:`keltis_env.core.compiled_learner`), where every
  action is one compiled call and the learner's observation and mask another (with the
  ``plan`` feature too). An opponent bot acts on its view as on the Python backend; the
  random bot gets its legal actions from the kernels, and the card game's ``heuristic``
  and ``planner`` (agent specs, without ``backend=python``) move inside the kernels, the
  moves of their Python bots, except under ``move_seconds``. The same seeds and actions
  give the same observations (bit for bit), masks, rewards, terminations, truncations and
  infos on both (``tests/test_learner_compiled.py``). ``"auto"``: compiled where numba
  imports and the game has kernels that compute the ``features``, else Python.
  ``"compiled"`` for a game without kernels, or with a feature its kernels do not compute,
  raises a one-line ``ValueError``, without numba the ``ImportError`` naming the extra; any
  other value a ``ValueError`` naming the three. On the compiled backend :attr:`state` is
  made from the row when read (a copy: changing it does not change the game) and
  :attr:`match` is a :class:`~keltis_env.core.compiled_learner.CompiledLearnerMatch`.
* ``game_options``: ``max_turns``, ``tile_layout`` (see ``keltis_v0``). An option that is
  neither an argument above nor one of the game's raises a ``TypeError`` that lists them.

``reset(seed=None, options=None)``: ``seed`` (an integer >= 0 of any integer type, or
``None``) makes the episode sequence reproducible (seat, opponents, deal and the bots' own
randomness); the game of a seeded reset is the Python engine's deal from that seed, the game
``keltis_v0.env().reset(seed=seed)`` and slot 0 of the vector environment's
``reset(seed=seed)`` deal. ``options`` takes the reset options of the
AEC environments, read the same way (:func:`keltis_env.core.match.start_position`):
``"state"`` (a ``GameState.to_dict()`` position to start from) or ``"record"`` (a game
record's dict) with ``"upto"`` (start after its first ``upto`` actions; all of them
without it); and the learner's own: ``"seat"`` (the learner's seat for this episode) and
``"opponents"`` (the entry name for each other seat, in seat order). Unknown options are
ignored with a warning, as in the AEC environments. The opponents play from the given
position until the learner is to move; a position where the game ends before that is
refused.

Rewards and episode end
-----------------------
Under ``"win"`` and ``"score"`` the reward is ``0`` until the game is over, then the
learner's final reward from :func:`keltis_env.core.rewards.final_rewards`, whoever made the
last move: a game ended by an opponent's move ends the learner's episode on its previous
action, with the loss (or win) it deserves. Under ``"shaped"`` each step pays the change of
the learner's potential since the step before. A game cut at ``max_turns`` gives
``truncated=True`` (``terminated`` under ``turn_cap="end"``) and the reward of the
standings at that moment. The final ``info`` holds ``score``, ``scores`` (by absolute
seat), ``seat``, ``win`` (the learner's share of the victory: 1, 1/k for a k-way tie, 0),
``turns``, ``end`` (``"goal"``, ``"deck"``, ``"truncated"``, ``"time"``) and ``opponents`` (entry
names by seat, ``None`` for the learner's own).

The environment never replaces an illegal action by a legal one. Whatever is not an
action id is an illegal action like any other, ended (or raised) by ``illegal_action``
with its reason: an id out of range, a string, a float, a bool (``True`` is not action 1),
a numpy array of one or more elements (``np.array([3])``); a numpy integer or a 0-d integer
array (``np.array(3)``) is the action it holds.

The environment pickles in the middle of an episode, opponents included (a ``"human"``
window is not carried: the copy opens its own), and the copy goes on like the original.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from keltis_env import LEARNER_ENV_ID as ENV_ID  # registered with gymnasium by keltis_env
from keltis_env.bots import Bot, RandomBot
from keltis_env.core.compiled_learner import CompiledLearnerMatch, LearnerCore, kernel_bot, resolve_learner_backend
from keltis_env.core.compiled_match import BACKENDS
from keltis_env.core.errors import ActionError
from keltis_env.core.game import GameDescriptor, get_game
from keltis_env.core.learner_game import LearnerGame
from keltis_env.core.match import ILLEGAL_ACTION_MODES, IllegalAction, Match, check_seed, not_an_action_id
from keltis_env.core.render import BoardRenderer, render_modes
from keltis_env.envs.episode import RESET_OPTIONS, LearnerEpisode, OpponentEntry, OpponentPool, opponent_list

__all__ = ["ARGUMENTS", "BACKENDS", "ENV_ID", "ILLEGAL_ACTION_MODES", "RESET_OPTIONS", "CompiledLearnerEpisode",
           "KeltisLearnerEnv", "LegalActionSpace"]

#: the learner view's own arguments (the game's options come after them)
ARGUMENTS = ("num_players", "opponents", "opponent_weights", "reward", "seat", "illegal_action", "mask_in_info",
             "render_mode", "game", "features", "move_seconds", "turn_cap", "backend")
#: the most characters of a refused value that a message shows
_SHOWN = 120


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def check_opponents(opponents: Any, weights: Any) -> tuple[Any, list[Any] | None]:
    """``opponents`` (an agent spec, a Bot, or a list of them) and ``opponent_weights``
    (``None`` or numbers, one per opponent) as lists; anything else raises a ``TypeError``
    naming what they may be."""
    if isinstance(opponents, (str, Bot)):
        listed: Any = opponents
    elif isinstance(opponents, Iterable) and not isinstance(opponents, (Mapping, bytes)):
        listed = list(opponents)
    else:
        raise TypeError("opponents must be an agent spec (str, e.g. 'random'), a Bot, or a non-empty list of "
                        f"them, got {_shown(opponents)}")
    if weights is None:
        return listed, None
    if isinstance(weights, (str, bytes, Mapping)) or not isinstance(weights, Iterable):
        raise TypeError("opponent_weights must be None (equal weights) or a list of numbers, one per opponent, "
                        f"got {_shown(weights)}")
    return listed, list(weights)


class LegalActionSpace(spaces.Discrete):
    """``Discrete(n)`` whose ``sample()`` without a mask draws among the legal actions given
    by ``legal_mask()`` (all actions when none is legal). Pickled and copied as a plain
    ``Discrete(n)``: saved models must not drag the environment along."""

    def __init__(self, n: int, legal_mask: Any) -> None:
        super().__init__(n)
        self._legal_mask = legal_mask

    def sample(self, mask: np.ndarray | None = None, probability: np.ndarray | None = None) -> np.int64:
        if mask is None and probability is None:
            legal = self._legal_mask()
            if legal.any():
                mask = legal.astype(np.int8)
        return super().sample(mask=mask, probability=probability)

    def __reduce__(self) -> tuple[Any, ...]:
        return (spaces.Discrete, (int(self.n),))


class KeltisLearnerEnv(gymnasium.Env):
    """One learning seat of a Keltis game; the other seats are played by opponents. See the
    module documentation. The game, its opponent pool and its draws are those of
    :attr:`episode` (:class:`keltis_env.envs.episode.LearnerEpisode`)."""

    # Every render mode a game may have: gymnasium.make reads the class's modes before any
    # game is chosen; each instance then has its own game's modes (self.metadata).
    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        num_players: int = 2,
        opponents: str | Bot | Sequence[str | Bot] = ("random",),
        opponent_weights: Sequence[float] | None = None,
        reward: str = "win",
        seat: int | None = None,
        illegal_action: str = "terminate",
        mask_in_info: bool = False,
        render_mode: str | None = None,
        game: str = "keltis",
        features: Sequence[str] = (),
        move_seconds: float | None = None,
        turn_cap: str = "truncate",
        backend: str = "python",
        **game_options: Any,
    ) -> None:
        super().__init__()
        self._spec = get_game(game)
        self._check_options(game_options)
        opponents, opponent_weights = check_opponents(opponents, opponent_weights)
        #: the learner game's arguments, checked (:class:`~keltis_env.core.learner_game.LearnerGame`)
        self.learner = LearnerGame(game=self._spec, num_players=num_players, reward=reward, turn_cap=turn_cap,
                                   features=features, illegal_action=illegal_action, options=game_options)
        self.features = self.learner.features
        #: ``"python"`` or ``"compiled"``: what runs the game (``"auto"`` resolved)
        self.backend = _resolve_backend(self._spec, backend, tuple(self.features))
        self.game = self._spec.name
        self.config = self.learner.config
        self.num_players = self.learner.num_players
        self.encoder = self._spec.make_encoder(num_players, self.features)
        pool = OpponentPool(self.game, num_players)
        options: dict[str, Any] = dict(reward=self.learner.reward, illegal_action=self.learner.illegal_action,
                                       seat=seat, move_seconds=move_seconds, turn_cap=self.learner.turn_cap)
        #: the learner's game: its seat, opponents, pool and match
        self.episode = (
            LearnerEpisode(self._spec, self.config, pool, self.encoder, **options)
            if self.backend == "python"
            else CompiledLearnerEpisode(self._spec, self.config, pool, self.encoder,
                                        core=LearnerCore(self._spec, num_players, tuple(self.features)), **options)
        )
        self.reward_mode = self.episode.reward_mode
        self.fixed_seat = self.episode.fixed_seat
        self.illegal_action = self.episode.illegal_action
        self.mask_in_info = bool(mask_in_info)
        self.metadata = {**type(self).metadata, "render_modes": render_modes(self._spec)}
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be None or one of {self.metadata['render_modes']} for the game {self.game!r}, "
                f"got {render_mode!r}"
            )
        self.render_mode = render_mode
        title = f"{self._spec.long_name} (learner)"
        self._renderer = (
            None if render_mode is None else BoardRenderer(self._spec, render_mode, title, self.metadata["render_fps"])
        )
        self.observation_space = spaces.Box(
            self._spec.obs_low, self._spec.obs_high, (self.encoder.size,), np.float32
        )
        self.action_space = LegalActionSpace(self._spec.num_actions, self.action_masks)
        for opponent, weight in opponent_list(opponents, opponent_weights):
            pool.add(opponent, weight)
        self._done = True

    def _check_options(self, game_options: Mapping[str, Any]) -> None:
        """Refuse options that are neither arguments nor the game's own, listing the allowed ones."""
        if not hasattr(self._spec.config_cls, "__dataclass_fields__"):
            return  # a config class that lists no options: it refuses unknown ones itself
        options = self._spec.option_names()
        unknown = [name for name in game_options if name not in options]
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(map(repr, unknown))} for KeltisLearnerEnv of the game "
                            f"{self._spec.name!r}; its options are {', '.join([*ARGUMENTS, *options])}")

    @property
    def seat(self) -> int:
        """The learner's seat in the current episode."""
        return self.episode.seat

    @property
    def match(self) -> Any:
        """The current episode's game (``None`` before the first reset): on the Python backend
        its :class:`~keltis_env.core.match.Match`; on the compiled backend a
        :class:`~keltis_env.core.compiled_learner.CompiledLearnerMatch`, with the parts of
        ``Match`` this view uses (``step``, ``play``, ``over``, ``illegal``, ``forfeit``,
        ``result``, ``take_rewards``, ``to_move``, ``state``)."""
        return self.episode.match

    @property
    def state(self) -> Any:
        """The current episode's game state (``None`` before the first reset). On the Python
        backend the live state; on the compiled backend made from the compiled row at every
        read, a copy: changing it does not change the game."""
        return self.episode.state

    # ------------------------------------------------------------------ opponent pool
    def add_opponent(self, opponent: str | Bot, weight: float = 1.0, name: str | None = None) -> str:
        """Add an opponent (agent spec or Bot) to the pool; returns its entry name. An entry
        with the same name is replaced."""
        return self.episode.pool.add(opponent, weight, name)

    def remove_opponent(self, name: str) -> None:
        """Drop an entry from the pool (it keeps playing the current episode)."""
        self.episode.pool.remove(name)

    def set_opponent_weights(self, weights: Mapping[str, float]) -> None:
        """Set the sampling weights of the named entries (others keep theirs)."""
        self.episode.pool.set_weights(weights)

    def opponent_names(self) -> list[str]:
        return self.episode.pool.names()

    def opponent_weights(self) -> dict[str, float]:
        return self.episode.pool.weights()

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = check_seed(seed, minimum=0)
        super().reset(seed=seed)
        info = self.episode.start(self.np_random, options, reseed_bots=seed is not None, deal_seed=seed)
        self._done = False
        if self.render_mode == "human":
            self.render()
        if self.mask_in_info:
            info["action_mask"] = self.action_masks()
        return self.episode.observe(), info

    def step(self, action: Any):
        if self._done:
            raise RuntimeError("the episode is over; call reset() before step()")
        episode = self.episode
        # Under "raise" the engine's error propagates from here and nothing has changed.
        reason = None if type(action) is int else not_an_action_id(action, self._spec.num_actions)
        over = episode.step(action) if reason is None else self._refuse(action, reason)
        if self.render_mode == "human":
            self.render()
        if not over:
            return episode.observe(), episode.take_reward(), False, False, self._with_mask({})
        self._done = True
        reward, info, truncated = episode.result()
        return episode.observe(), reward, not truncated, truncated, self._with_mask(info)

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner (bool, one per action id); all False once over."""
        episode = self.episode
        if isinstance(episode, CompiledLearnerEpisode) and episode.match is not None:
            return episode.legal_mask()
        mask = np.zeros(self.action_space.n, dtype=bool)
        mask[episode.legal_actions()] = True
        return mask

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the text board; ``"rgb_array"``: the picture as an (H, W, 3) uint8
        array; ``"human"``: shows the picture in a window (or prints the text board where
        none can open). The board is the game's, with the hand of the player to act."""
        if self._renderer is None:
            gymnasium.logger.warn(
                f"render() was called without a render_mode; pass one of {self.metadata['render_modes']}."
            )
            return None
        if self.state is None:
            raise RuntimeError("nothing to render before the first reset()")
        return self._renderer.render(self.state)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """Everything but an open ``"human"`` window (the copy gets a renderer of its own) and
        the observation encoder, which the copy makes again from the game and the features
        (an encoder with features holds functions made at run time)."""
        state = self.__dict__.copy()
        renderer = self._renderer
        if renderer is not None:
            state["_renderer"] = BoardRenderer(renderer.game, renderer.mode, renderer.title, renderer.fps)
        state["encoder"] = None
        episode = state["episode"] = copy.copy(self.episode)
        episode.encoder = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.encoder = self.episode.encoder = self._spec.make_encoder(self.num_players, self.features)

    # ------------------------------------------------------------------ internals
    def _refuse(self, action: Any, reason: str) -> bool:
        """``action``, not an action id, as the match loop treats an illegal one: under
        ``"raise"`` an :class:`ActionError` and nothing changes; under ``"terminate"`` the
        episode ends with the learner as the offender. Returns that the game is over."""
        if self.illegal_action == "raise":
            raise ActionError(reason)
        match = self.episode.match
        assert match is not None
        match.illegal = IllegalAction(match.to_move, action, reason)
        return True

    def _with_mask(self, info: dict[str, Any]) -> dict[str, Any]:
        if self.mask_in_info:
            info["action_mask"] = self.action_masks()
        return info



class CompiledLearnerEpisode(LearnerEpisode):
    """A :class:`~keltis_env.envs.episode.LearnerEpisode` whose game, once the opponents have
    made their first moves on the match loop, goes on on the compiled core
    (:class:`~keltis_env.core.compiled_learner.CompiledLearnerMatch`): the same draws, the
    same game, the same observations, masks, rewards and infos. ``core`` is the
    :class:`~keltis_env.core.compiled_learner.LearnerCore` of the game, players and
    features. The last observation and mask are kept until the game moves."""

    __slots__ = ("core", "seen")

    def __init__(self, game: GameDescriptor, config: Any, pool: OpponentPool, encoder: Any, *,
                 core: LearnerCore, **options: Any) -> None:
        super().__init__(game, config, pool, encoder, **options)
        self.core = core
        self.seen: tuple[Any, np.ndarray, np.ndarray] | None = None  # (the game's moves, obs, mask)

    def start(self, rng: np.random.Generator, options: Mapping[str, Any] | None = None, *, reseed_bots: bool = False,
              play: bool = True, deal_seed: int | None = None) -> dict[str, Any]:
        if not play:
            raise ValueError("a compiled learner episode plays its opponents itself (play=True)")
        info = super().start(rng, options, reseed_bots=reseed_bots, deal_seed=deal_seed)
        host = self.match
        assert isinstance(host, Match)
        # the random bot reads only its view's legal actions: the kernels' mask gives them
        legal_only = [type(bot) is RandomBot for bot in host.controllers]
        inside = [self._kernel_bot(entry) for entry in self.seat_entries]
        self.match = CompiledLearnerMatch(self.core, host, legal_only, inside)  # type: ignore[assignment]
        self.seen = None
        return info

    def _kernel_bot(self, entry: OpponentEntry | None) -> tuple[int, np.ndarray, np.ndarray] | None:
        """How the kernels move ``entry``'s bot (:func:`~keltis_env.core.compiled_learner.kernel_bot`),
        where they make its moves: an agent spec whose bot the evaluation plays in the
        kernels (:func:`keltis_env.evaluation.compiled_games.kernel_spec`: the card game's
        heuristic and planner), without a per-move time limit (which judges the Python
        bot's time); else ``None`` (the bot acts on its view)."""
        if entry is None or entry.spec is None or self.core.bots is None or self.move_seconds is not None:
            return None
        from keltis_env.evaluation.compiled_games import kernel_spec
        from keltis_env.evaluation.play import played_spec

        if not kernel_spec(entry.spec):
            return None
        return kernel_bot(self.core, played_spec(entry.spec, self.game.name))

    def _seen(self) -> tuple[np.ndarray, np.ndarray]:
        """The learner's observation and bool mask now (computed once per position)."""
        match: Any = self.match
        key = (match, sum(match.decisions), match.illegal, match.forfeit)
        if self.seen is None or self.seen[0] != key:
            obs, mask = match.observe_learner(self.seat)
            self.seen = (key, obs, mask)
        return self.seen[1], self.seen[2]

    def legal_actions(self) -> list[int]:
        if self.match is None:
            return []
        return [int(a) for a in np.flatnonzero(self._seen()[1])]

    def legal_mask(self) -> np.ndarray:
        """The learner's legal actions as a bool mask (a copy)."""
        return self._seen()[1].copy()

    def observe(self) -> np.ndarray:
        return self._seen()[0].copy()


def _resolve_backend(game: GameDescriptor, backend: Any, features: tuple[str, ...]) -> str:
    """``"python"`` or ``"compiled"`` for ``backend`` (see the module documentation); the
    compiled kernels are loaded only when a compiled backend is asked for."""
    return "python" if backend == "python" else resolve_learner_backend(game, backend, features)
