"""Each game in the browser is a session: a game on the match loop (a person at some seats,
agents at the others, or agents only) or the replay of a record. :class:`SessionStore`
holds them, at most ``limit`` at once, and drops a session idle for ``idle_seconds``.

Who may see what (R10). While a person plays (a session with a person's seat whose game
is not over), a request sees the position only as one of the person's seats sees it
(:func:`~keltis_env.web.views.seat_view`): another seat's view or the full state is
refused, and so is the analysis of a seat the person does not play. Watching agents,
replaying a record, or once the game is over, any seat's view and the full state may be
asked for. The record of such a game names its deal (its seed), which tells every hidden
card: while a person plays it is never sent (:meth:`Session.downloadable`), only saved on
the server (:class:`~keltis_env.web.records.SaveFolder`), and the person is told the file's
name.

Who holds a session. A session's token is given once, to the browser that opened it (the
app's cookie); the server keeps only its hash. Changing a session, and any request while a
person plays, needs it (:meth:`Session.holds`). The store keeps every open session in the
save folder's ``live/`` (:class:`~keltis_env.web.records.LiveFolder`) after each change,
and :func:`restore` opens them again when the server restarts.

Every refusal is a :class:`~keltis_env.web.errors.WebError` and changes nothing.
Requests on one session are served one at a time: one that arrives while agents decide
is refused as busy (409), never queued behind them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .agents import HUMAN, Agents
from .errors import BAD_REQUEST, CONFLICT, FORBIDDEN, NOT_FOUND, TOO_MANY, UNPROCESSABLE, WebError
from .jobs import JobSlots, SearchJob
from .records import LiveFolder
from .views import full_view, mask, moves, seat_view
from .workers import AgentProcessError, AgentRaisedError, AgentWorker, ProcessEndedError

#: the most moves kept in a game's log of recent moves
LOG_LENGTH = 200
FULL = "full"
#: the bits of the operating system's randomness a random deal is drawn from (``secrets``)
SEED_BITS = 128
#: the largest seed a person may choose (what a page's number holds exactly: 2**53 - 1)
MAX_CHOSEN_SEED = 2**53 - 1
#: the bits of an agent's own random seed, drawn apart from the deal's
AGENT_SEED_BITS = 64
_WHOLE = re.compile(r"-?[0-9]{1,18}")


@dataclass(frozen=True)
class Settings:
    """What every session of a server shares: the agents, the per-move limit (``None``: no
    limit), the time an analysis may take, whether a failing agent's traceback is printed
    on the server's standard error, the search's rollouts per position (``None``: its
    default, :func:`~keltis_env.web.analysis.search_spec`) and the whole-game searches that may run
    at once (:class:`~keltis_env.web.jobs.JobSlots`)."""

    agents: Agents
    move_seconds: float | None = 5.0
    analysis_seconds: float = 10.0
    traceback: bool = False
    search_iterations: int | None = None
    search_jobs: int = 2

    def search_spec(self, game: str) -> str:
        """The search every analysis in ``game`` asks (one position's, a whole game's)."""
        from .analysis import search_spec

        return search_spec(game, self.search_iterations)


class Session:
    """What every session has: an id, its game, a lock, the time it was last used (on the
    store's clock, set by the store)."""

    kind = ""

    def __init__(self, game: Any, names: Sequence[str], key: str | None = None,
                 token_hash: str | None = None) -> None:
        self.id = key or secrets.token_urlsafe(12)
        self.game = game
        self.names = list(names)
        self.lock = threading.Lock()
        self.last_used = 0.0
        self.record: Any = None  # the game's record (its deal and moves so far)
        self.analyses: dict[int, dict[str, Any]] = {}  # position -> the analysis asked there (for the export)
        self.searches: dict[int, dict[str, Any]] = {}  # position -> the search's answer there (a replay's)
        # The token that holds the session (its person's seats, and the right to change it) is
        # given once, to the browser that opened it (a cookie); the server keeps only its hash.
        self.token: str | None = None
        if token_hash is None:
            self.token = secrets.token_urlsafe(24)
            token_hash = _digest(self.token)
        self.token_hash = token_hash

    @property
    def url(self) -> str:
        """The session's address in the page (a reload, a second tab or a link opens it)."""
        return f"/games/{self.id}"

    def holds(self, token: str | None) -> bool:
        """Whether ``token`` is this session's."""
        return token is not None and hmac.compare_digest(_digest(token), self.token_hash)

    def snapshot(self) -> dict[str, Any]:
        """What :func:`restore` needs to open the session again after a restart (a subclass adds its own)."""
        return {"kind": self.kind, "id": self.id, "token_hash": self.token_hash, "record": self.record_dict()}

    @contextmanager
    def using(self) -> Iterator[None]:
        """Serve one request: refused as busy while another is being served."""
        if not self.lock.acquire(blocking=False):
            raise WebError(CONFLICT, f"game {self.id} is busy (an agent is deciding); try again in a moment")
        try:
            yield
        finally:
            self.lock.release()

    @property
    def private(self) -> bool:
        """A person plays and the game is not over: only their seats may be seen."""
        return False

    def record_dict(self) -> dict[str, Any]:
        """The game's record so far, in the project's record format (it names the deal)."""
        data: dict[str, Any] = self.record.to_dict()
        return data

    def downloadable(self) -> dict[str, Any]:
        """The record to send: refused while a person plays (it would tell them every hidden card)."""
        if self.private:
            raise WebError(FORBIDDEN, f"the record of an unfinished game names its deal, so while a person plays it "
                                      f"is only saved on the server: POST /api/games/{self.id}/save")
        return self.record_dict()

    def close(self) -> None:
        """Stop what the session runs besides the server (its agents' worker); idempotent."""

    def export(self) -> str:
        """The replay file of the game (:mod:`.export`): refused while a person plays, as the record is."""
        from keltis_env.core.game import load_record

        from .export import replay_html

        return replay_html(load_record(self.downloadable()), self.analyses, self.searches)

    def save_name(self) -> str:
        """The file name a save of this session gets: the game and the session's id (never a request's words)."""
        return f"{self.game.name}-{self.id}.json"

    def _viewer(self, seat: Any, state: Any, default: int | str) -> int | str:
        """The seat (or ``"full"``) a request asks to see, checked against who may see what."""
        if seat is None or seat == "":
            return default
        if seat == FULL:
            if self.private:
                raise WebError(FORBIDDEN, "the full state is hidden while a person plays; ask for your own seat")
            return FULL
        number = _integer(seat)
        if number is None or not 0 <= number < state.num_players:
            raise WebError(BAD_REQUEST, f"seat must be 0..{state.num_players - 1} or {FULL!r}, got {shown(seat)}")
        return number

    def _position(self, state: Any, viewer: int | str) -> dict[str, Any]:
        """The parts of a response every session sends for ``state`` seen by ``viewer``."""
        over = bool(state.is_over)
        return {
            "id": self.id, "kind": self.kind, "game": self.game.name, "players": state.num_players,
            "names": self.names, "to_move": int(state.current), "phase": state.phase.name.lower(),
            "turn": int(state.turn), "over": over, "end": state.end.name.lower() if over else None,
            "scores": list(state.scores()), "viewer": viewer,
            "view": full_view(state) if viewer == FULL else seat_view(state, int(viewer)),
        }


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def _integer(value: Any) -> int | None:
    """An int from an int or a string of at most 18 ASCII digits (a query parameter);
    ``None`` otherwise (a bool, a float, other text, a number too long to be a seat or step)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return int(value.strip())
    return None


def shown(value: Any, limit: int = 40) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters (a request's words may be long)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class GameSession(Session):
    """A game on the match loop: ``seats[p]`` is :data:`~keltis_env.web.agents.HUMAN` or
    the name of an offered agent. ``kind`` is ``"play"`` with a person, else ``"watch"``."""

    def __init__(self, game: Any, seats: Sequence[str], seed: int | None, settings: Settings, key: str | None = None,
                 token_hash: str | None = None, position: Any = None) -> None:
        from keltis_env.core.match import Match

        n = len(seats)
        super().__init__(game, [HUMAN if s == HUMAN else s for s in seats], key, token_hash)
        self.seats = list(seats)
        self.humans = [p for p, s in enumerate(seats) if s == HUMAN]
        self.kind = "play" if self.humans else "watch"
        self.seed = seed
        self.settings = settings
        self.message: str | None = None  # why the game stopped early (an agent failed or ran out of time)
        if position is not None:  # a game from a position (its hidden part dealt anew): the record starts there
            self.record = game.record_cls(config=position.config, start_state=position.to_dict(), players=self.names)
            self.state = self.record.initial_state()
        else:
            assert seed is not None
            self.record, self.state = game.record_cls.start(game.make_config(num_players=n), seed, players=self.names)
        limit = settings.move_seconds
        # Each agent's own randomness is drawn apart from the deal: nothing it is given tells the seed.
        seeds = {p: secrets.randbits(AGENT_SEED_BITS) for p in range(n)}
        apart = {p: (s, seeds[p]) for p, s in enumerate(seats) if settings.agents.apart(s, game.name, n)}
        self.bots: dict[int, Any] = {p: settings.agents.make(s, game.name, n, seeds[p], limit)
                                     for p, s in enumerate(seats) if s != HUMAN and p not in apart}
        self.worker: AgentWorker | None = None
        if apart:
            self.worker = AgentWorker(game.name, n, apart)
            try:
                self.worker.start()
            except AgentProcessError as exc:
                seat = exc.seat if exc.seat is not None else min(apart)
                how = str(exc) if isinstance(exc, ProcessEndedError) else self._failed(exc)
                self.message = f"{self.label(seat)} could not be made for the game: {how}; the game ends here"
            self.bots.update({p: self.worker.bot(p, seats[p], limit) for p in apart})
        controllers = [self.bots.get(p) for p in range(n)]
        self.match = Match(game, self.state, controllers, record=True, move_seconds=limit, guard=True)
        self.record.actions = self.match.actions
        self.log: list[dict[str, Any]] = []

    # ---------------------------------------------------------------- state
    @property
    def over(self) -> bool:
        return self.message is not None or self.match.over

    @property
    def private(self) -> bool:
        return bool(self.humans) and not self.over

    def label(self, seat: int) -> str:
        return f"player {seat} ({self.seats[seat]})"

    def describe(self, seat: Any = None) -> dict[str, Any]:
        """The game as ``seat`` sees it (default: the person to move, else the person's
        first seat; with no person, the full state)."""
        state = self.state
        default: int | str = FULL
        if self.humans:
            default = state.current if state.current in self.humans else self.humans[0]
        viewer = self._viewer(seat, state, default)
        if self.private and viewer not in self.humans:
            raise WebError(FORBIDDEN, f"seat {viewer} is not yours: while you play you see only your own seats "
                                      f"({', '.join(map(str, self.humans))})")
        out = self._position(state, viewer)
        to_move = int(state.current)
        human_turn = not self.over and to_move in self.humans
        legal = state.legal_actions() if human_turn and viewer == to_move else []
        out.update({
            "url": self.url,
            "over": self.over, "seats": self.seats, "humans": self.humans, "seed": None if self.private else self.seed,
            "message": self.message, "step": len(self.match.actions), "log": self.log[-LOG_LENGTH:],
            "waiting": not self.over and not human_turn,  # agents are to move: POST .../advance
            "moves": moves(self.game, legal), "mask": mask(self.game, legal) if legal else None,
        })
        return out

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "seats": self.seats, "message": self.message}

    def replay_moves(self, actions: Sequence[int]) -> None:
        """Make ``actions`` again from the deal (a kept game, after a restart)."""
        for action in actions:
            if self.over:
                break
            seat = int(self.state.current)
            self.match.step(int(action))
            self._note(seat, int(action))
        self._settle()

    # ---------------------------------------------------------------- moves
    def act(self, action: Any, seat: Any = None, step: Any = None) -> dict[str, Any]:
        """Play a person's move: ``action`` is an action id or its text; ``seat`` (if given)
        must be the seat to move, so that a stale page cannot move for another seat; ``step``
        (if given) the number of moves made when it was chosen, so that a second click, or a
        tab that has not seen the last move, plays nothing (409) instead of a move meant for
        an earlier position."""
        state = self.state
        n = state.num_players
        chosen_seat = _integer(seat) if seat is not None else None
        if seat is not None and (chosen_seat is None or not 0 <= chosen_seat < n):
            raise WebError(BAD_REQUEST, f"seat must be a seat number 0..{n - 1} (the seat to move), got {shown(seat)}")
        at = _integer(step) if step is not None else None
        if step is not None and (at is None or at < 0):
            raise WebError(BAD_REQUEST, f"step must be the number of moves made when the move was chosen (a whole "
                                        f"number >= 0), got {shown(step)}")
        number = self._action_id(action)
        if self.over:
            raise WebError(CONFLICT, "the game is over; no more moves")
        made = len(self.match.actions)
        if at is not None and at != made:
            raise WebError(CONFLICT, f"the game has moved on: this move was chosen at step {at}, and the game is at "
                                     f"step {made}; reload the game to see its position")
        to_move = int(state.current)
        if to_move not in self.humans:
            raise WebError(CONFLICT, f"it is {self.label(to_move)}'s move, not a person's; POST .../advance")
        if chosen_seat is not None and chosen_seat != to_move:
            raise WebError(CONFLICT, f"it is seat {to_move}'s move, not seat {chosen_seat}'s")
        reason = state.illegal_reason(number)
        if reason is not None:
            raise WebError(UNPROCESSABLE, f"illegal move {self.game.action_to_string(number)!r}: {reason}")
        self.match.step(number)
        self._note(to_move, number)
        self._settle()
        return self.describe(to_move)

    def _action_id(self, action: Any) -> int:
        """An action id from an id or a move's text; a malformed one is refused."""
        n = self.game.num_actions
        if isinstance(action, str):
            try:
                return int(self.game.string_to_action(action))
            except ValueError as exc:
                raise WebError(BAD_REQUEST, f"malformed action: {str(exc)[:300]}") from None
        if isinstance(action, bool) or not isinstance(action, int) or not 0 <= action < n:
            raise WebError(BAD_REQUEST, f"malformed action {shown(action)}: an action is an id 0..{n - 1} or a move's "
                                        f"text such as {self.game.action_to_string(0)!r}")
        return action

    def _note(self, seat: int, action: int) -> None:
        self.log.append({"step": len(self.match.actions), "seat": seat,
                         "text": self.game.action_to_string(action)})
        del self.log[:-LOG_LENGTH]

    def advance(self, steps: Any = None) -> dict[str, Any]:
        """Let the agents move: ``steps`` moves at most (default: until a person is to move or
        the game is over). An agent that fails or runs out of time ends the game with a message."""
        limit = _integer(steps) if steps is not None else None
        if steps is not None and (limit is None or limit < 1):
            raise WebError(BAD_REQUEST, f"steps must be a whole number >= 1 (or left out), got {shown(steps)}")
        if self.over:
            raise WebError(CONFLICT, "the game is over; no more moves")
        if int(self.state.current) in self.humans:
            raise WebError(CONFLICT, f"it is a person's move (seat {self.state.current}); POST .../act")
        done = 0
        while not self.over and int(self.state.current) not in self.humans and (limit is None or done < limit):
            before = len(self.match.actions)
            seat = int(self.state.current)
            self._play_one(seat)
            if len(self.match.actions) > before:
                self._note(seat, self.match.actions[-1])
                done += 1
        self._settle()
        return self.describe()

    def _settle(self) -> None:
        """Once the game is over, its agents' worker is no longer needed."""
        if self.over:
            self.close()

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def _play_one(self, seat: int) -> None:
        """One agent decision on the match loop; a failure becomes the game's message."""
        from keltis_env.core.errors import ActionError, ControllerError

        decided = len(self.match.actions)
        try:
            self.match.play(stop=lambda state: len(self.match.actions) > decided)
        except ControllerError as exc:
            cause = exc.__cause__
            self.message = f"{self.label(exc.seat)} {self._failed(cause or exc)}; the game ends here"
            trace = getattr(cause, "trace", None) or exc.trace
            if self.settings.traceback and trace:
                print(f"keltis serve: game {self.id}: {self.message}\n{trace.rstrip()}", file=sys.stderr)
        except ActionError as exc:
            self.message = f"{self.label(seat)} chose an illegal action: {exc}; the game ends here"
        forfeit = self.match.forfeit
        if forfeit is not None and self.message is None:
            stopped = getattr(self.bots.get(forfeit.seat), "stopped_on_time", False)
            self.message = (f"{self.label(forfeit.seat)} took {forfeit.seconds:.2f} s on a move, over the limit of "
                            f"{forfeit.limit:g} s: it loses the game on time"
                            + ("; its process was stopped" if stopped else ""))

    @staticmethod
    def _failed(exc: BaseException) -> str:
        """What a failing agent did, as a phrase: ``raised ValueError: ...``, ``called
        sys.exit()``, or how its worker process ended."""
        from keltis_env.core.errors import ControllerError
        from keltis_env.evaluation.play import failed_text

        if isinstance(exc, ProcessEndedError):
            return f"failed: {exc}"
        if isinstance(exc, (ControllerError, AgentRaisedError)):
            return failed_text(exc)
        return failed_text(ControllerError.of(-1, "", exc))

    # ---------------------------------------------------------------- analysis
    def analysis(self) -> dict[str, Any]:
        """The analysis of the seat to move (while a person plays, only of a person's seat)."""
        from .analysis import analyse

        if self.over:
            raise WebError(CONFLICT, "the game is over; there is no move to analyse")
        seat = int(self.state.current)
        if self.private and seat not in self.humans:
            raise WebError(FORBIDDEN, f"while you play, the analysis is for your own seats only; "
                                      f"{self.label(seat)} is to move")
        policy = self.settings.agents.policy_spec(self.game.name, self.state.num_players)
        result = analyse(self.game, self.state.clone(), policy, self.settings.analysis_seconds,
                         self.settings.search_spec(self.game.name))
        self.analyses[len(self.match.actions)] = result
        return result


class ReplaySession(Session):
    """The replay of a record: every position of it, any seat's view or the full state; the
    search's answers at its positions (``searches``: those of the whole-game search
    and of the analyses asked, which are the same), kept with it."""

    kind = "replay"

    def __init__(self, record: Any, settings: Settings, source: str, key: str | None = None,
                 token_hash: str | None = None, searches: Any = None) -> None:
        from keltis_env.core.game import get_game

        n = record.config.num_players
        super().__init__(get_game(record.GAME), record.players or [f"player {p}" for p in range(n)], key, token_hash)
        self.record = record
        self.source = source
        self.settings = settings
        self.states = record.states()
        self.reviews: dict[str, dict[str, Any]] = {}  # policy -> its review of the whole game
        self.search_spec = settings.search_spec(self.game.name)
        self.job: SearchJob | None = None
        if isinstance(searches, dict):  # kept before a restart: only the answers of this search, at this game's moves
            for k, answer in searches.items():
                number = _integer(k)
                if (number is not None and 0 <= number < len(self.record.actions) and isinstance(answer, dict)
                        and answer.get("agent") == self.search_spec):
                    self.searches[number] = answer

    def position(self, step: Any) -> int:
        """The position ``step`` names (0..the record's moves), else a refusal."""
        return self._step(step)

    def _step(self, step: Any) -> int:
        last = len(self.states) - 1
        number = last if step is None or step == "" else _integer(step)
        if number is None or not 0 <= number <= last:
            raise WebError(BAD_REQUEST, f"step must be 0..{last} (the record's positions), got {shown(step)}")
        return number

    def describe(self, seat: Any = None, step: Any = None) -> dict[str, Any]:
        """The position after ``step`` moves (default: the end) as ``seat`` sees it (default: full)."""
        number = self._step(step)
        state = self.states[number]
        out = self._position(state, self._viewer(seat, state, FULL))
        texts = [self.game.action_to_string(a) for a in self.record.actions]
        out.update({
            "url": f"{self.url}?step={number}",
            "seats": self.names, "humans": [], "message": None, "waiting": False, "source": self.source,
            "step": number, "steps": len(self.states) - 1, "seed": self.record.seed,
            "next": texts[number] if number < len(texts) else None,
            "log": [{"step": i + 1, "seat": int(self.states[i].current), "text": texts[i]}
                    for i in range(max(0, number - LOG_LENGTH), number)],
            "moves": [], "mask": None,
        })
        return out

    def snapshot(self) -> dict[str, Any]:
        searches = {str(k): v for k, v in sorted(dict(self.searches).items())}
        return {**super().snapshot(), "source": self.source, "searches": searches}

    def close(self) -> None:
        if self.job is not None:
            self.job.cancel()

    # ---------------------------------------------------------------- the whole-game search
    def start_search(self, slots: JobSlots, ended: Callable[[], None]) -> dict[str, Any]:
        """Start the search of every decision not yet searched (:class:`~.jobs.SearchJob`),
        unless it runs already or every one is searched; ``ended()`` once it is over."""
        if not (self.job is not None and self.job.running) and self._searched_count() < len(self.record.actions):
            job = SearchJob(self.game, self.states, list(self.record.actions), self.search_spec,
                            self.settings.analysis_seconds, self.searches, slots, ended)
            job.start()
            self.job = job
        return self.search_status()

    def cancel_search(self) -> dict[str, Any]:
        """Stop the running search before its next position (and wait for it, a position's time at most)."""
        if self.job is None or not self.job.running:
            raise WebError(CONFLICT, "no search of the whole game runs for this replay")
        self.job.cancel(wait=self.settings.analysis_seconds)
        return self.search_status()

    def _searched_count(self) -> int:
        return sum(1 for k in list(self.searches) if k < len(self.record.actions))

    def search_status(self) -> dict[str, Any]:
        """How far the search of every decision has come: ``state`` (``running``; ``done``:
        every decision searched; ``idle``), ``done`` and ``total`` (decisions), the search
        (``agent``), why it stopped early (``message``), and the ``marks`` of every move
        (:func:`~.analysis.search_mark`, ``null`` where its position is not searched yet)."""
        from .analysis import search_mark

        actions = self.record.actions
        total = len(actions)
        done = self._searched_count()
        running = self.job is not None and self.job.running
        state = "running" if running else "done" if done >= total else "idle"
        marks = []
        for k, action in enumerate(actions):
            played = self.game.action_to_string(action)
            marks.append({"step": k + 1, "seat": int(self.states[k].current), "played": played,
                          "search": search_mark(self.searches.get(k), played)})
        return {"state": state, "done": done, "total": total, "agent": self.search_spec,
                "message": None if self.job is None or running else self.job.message, "marks": marks}

    def review(self, policy: Any = None) -> dict[str, Any]:
        """The policy's value over the whole game and its view of every move (:func:`.analysis.review`):
        ``policy`` is an offered ``ppo:`` agent (default: the analysis's policy); each move
        with the search's mark where its position was searched (:meth:`start_search`, or its
        analysis asked)."""
        from .analysis import review, search_mark

        n = self.record.config.num_players
        spec = policy if policy not in (None, "") else self.settings.agents.policy_spec(self.game.name, n)
        offered = [s for s in self.settings.agents.offered(self.game.name, n) if s.startswith("ppo:")]
        if spec is None or spec not in offered:
            raise WebError(BAD_REQUEST, f"policy must be one of the offered policies for {self.game.name} with {n} "
                                        f"players: {', '.join(offered) or 'none'}; got {shown(policy)}")
        if spec not in self.reviews:
            try:
                self.reviews[spec] = review(spec, self.game, self.states, list(self.record.actions),
                                            3 * self.settings.analysis_seconds)
            except TimeoutError as exc:
                raise WebError(CONFLICT, f"the review of the game by {spec} {exc}; try again") from None
        moves = [{**move, "search": search_mark(self.searches.get(move["step"] - 1), move["played"])}
                 for move in self.reviews[spec]["moves"]]
        return {**self.reviews[spec], "moves": moves}

    def analysis(self, step: Any = None) -> dict[str, Any]:
        from .analysis import analyse

        number = self._step(step)
        state = self.states[number]
        if state.is_over:
            raise WebError(CONFLICT, "the game is over at this step; there is no move to analyse")
        policy = self.settings.agents.policy_spec(self.game.name, state.num_players)
        known = self.searches.get(number)
        result = analyse(self.game, state.clone(), policy, self.settings.analysis_seconds, self.search_spec,
                         known if known is not None and "error" not in known else None)
        search = result["search"]
        if isinstance(search, dict) and "error" not in search:  # what the whole-game search would find here
            self.searches[number] = search
        self.analyses[number] = result
        return result


class SessionStore:
    """The sessions of a server: at most ``limit`` at once; one unused for ``idle_seconds``
    is dropped, at the next request or by the app's timer, every ``sweep_seconds`` (a
    tenth of the idle time, at most a minute). ``clock`` is for tests."""

    def __init__(self, limit: int = 32, idle_seconds: float = 1800.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.idle_seconds = idle_seconds
        self.sweep_seconds = min(60.0, max(0.05, idle_seconds / 10))
        self.clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.live: LiveFolder | None = None  # where sessions are kept across restarts (None: nowhere)

    def keep_live(self, session: Session) -> None:
        """Write ``session`` into the live folder (after every change), if the store has one and
        still holds the session (a job that ends after its replay was closed keeps nothing)."""
        if self.live is not None and self._sessions.get(session.id) is session:
            self.live.write(session.id, session.snapshot())

    def _forget(self, session: Session) -> None:
        session.close()
        if self.live is not None:
            self.live.remove(session.id)

    def restore(self, settings: Settings, live: LiveFolder) -> list[str]:
        """Open again the sessions kept in ``live`` (the server restarted), up to the limit;
        from now on keep every session there. Returns what could not be restored, one line each."""
        problems = []
        for data in live.load():
            if len(self._sessions) >= self.limit:
                problems.append(f"{data['id']}: more kept games than --max-games {self.limit}; left in {live.folder}")
                continue
            try:
                session = restore(settings, data)
            except (WebError, ValueError, TypeError, KeyError) as exc:
                message = exc.message if isinstance(exc, WebError) else f"{type(exc).__name__}: {exc}"
                problems.append(f"{data['id']}: cannot be opened again: {message[:300]}")
                continue
            session.last_used = self.clock()
            self._sessions[session.id] = session
        self.live = live
        return problems

    def expire(self) -> None:
        """Drop and close the sessions idle for longer than ``idle_seconds`` (never one being served)."""
        now = self.clock()
        with self._lock:
            idle = [key for key, session in self._sessions.items()
                    if now - session.last_used > self.idle_seconds and not session.lock.locked()]
            dropped = [self._sessions.pop(key) for key in idle]
        for session in dropped:
            self._forget(session)

    def _full(self) -> WebError:
        return WebError(TOO_MANY, f"too many games at once (limit {self.limit}); close one "
                                  f"(DELETE /api/games/ID) or wait: a game unused for "
                                  f"{self.idle_seconds / 60:g} minutes is closed")

    def check_room(self) -> None:
        """Refuse (429) at once when the store is full, before a new session is made."""
        self.expire()
        with self._lock:
            if len(self._sessions) >= self.limit:
                raise self._full()

    def add(self, session: Session) -> Session:
        """Hold ``session``; one past the limit is closed and refused."""
        self.expire()
        with self._lock:
            full = len(self._sessions) >= self.limit
            if not full:
                session.last_used = self.clock()
                self._sessions[session.id] = session
        if full:
            session.close()
            raise self._full()
        return session

    def keep(self, session: Session, answer: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The new ``session``'s first ``answer()``, and the session held; if the answer
        fails (or the store is full) the session is closed and not held: a refused request
        leaves nothing behind."""
        try:
            data = answer()
            json.dumps(data, ensure_ascii=False).encode("utf-8")  # what the response will be: it must encode
        except UnicodeEncodeError:
            session.close()
            raise WebError(UNPROCESSABLE, "the game's text is not Unicode (a lone surrogate)") from None
        except BaseException:
            session.close()
            raise
        self.add(session)
        self.keep_live(session)
        return data

    def get(self, key: str) -> Session:
        self.expire()
        with self._lock:
            session = self._sessions.get(key)
        if session is None:
            raise WebError(NOT_FOUND, f"unknown game {key!r}: it never existed, was closed, or expired after "
                                      f"{self.idle_seconds / 60:g} idle minutes")
        session.last_used = self.clock()
        return session

    def remove(self, key: str) -> None:
        """Drop and close the session ``key`` (its agents' worker is stopped even while it decides)."""
        self.get(key)
        with self._lock:
            session = self._sessions.pop(key, None)
        if session is not None:
            self._forget(session)

    def close_all(self) -> None:
        """Drop and close every session (the server stops; the kept ones stay kept)."""
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()

    def __len__(self) -> int:
        return len(self._sessions)


def new_game(settings: Settings, body: Any, start: tuple[Any, Any] | None = None) -> GameSession:
    """A game from a request body ``{"game", "players", "seats": [...], "seed"}``: ``game``
    is required; ``seats`` names :data:`~keltis_env.web.agents.HUMAN` or an offered agent
    per seat (default: a person at seat 0, the default agent elsewhere); ``seed`` default: a
    random deal from :data:`SEED_BITS` bits of the operating system's randomness.

    ``start``, ``(game, state)``: a replay's position (``from`` in the body): the game starts there instead,
    with what a person's seat may not know there dealt anew (the game's ``sample_state`` for
    that seat's view, from the operating system's randomness), so a replay's full state
    tells nothing of the new game's hidden cards or dice."""
    from keltis_env.core.game import game_names, get_game

    if not isinstance(body, dict):
        raise WebError(BAD_REQUEST, "a new game is a JSON object {game, players, seats, seed}")
    unknown = sorted(set(body) - {"game", "players", "seats", "seed", "from"})
    if unknown:
        raise WebError(BAD_REQUEST, f"unknown field(s) {shown(unknown, 200)}; a new game has game, players, seats, "
                                    "seed, from")
    if start is not None:
        origin, position = start
        if body.get("game", origin.name) != origin.name or body.get("players", position.num_players) != (
                position.num_players):
            raise WebError(BAD_REQUEST, f"the position is of {origin.name} with {position.num_players} players; "
                                        "leave game and players out, or name those")
        if body.get("seed") is not None:
            raise WebError(BAD_REQUEST, "a game from a replay's position has no seed: its hidden part is dealt anew")
        body = {**body, "game": origin.name, "players": position.num_players}
    name = body.get("game")
    if name is None:
        raise WebError(BAD_REQUEST, f"a new game names its game: {{\"game\": {' or '.join(map(repr, game_names()))}, "
                                    "...}")
    if not isinstance(name, str) or name not in game_names():
        raise WebError(BAD_REQUEST, f"unknown game {shown(name)}; games are {', '.join(game_names())}")
    game = get_game(name)
    seats = body.get("seats")
    players = body.get("players", len(seats) if isinstance(seats, list) else 2)
    if isinstance(players, bool) or not isinstance(players, int) or not (
            game.min_players <= players <= game.max_players):
        raise WebError(BAD_REQUEST, f"players must be {game.min_players}..{game.max_players} for {name}, "
                                    f"got {shown(players)}")
    if seats is None:
        seats = [HUMAN] + [settings.agents.default(name, players)] * (players - 1)
    if not isinstance(seats, list) or len(seats) != players:
        raise WebError(BAD_REQUEST, f"seats must be a list of {players} names ({HUMAN!r} or an agent), "
                                    f"got {shown(seats, 200)}")
    for seat in seats:
        if seat != HUMAN:
            settings.agents.check(seat, name, players)
    if start is not None:
        position = start[1]
        humans = [p for p, s in enumerate(seats) if s == HUMAN]
        if humans:  # what the person's seat may not know is dealt anew: the replay showed the old deal
            seat = int(position.current) if int(position.current) in humans else humans[0]
            position = game.sample_state(position.view(seat), random.Random(secrets.randbits(SEED_BITS)))
        return GameSession(game, seats, None, settings, position=position)
    seed = body.get("seed")
    if seed is None:
        seed = secrets.randbits(SEED_BITS)  # far too many deals to find one from what a seat sees
    elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_CHOSEN_SEED:
        raise WebError(BAD_REQUEST, f"seed must be a whole number 0..2**53-1 or null (a random deal), "
                                    f"got {shown(seed)}")
    return GameSession(game, seats, seed, settings)


def restore(settings: Settings, data: dict[str, Any]) -> GameSession | ReplaySession:
    """A session kept by :meth:`SessionStore.keep_live`, opened again: a replay as it was, a
    game from its deal with its moves made again (its agents made anew, with new seeds)."""
    from keltis_env.core.game import get_game

    key, token_hash = str(data["id"]), str(data["token_hash"])
    if data["kind"] == "replay":
        return load_replay(settings, data["record"], str(data["source"]), key, token_hash, data.get("searches"))
    record = _record(data["record"], "a kept game")
    seats = list(data["seats"])
    game = get_game(record.GAME)
    for seat in seats:
        if seat != HUMAN:
            settings.agents.check(seat, game.name, len(seats))
    position = record.initial_state() if record.seed is None else None
    session = GameSession(game, seats, record.seed, settings, key, token_hash, position)
    if data.get("message") is not None:
        session.message = str(data["message"])
    session.replay_moves(record.actions)
    return session


def _record(data: Any, source: str) -> Any:
    from keltis_env.core.errors import RecordError
    from keltis_env.core.game import load_record

    try:
        return load_record(data)
    except RecordError as exc:
        raise WebError(UNPROCESSABLE, f"not a valid game record ({source}): {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:  # a field of a shape the validator did not expect
        raise WebError(UNPROCESSABLE, f"not a valid game record ({source}): {exc}") from None


def load_replay(settings: Settings, data: Any, source: str, key: str | None = None,
                token_hash: str | None = None, searches: Any = None) -> ReplaySession:
    """A replay of the record ``data`` (a dict); a record that fails validation is refused.
    ``searches``: the search's answers kept with it (by position)."""
    return ReplaySession(_record(data, source), settings, source, key, token_hash, searches)


__all__ = ["FULL", "LOG_LENGTH", "GameSession", "ReplaySession", "Session", "SessionStore", "Settings",
           "load_replay", "new_game", "restore"]
