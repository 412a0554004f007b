"""The agents a page may seat, by name, and how the app runs them.

A page never names a file, a ``py:`` module or a policy path of its own choosing: it
chooses among the names :meth:`Agents.offered` lists for a game and player count, and
the app makes the bot from the spec behind that name. The names are

* the bundled bots of the game that need no file (``random``, ``heuristic``, ...);
* the shipped policy of that game and player count, ``ppo:policies/<game>_<n>p.zip``,
  where the package ships one;
* the agent specs given on the command line (``keltis serve --agent SPEC``), each offered
  for the games and player counts it was checked to fit when the server started.

The bundled agents play in the server's process under :class:`TimedBot`: a move is
computed in a thread of its own and waited for at most the per-move limit, so one that
runs over loses its game on time (the match loop's :class:`~keltis_env.core.match.Forfeit`)
and the server goes on. The agents named on the command line run code the server cannot
trust (:meth:`Agents.apart`): they play in a process of their own per game
(:mod:`keltis_env.web.workers`), which is killed when it runs over, and whose death ends
only its game.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import Any

from .errors import BAD_REQUEST, WebError

#: a seat a person plays
HUMAN = "human"
#: how long past the limit a move is waited for before it is judged over time (thread start-up)
GRACE_SECONDS = 0.05


def shipped_policy(game: str, num_players: int) -> str | None:
    """The agent spec of the policy the package ships for ``game`` and ``num_players``, if any."""
    from keltis_env.data import shipped

    relative = f"policies/{game}_{num_players}p.zip"
    return f"ppo:{relative}" if shipped(relative) is not None else None


class Agents:
    """The agents of one server: the bundled ones and ``specs`` from the command line.

    ``specs`` are checked when this is made: each must fit at least one game and player
    count (:func:`keltis_env.bots.check_spec`), else a ``ValueError`` names the spec and
    why it fits none."""

    def __init__(self, specs: Sequence[str] = ()) -> None:
        self.specs = list(dict.fromkeys(specs))
        self._bundled: dict[tuple[str, int], list[str]] = {}
        self._warm: set[tuple[str, str, int]] = set()
        self._warm_lock = threading.Lock()
        self.fits: dict[str, set[tuple[str, int]]] = {}
        for spec in self.specs:
            self.fits[spec] = self._check(spec)

    @staticmethod
    def _check(spec: str) -> set[tuple[str, int]]:
        from keltis_env.bots import check_spec
        from keltis_env.core.game import get_game

        fits, reasons = set(), []
        for game in _games():
            descriptor = get_game(game)
            for n in range(descriptor.min_players, descriptor.max_players + 1):
                try:
                    check_spec(spec, game, n)
                except Exception as exc:  # a py: agent's own code may raise anything
                    reasons.append(f"{game} with {n} players: {exc}")
                else:
                    fits.add((game, n))
        if not fits:
            raise ValueError(f"--agent {spec!r} fits no game and player count; {reasons[0]}")
        return fits

    def bundled(self, game: str, num_players: int) -> list[str]:
        """The bundled agents of ``game`` for ``num_players``: its bots that need no file,
        then its shipped policy."""
        from keltis_env.bots import bot_names, make_bot

        key = (game, num_players)
        if key not in self._bundled:
            names = []
            for name in bot_names(game):
                try:
                    make_bot(name, seed=0, game=game, num_players=num_players)
                except Exception:  # a bot that needs a file (ppo, rllib) or a library not installed
                    continue
                names.append(name)
            policy = shipped_policy(game, num_players)
            self._bundled[key] = names + ([policy] if policy is not None else [])
        return list(self._bundled[key])

    def offered(self, game: str, num_players: int) -> list[str]:
        """Every agent name a page may seat in a game of ``game`` with ``num_players``."""
        mine = [spec for spec in self.specs if (game, num_players) in self.fits[spec]]
        return list(dict.fromkeys(self.bundled(game, num_players) + mine))

    def default(self, game: str, num_players: int) -> str:
        """The agent a seat gets unless the page names one: ``heuristic`` where the game has it."""
        offered = self.offered(game, num_players)
        return "heuristic" if "heuristic" in offered else offered[0]

    def check(self, name: Any, game: str, num_players: int) -> str:
        """``name`` if it is offered for this game, else a :class:`WebError` listing the offered names."""
        offered = self.offered(game, num_players)
        if not isinstance(name, str) or name not in offered:
            raise WebError(BAD_REQUEST, f"unknown agent {name!r} for {game} with {num_players} players; "
                                        f"agents are {HUMAN!r} or one of: {', '.join(offered)}")
        return name

    def apart(self, name: str, game: str, num_players: int) -> bool:
        """Whether the agent ``name`` plays in a process of its own (:mod:`.workers`): every
        agent named on the command line, except one that is also a bundled agent."""
        return name != HUMAN and name not in self.bundled(game, num_players)

    def make(self, name: str, game: str, num_players: int, seed: int, limit: float | None) -> TimedBot:
        """The bot behind the offered ``name``, under the per-move ``limit``, warmed up
        (:meth:`warm`) so that its first timed move pays for no loading."""
        from keltis_env.bots import make_bot

        self.check(name, game, num_players)
        self.warm(name, game, num_players)
        return TimedBot(make_bot(name, seed=seed, game=game, num_players=num_players), limit, name)

    def warm(self, name: str, game: str, num_players: int) -> None:
        """Pay, once per server process, what the first move of the agent ``name`` costs
        beyond a move (a policy's network and the compiled kernels it loads: seconds): a bot
        of the same spec, not the game's, plays one untimed move in a deal of its own."""
        key = (name, game, num_players)
        with self._warm_lock:
            if key in self._warm:
                return
            warm_up(name, game, num_players)
            self._warm.add(key)

    def policy_spec(self, game: str, num_players: int) -> str | None:
        """The policy the analysis asks: the first ``ppo:`` agent from the command line that
        fits, else the shipped policy."""
        for spec in self.specs:
            if spec.startswith("ppo:") and (game, num_players) in self.fits[spec]:
                return spec
        return shipped_policy(game, num_players)


def warm_up(spec: str, game: str, num_players: int) -> None:
    """One move of a fresh bot of ``spec`` in a deal no game plays (seed 0), for what its first
    move loads; what the bot raises is left to its first timed move to report."""
    from keltis_env.bots import make_bot
    from keltis_env.core.game import get_game

    descriptor = get_game(game)
    state = descriptor.state_cls.new_game(descriptor.make_config(num_players=num_players), 0)
    # a failure here is the game's own bot's too, and its first move reports it, under the limit
    with contextlib.suppress(Exception):
        make_bot(spec, seed=0, game=game, num_players=num_players).act(state.view(int(state.current)))


def _games() -> list[str]:
    from keltis_env.core.game import game_names

    return game_names()


class TimedBot:
    """A bot whose every move runs in a thread of its own and is waited for at most
    ``limit`` seconds (no limit: ``None``). A move still running then is abandoned: ``act``
    returns ``None`` after more than the limit, which the match loop (with the same
    ``move_seconds``) judges a loss on time. What the bot raises is raised again here, for
    the match loop's guard to report."""

    def __init__(self, bot: Any, limit: float | None, name: str) -> None:
        self.bot = bot
        self.limit = limit
        self.name = name
        self.abandoned = False  # a move ran over and its thread was left running

    def act(self, view: Any) -> Any:
        if self.limit is None:
            return self.bot.act(view)
        box: dict[str, Any] = {}

        def move() -> None:
            try:
                box["action"] = self.bot.act(view)
            except BaseException as exc:  # raised again in the match loop's thread
                box["error"] = exc

        thread = threading.Thread(target=move, name=f"agent {self.name}", daemon=True)
        thread.start()
        thread.join(self.limit + GRACE_SECONDS)
        if thread.is_alive():
            self.abandoned = True
            return None
        if "error" in box:
            raise box["error"]
        return box.get("action")

    def __repr__(self) -> str:
        return self.name


__all__ = ["GRACE_SECONDS", "HUMAN", "Agents", "TimedBot", "shipped_policy", "warm_up"]
