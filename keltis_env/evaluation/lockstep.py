"""Several games of an evaluation played at once, in lockstep, so that agents that decide
through a network share one forward pass (and games whose every agent has a compiled
kernel played whole by the kernels, :mod:`~keltis_env.evaluation.compiled_games`; with
``ppo`` agents and kernel bots, on the compiled core, :mod:`~keltis_env.evaluation.compiled_lockstep`).

A *batched* agent is a bot with ``batch_logits_each(obs)``, ``choose(legal, logits)``,
``encoder`` and ``network_key`` (:class:`~keltis_env.bots.ppo.PPOBot`). A group of games
(:data:`GROUP_SIZE` at most) is played by one process: each game runs under its own
:class:`~keltis_env.core.match.Match`, its other agents deciding there as in a game played
alone (the time limit and the guard included), until a batched agent is to move in it.
When no game can go on, the games waiting on the same network (``network_key``) are
encoded into one array, the network runs once on it, and each game's bot chooses its
action from its row of logits.

Nothing of a game depends on the others: each game has its own bots (a ``ppo`` bot is
twinned, :meth:`~keltis_env.bots.ppo.PPOBot.twin`: the same network, its own random
generator and encoder), seeded as when the game is played alone, and the network gives
each row the logits it gives that row alone (:meth:`~keltis_env.bots.ppo.PPOBot.batch_logits_each`).
So a game's moves, scores and record are those of the game played alone; only the
measured times differ. A batched decision is timed as a whole; each game it decides is
charged an equal share (its ``think_seconds``), and a share over the per-move limit loses
that game on time, judged when the forward pass returns.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from keltis_env.core.errors import StopRequest

from .compiled_games import play_compiled, playable
from .compiled_lockstep import lockstep_playable, play_lockstep
from .errors import AgentPlayError
from .play import finish_match, make_bots, match_failure, start_match
from .results import GameResult

#: the most games one process plays at once (the shared forward pass saves the per-call
#: costs; the network's work per game stays, so larger groups gain little)
GROUP_SIZE = 16


def batched(bot: Any) -> bool:
    """Whether ``bot`` decides through a network that games played at once can share."""
    return all(callable(getattr(bot, name, None)) for name in ("logits_of_moves", "choose")) and \
        hasattr(bot, "encoder") and hasattr(bot, "network_key")


def batched_spec(spec: Any) -> bool:
    """Whether the agent ``spec`` makes a batched bot (a ``ppo:`` spec), read from the spec alone."""
    if not isinstance(spec, str):
        return False
    from keltis_env.bots import parse_spec

    try:
        return parse_spec(spec)[0] == "ppo"
    except ValueError:
        return False


def group_size(specs: Sequence[Any]) -> int:
    """How many games a process plays at once for these agents: :data:`GROUP_SIZE` when an
    agent is batched and every agent is a spec (a bot object is one object, which games
    played at once would share), else 1."""
    if all(isinstance(s, str) for s in specs) and any(batched_spec(s) for s in specs):
        return GROUP_SIZE
    return 1


#: the games one process is given at once when the kernels play them whole
#: (:mod:`~keltis_env.evaluation.compiled_games`): fewer messages between processes
COMPILED_GROUP_SIZE = 32


def task_group_size(task: Any) -> int:
    """How many games a process plays at once for the evaluation of ``task``:
    :data:`COMPILED_GROUP_SIZE` when the kernels play its games whole, else :func:`group_size`."""
    return COMPILED_GROUP_SIZE if playable(task) else group_size(task.specs)


@dataclass
class _Game:
    """One game of a group: its task, its slot in the group, its match and, by seat, the
    batched bots deciding from outside the match loop (``None`` for the others)."""

    task: Any
    slot: int
    match: Any
    outside: list[Any]


def _start(task: Any, slot: int, watch: Any) -> _Game:
    bots = make_bots(task, watch, slot)
    outside = [bot if batched(bot) else None for bot in bots]
    controllers = [None if out is not None else bot if watch is None else watch.wrap(bot, seat, task.seats[seat], slot)
                   for seat, (bot, out) in enumerate(zip(bots, outside, strict=True))]
    return _Game(task, slot, start_match(task, controllers), outside)


def play_group(tasks: Sequence[Any], watch: Any = None) -> Iterator[GameResult]:
    """Play ``tasks`` at once (see the module doc); each game's result as it ends. An
    agent's failure raises :class:`AgentPlayError`, as :func:`~keltis_env.evaluation.play.play_task`
    raises it. ``watch``: the worker's shared record of the move being made (slot ``i`` for
    ``tasks[i]``)."""
    if watch is not None:
        watch.reset(len(tasks))
    if tasks and playable(tasks[0]):
        yield from play_compiled(tasks, watch)
    elif tasks and lockstep_playable(tasks[0]):
        yield from play_lockstep(tasks, watch, _play_matches)
    else:
        yield from _play_matches(tasks, watch)


def _play_matches(tasks: Sequence[Any], watch: Any) -> Iterator[GameResult]:
    """Play ``tasks`` at once, each game under its own match loop (see the module doc)."""
    active = [_start(task, slot, watch) for slot, task in enumerate(tasks)]
    while active:
        waiting: dict[Any, list[tuple[_Game, int]]] = {}
        going = []
        for game in active:
            if _advance(game):
                yield finish_match(game.task, game.match)
                continue
            seat = game.match.to_move
            waiting.setdefault(game.outside[seat].network_key, []).append((game, seat))
            going.append(game)
        for games in waiting.values():
            _decide(games, watch)
        active = going


def _advance(game: _Game) -> bool:
    """Let the game's own controllers decide until a batched bot is to move; whether it is over."""
    from keltis_env.core.errors import ActionError, ControllerError

    try:
        over: bool = game.match.play()
    except (ActionError, ControllerError) as exc:
        raise match_failure(game.task, game.match, exc) from None
    return over


def _failed(game: _Game, seat: int, exc: BaseException) -> AgentPlayError:
    from keltis_env.core.errors import ControllerError, describe_value

    failure = ControllerError.of(seat, describe_value(game.outside[seat]), exc)
    return match_failure(game.task, game.match, failure)


def _decide(games: list[tuple[_Game, int]], watch: Any) -> None:
    """One forward pass for the games waiting on one network, then each game's move."""
    import numpy as np

    from keltis_env.core.errors import ActionError
    from keltis_env.core.match import Forfeit

    first, seat = games[0]
    bots = [game.outside[s] for game, s in games]
    views = [_view(game.match, s, bot) for (game, s), bot in zip(games, bots, strict=True)]
    if watch is not None:
        watch.deciding(seat, first.task.seats[seat], first.slot)
    start = time.perf_counter()
    try:
        obs = np.empty((len(views), bots[0].encoder.size), dtype=np.float32)
        encoder = bots[0].encoder
        if callable(getattr(encoder, "encode_into", None)):  # one pass; a plugin game's encoder may lack it
            encoder.encode_into(views, obs, [bot.encoder for bot in bots])
        else:
            for k, (bot, view) in enumerate(zip(bots, views, strict=True)):
                obs[k] = bot.encoder.encode(view)
        logits = bots[0].logits_of_moves(obs, [view.legal_actions for view in views])
    except StopRequest:
        raise
    except BaseException as exc:
        raise _failed(first, seat, exc) from None
    share = (time.perf_counter() - start) / len(games)
    for i, ((game, s), bot, view) in enumerate(zip(games, bots, views, strict=True)):
        begun = time.perf_counter()
        try:
            action = bot.choose(view.legal_actions, logits[i])
        except StopRequest:
            raise
        except BaseException as exc:
            raise _failed(game, s, exc) from None
        match = game.match
        spent = share + time.perf_counter() - begun
        match.think[s] += spent
        limit = game.task.move_seconds
        if limit is not None and spent > limit:
            match.forfeit = Forfeit(s, spent, limit)
            continue
        if watch is not None:
            watch.log(game.slot, s, action, spent)
        try:
            match.step(action)
        except ActionError as exc:
            raise match_failure(game.task, match, exc) from None
    if watch is not None:
        watch.done()


def _view(match: Any, seat: int, bot: Any) -> Any:
    """What the seat's bot sees: the zero-copy live view where the bot accepts it (it is
    read before its game moves on), else the seat's view."""
    state = match.state
    return match.game.live_view(state, seat) if getattr(bot, "accepts_live_view", False) else state.view(seat)


__all__ = ["COMPILED_GROUP_SIZE", "GROUP_SIZE", "batched", "batched_spec", "group_size", "play_group",
           "task_group_size"]
