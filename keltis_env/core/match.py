"""The one match loop: a game state, one controller per seat, the illegal-action policy
and the final rewards (standard library only).

Every place that runs a game runs it here: the AEC environments (every seat decided from
outside), the learner view (one seat from outside, the others by bots), the evaluation,
``keltis bench``, imitation pretraining and the command line (bots, or a person at one
seat).

A *controller* is a bot: an object with ``act(view) -> action``. It receives the seat's
view (``state.view(seat)``, what that seat may know, R10), or the zero-copy live view when
it declares ``accepts_live_view = True`` (it then must not keep the view). ``None`` marks
a seat decided from outside: :meth:`Match.play` stops there and :meth:`Match.step` takes
the action.

Illegal actions given to :meth:`Match.step` (one option, the same names everywhere):

* ``"raise"``: the engine's :class:`~keltis_env.core.errors.ActionError` propagates,
  naming the action and the reason, and nothing changes;
* ``"terminate"``: PettingZoo's classic convention: the game ends at once, the offending
  seat gets ``-1`` and every other seat ``0``; :attr:`Match.illegal` tells who and why.

A controller's illegal action always raises, whatever the option: a bot promises legal
actions (:class:`~keltis_env.bots.Bot`), so breaking that promise is a bug to report, not
a move to punish. The :class:`~keltis_env.core.errors.ActionError` then names the seat
and the controller, and nothing changes.

Controllers that are not the package's own (a user's agent) are run with two options:

* ``move_seconds``: a per-move time limit. A controller that takes longer loses the game
  by a *time forfeit*: the game ends at once (``end="time"``), the offender's share of
  the victory is 0 and the others share it, the offender's reward is ``-1`` and every
  other seat's ``0`` (as for an illegal action); :attr:`Match.forfeit` tells who and how
  long. In the main thread, where signals can be used (``SIGALRM``), a move that runs
  over is interrupted when the limit runs out (:class:`~keltis_env.core.errors.MoveTimeout`
  is raised inside ``act``); elsewhere it is judged when it returns.
* ``guard=True``: anything a controller raises while it decides (an exception,
  ``SystemExit``, a ``KeyboardInterrupt`` that is not the user's
  :class:`~keltis_env.core.errors.StopRequest`) becomes a
  :class:`~keltis_env.core.errors.ControllerError` naming the seat and the controller,
  in plain text that crosses process boundaries; nothing changes in the game.

Rewards are paid when the game ends (R8), also when it is truncated, from
:func:`keltis_env.core.rewards.final_rewards`: every seat gets its own, whoever moved last.
Under ``reward="shaped"`` they are paid after every action instead, the change of every
seat's potential (:func:`keltis_env.core.rewards.potentials`); :meth:`Match.take_rewards`
gives what is due since its last call, in every mode.

The reset options shared by the environments (:func:`check_reset_options`,
:func:`start_position`) live here too, so that every runner reads them the same way.
"""

from __future__ import annotations

import operator
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import ActionError, ControllerError, MoveTimeout, StopRequest, describe_value
from .game import GameDescriptor, get_game
from .rewards import check_reward_mode, final_rewards, potentials, win_shares
from .validation import as_integer

ILLEGAL_ACTION_MODES = ("terminate", "raise")
#: reset options every environment understands (the learner adds its own)
RESET_OPTIONS = ("state", "record", "upto")


def check_illegal_action(mode: str) -> str:
    if mode not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action must be one of {', '.join(map(repr, ILLEGAL_ACTION_MODES))}, got {mode!r}")
    return mode


def action_id(action: Any) -> Any:
    """A plain ``int`` for any integer type (numpy's scalars and 0-d arrays included); any
    other value is returned as it is, for the engine to refuse by name (also one whose
    ``__index__`` raises). Bools are not action ids."""
    if type(action) is int or isinstance(action, bool):
        return action
    try:
        return operator.index(action)
    except Exception:
        return action


def not_an_action_id(action: Any, num_actions: int) -> str | None:
    """Why ``action`` is not an action id, for the values an engine cannot be trusted to
    refuse by name: bools (Python's, numpy's, arrays of them: ``True`` is not action 1) and
    values whose ``__index__`` fails (a numpy array of one or more elements, or of floats);
    ``None`` for anything else (an integer of any type, a 0-d integer array, or a value the
    engine refuses itself). The AEC environments and the learner view refuse with it."""
    if type(action) is int:
        return None
    if not _is_bool(action):
        if not hasattr(type(action), "__index__"):
            return None
        try:
            operator.index(action)
            return None
        except Exception:  # numpy's TypeError, or whatever a foreign __index__ raises
            pass
    return f"action ids are integers 0..{num_actions - 1}, got {describe_value(action)}"


def _is_bool(action: Any) -> bool:
    """Python's bool, or numpy's bools (a scalar or an array: a dtype of kind ``"b"``)."""
    return isinstance(action, bool) or getattr(getattr(action, "dtype", None), "kind", None) == "b"


def check_move_seconds(value: Any) -> float | None:
    """A per-move time limit: ``None`` (no limit) or a positive, finite number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ValueError(f"move_seconds must be a positive number of seconds or None (no limit), "
                         f"got {describe_value(value)}")
    return float(value)


@dataclass(frozen=True)
class Forfeit:
    """A game lost on time: ``seat`` took ``seconds`` on one move, over the ``limit``."""

    seat: int
    seconds: float
    limit: float


@dataclass(frozen=True)
class IllegalAction:
    """An illegal action that ended a game (``illegal_action="terminate"``)."""

    seat: int
    action: Any
    reason: str  # the engine's message: the action and why it is illegal


@dataclass(frozen=True)
class MatchResult:
    """How a game ended, by absolute seat."""

    scores: tuple[int, ...]
    rewards: tuple[float, ...]
    shares: tuple[float, ...]  # share of the victory: 1, 1/k for a k-way tie, 0
    turns: int
    end: str  # the state's end reason ("goal", "deck", "truncated", ...) or "illegal"
    truncated: bool
    actions: tuple[int, ...]  # every decision in order (empty unless recorded)
    decisions: tuple[int, ...]  # decisions made per seat
    think_seconds: tuple[float, ...]  # controllers' time per seat (0 for outside seats)
    illegal: IllegalAction | None = None
    forfeit: Forfeit | None = None


class Match:
    """A game in progress under the match loop (see the module documentation).

    ``record=True`` keeps every applied action in :attr:`actions` (for a game record:
    ``game.record_cls(config=..., seed=..., actions=match.actions)``).
    """

    def __init__(
        self,
        game: str | GameDescriptor,
        state: Any,
        controllers: Sequence[Any | None] | None = None,
        *,
        reward: str = "win",
        illegal_action: str = "raise",
        record: bool = False,
        move_seconds: float | None = None,
        guard: bool = False,
    ) -> None:
        self.game = get_game(game)
        if not isinstance(state, self.game.state_cls):
            raise TypeError(
                f"a match of {self.game.name!r} needs a {self.game.state_cls.__name__}, got {type(state).__name__}"
            )
        self.state = state
        n = state.num_players
        controllers = [None] * n if controllers is None else list(controllers)
        if len(controllers) != n:
            raise ValueError(f"a match needs one controller per seat ({n}), got {len(controllers)}")
        for seat, controller in enumerate(controllers):
            if controller is not None and not callable(getattr(controller, "act", None)):
                raise TypeError(
                    f"the controller of seat {seat} must be a bot (with act(view)) or None (decided from outside), "
                    f"got {controller!r}"
                )
        self.controllers = controllers
        self._live = [bool(getattr(c, "accepts_live_view", False)) for c in controllers]
        self.reward_mode = check_reward_mode(reward)
        self.illegal_action = check_illegal_action(illegal_action)
        if not isinstance(record, bool):
            raise TypeError(f"record must be True or False, got {record!r}")
        self.record = record
        self.move_seconds = check_move_seconds(move_seconds)
        if not isinstance(guard, bool):
            raise TypeError(f"guard must be True or False, got {guard!r}")
        self.guard = guard
        self.actions: list[int] = []
        self.decisions = [0] * n
        self.think = [0.0] * n
        self.illegal: IllegalAction | None = None
        self.forfeit: Forfeit | None = None
        # what take_rewards has paid: the potentials at its last call ("shaped"), and whether the end is paid
        self._potentials = potentials(state.scores()) if self.reward_mode == "shaped" else []
        self._settled = False

    # ------------------------------------------------------------------ queries
    @property
    def over(self) -> bool:
        """The game ended by the rules, by truncation, by an illegal action or on time."""
        return self.illegal is not None or self.forfeit is not None or self.state.is_over

    @property
    def to_move(self) -> int:
        """The seat that decides next (the last mover once the game is over; the
        offender after an illegal action)."""
        return int(self.state.current_player)

    def needs_input(self) -> bool:
        """The seat to move is decided from outside (its controller is ``None``)."""
        return not self.over and self.controllers[self.to_move] is None

    def rewards(self) -> list[float]:
        """Every seat's final reward; all 0 while the game goes on."""
        n = self.state.num_players
        offender = self.illegal.seat if self.illegal is not None else self.forfeit.seat if self.forfeit else None
        if offender is not None:
            return [-1.0 if p == offender else 0.0 for p in range(n)]
        if not self.state.is_over:
            return [0.0] * n
        return final_rewards(self.state.scores(), self.reward_mode)

    def take_rewards(self) -> list[float]:
        """Every seat's reward due since the last call (the environments pay it after each
        action): :meth:`due_rewards`, then marked as paid."""
        due = self.due_rewards()
        if self.illegal is not None or self.forfeit is not None or self.state.is_over:
            self._settled = True
        elif self.reward_mode == "shaped":
            self._potentials = potentials(self.state.scores())
        return due

    def due_rewards(self) -> list[float]:
        """Every seat's reward due since the last :meth:`take_rewards` (changes nothing).
        Under ``"shaped"``: the change of each seat's potential; under ``"win"`` and
        ``"score"``: 0 until the game is over, then the final rewards. An illegal action or
        a time forfeit ends the game with its own rewards (the offender ``-1``), paid once."""
        n = self.state.num_players
        if self._settled:
            return [0.0] * n
        if self.illegal is not None or self.forfeit is not None:
            return self.rewards()
        if self.reward_mode == "shaped":
            now = potentials(self.state.scores())
            return [after - before for after, before in zip(now, self._potentials, strict=True)]
        return self.rewards() if self.state.is_over else [0.0] * n

    # ------------------------------------------------------------------ moves
    def step(self, action: Any) -> bool:
        """Apply ``action`` for the seat to move, under the illegal-action policy; returns
        :attr:`over`. Meant for seats decided from outside, but takes any seat's action."""
        state = self.state
        if self.over:
            raise RuntimeError("the game is over; no more actions")
        seat = state.current_player
        if type(action) is not int:
            action = action_id(action)
        try:
            state.apply(action)  # the engine checks legality and changes nothing when it refuses
        except ActionError as exc:
            if self.illegal_action == "raise":
                raise
            self.illegal = IllegalAction(seat, action, str(exc))
            return True
        self.decisions[seat] += 1
        if self.record:
            self.actions.append(action)
        over: bool = state.is_over
        return over

    def play(self, stop: Callable[[Any], bool] | None = None) -> bool:
        """Controllers decide until a seat decided from outside is to move or the game is
        over, or, with ``stop``, until ``stop(state)`` is true before a decision; returns
        :attr:`over`."""
        state = self.state
        controllers = self.controllers
        live_view = self.game.live_view
        clock = time.perf_counter
        plain = self.move_seconds is None and not self.guard
        while not self.over:
            if stop is not None and stop(state):
                return False
            seat = state.current_player
            bot = controllers[seat]
            if bot is None:
                return False
            view = live_view(state, seat) if self._live[seat] else state.view(seat)
            if plain:
                t0 = clock()
                action = bot.act(view)
                self.think[seat] += clock() - t0
            else:
                action = self._ask(seat, bot, view)
                if self.forfeit is not None:
                    return True
            if type(action) is not int:
                action = action_id(action)
                if type(action) is not int:
                    raise ActionError(f"the controller of seat {seat} ({describe_value(bot)}) returned "
                                      f"{describe_value(action)} (a {type(action).__name__}), not an action id")
            try:
                state.apply(action)
            except ActionError as exc:
                raise ActionError(f"the controller of seat {seat} ({describe_value(bot)}) chose an illegal action: "
                                  f"{exc}") from exc
            self.decisions[seat] += 1
            if self.record:
                self.actions.append(action)
        return True

    def _ask(self, seat: int, bot: Any, view: Any) -> Any:
        """``bot``'s action under the time limit and the guard (see the module doc); on a
        time forfeit, :attr:`forfeit` is set and the action is ``None``."""
        limit = self.move_seconds
        alarm = limit if limit is not None and _can_alarm() else None
        t0 = time.perf_counter()
        action: Any = None
        timed_out = False
        previous: Any = None
        try:
            if alarm is not None:
                previous = _arm(alarm)
            try:
                action = bot.act(view)
            finally:
                if alarm is not None:
                    _disarm(previous)
        except MoveTimeout as exc:
            if alarm is not None:
                _disarm(previous)
            if limit is None:  # not the limit's: the controller raised it itself
                if not self.guard:
                    raise
                raise self._failure(seat, bot, exc) from None
            timed_out = True
        except (StopRequest, ActionError):  # an ActionError is a bot's refused answer (a py: agent's checker)
            raise
        except BaseException as exc:
            if not self.guard:
                raise
            raise self._failure(seat, bot, exc) from exc
        elapsed = time.perf_counter() - t0
        self.think[seat] += elapsed
        if limit is not None and (timed_out or elapsed > limit):
            self.forfeit = Forfeit(seat, elapsed, limit)
            return None
        return action

    def _failure(self, seat: int, bot: Any, exc: BaseException) -> ControllerError:
        return ControllerError.of(seat, describe_value(bot), exc)

    def run(self) -> MatchResult:
        """Play the game to its end (every seat needs a controller) and return the result."""
        if not self.play():
            raise ValueError(f"seat {self.to_move} has no controller; use play() and step() for outside seats")
        return self.result()

    def result(self) -> MatchResult:
        """The result of a finished game."""
        if not self.over:
            raise RuntimeError("the game is not over yet")
        return finished_result(self.state, self.state.scores(), self.rewards(), self.actions, self.decisions,
                               self.think, self.illegal, self.forfeit)


def forfeit_shares(num_players: int, offender: int) -> list[float]:
    """The shares of the victory of a game lost on time by ``offender``: 0 for it, the
    others share 1 equally."""
    return [0.0 if p == offender else 1.0 / (num_players - 1) for p in range(num_players)]


def _can_alarm() -> bool:
    """A move can be interrupted by ``SIGALRM`` here: the main thread, on a platform with it."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _on_alarm(signum: int, frame: object) -> None:
    raise MoveTimeout


def _arm(seconds: float) -> Any:
    """Start the move's timer; returns the ``SIGALRM`` handler it replaces."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return previous


def _disarm(previous: Any) -> None:
    """Idempotent: the timer stopped first, then the handler before it back."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


def play_game(
    game: str | GameDescriptor,
    controllers: Sequence[Any],
    seed: int,
    *,
    record: bool = False,
    reward: str = "win",
    **options: Any,
) -> tuple[Any, MatchResult]:
    """A new seeded game of ``game`` with ``options``, played to the end by ``controllers``
    (one per seat); returns the final state and the result."""
    descriptor = get_game(game)
    config = descriptor.make_config(num_players=len(controllers), **options)
    match = Match(descriptor, descriptor.new_state(config, seed), controllers, reward=reward, record=record)
    return match.state, match.run()


# ---------------------------------------------------------------------- reset options
def check_seed(seed: Any, minimum: int | None = None) -> int | None:
    """A reset's ``seed`` as a plain int (any integer type, numpy's included), or ``None``;
    a bool, float, string, list or array raises a ``TypeError`` saying what a seed may be,
    and with ``minimum`` a smaller integer a ``ValueError``."""
    allowed = "an integer or None" if minimum is None else f"an integer >= {minimum} or None"
    if seed is None:
        return None
    try:
        integer = as_integer(seed)
    except Exception:  # an __index__ that fails (a numpy array of several numbers)
        integer = None
    if integer is None:
        raise TypeError(f"seed must be {allowed}, got {describe_value(seed)}")
    if minimum is not None and integer < minimum:
        raise ValueError(f"seed must be {allowed}, got {integer}")
    return integer


def check_reset_options(options: Mapping[str, Any] | None, known: Iterable[str] = RESET_OPTIONS) -> dict[str, Any]:
    """``options`` as a dict; unknown keys are ignored with a warning naming the known
    ones (PettingZoo's api_test passes arbitrary options, so they must not fail)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reset options must be a dict or None, got {type(options).__name__}")
    options = dict(options)
    known = tuple(known)
    unknown = sorted(set(options) - set(known))
    if unknown:
        warnings.warn(
            f"ignoring unknown reset option(s) {unknown}; reset options are {', '.join(map(repr, known))}",
            stacklevel=3,
        )
    return options


def start_position(game: str | GameDescriptor, config: Any, options: Mapping[str, Any]) -> Any | None:
    """The position that reset options ask for, or ``None`` when they ask for none.

    ``options["state"]``: a state dict (``GameState.to_dict()``); ``options["record"]``: a
    game record (its dict, or the game's ``GameRecord``) with optional ``options["upto"]``,
    passed unchanged to :meth:`~keltis_env.core.record.Record.replay` (the position after
    the first ``upto`` actions; all of them without it). The position must have the
    environment's options ``config``.
    """
    descriptor = get_game(game)
    if "state" in options and "record" in options:
        raise ValueError("reset takes either options['state'] or options['record'], not both")
    if "upto" in options and "record" not in options:
        raise ValueError("options['upto'] counts the actions of options['record'], which is missing")
    if "state" in options:
        state = descriptor.state_from_dict(options["state"])
    elif "record" in options:
        record = options["record"]
        if not isinstance(record, descriptor.record_cls):
            record = descriptor.record_cls.from_dict(record)
        state = record.replay(options.get("upto"))
    else:
        return None
    if state.config != config:
        raise ValueError(f"the given position has options {state.config}, but this environment has {config}")
    return state


def finished_result(state: Any, scores: Sequence[int], rewards: Sequence[float], actions: Sequence[Any],
                    decisions: Sequence[int], think: Sequence[float], illegal: Any, forfeit: Any) -> MatchResult:
    """The :class:`MatchResult` of a finished game at ``state`` (its ``end``, ``turn`` and
    ``truncated``): how it ended (an illegal action, a time forfeit, or the state's end), the
    win shares, and the match's records. Shared by the match loop and the compiled learner's game."""
    scores = tuple(int(s) for s in scores)
    if illegal is not None:
        end = "illegal"
    elif forfeit is not None:
        end = "time"
    else:
        end = state.end.name.lower() if hasattr(state.end, "name") else str(state.end)
    return MatchResult(
        scores=scores,
        rewards=tuple(rewards),
        shares=tuple(forfeit_shares(len(scores), forfeit.seat) if forfeit else win_shares(scores)),
        turns=int(state.turn),
        end=end,
        truncated=end not in ("illegal", "time") and bool(state.truncated),
        actions=tuple(actions),
        decisions=tuple(decisions),
        think_seconds=tuple(think),
        illegal=illegal,
        forfeit=forfeit,
    )


__all__ = [
    "ILLEGAL_ACTION_MODES",
    "RESET_OPTIONS",
    "Forfeit",
    "IllegalAction",
    "Match",
    "MatchResult",
    "action_id",
    "check_illegal_action",
    "check_move_seconds",
    "check_reset_options",
    "check_seed",
    "finished_result",
    "forfeit_shares",
    "not_an_action_id",
    "play_game",
    "start_position",
]
