"""Why an agent plays what it plays: for the seat to move, a trained policy's probability
of every legal move and its value of the position, and the search's value of the moves it
searched. Both read only that seat's view (R10), so asking never reveals a hidden card.

The policy is the first ``ppo:`` agent named on the command line that fits the game, else
the policy the package ships for it (:meth:`~keltis_env.web.agents.Agents.policy_spec`);
its probabilities are the softmax of :meth:`PPOBot.logits <keltis_env.bots.ppo.PPOBot.logits>`
over the legal moves, its value the critic's (:meth:`Network.values
<keltis_env.policy.network.Network.values>`, what the file's ``value_target`` says). The
search is the game's ``ismcts`` bot with a budget of ``iterations`` rollouts and seed 0
(:func:`search_spec`; on the compiled core where the game's bot has one and numba is
installed), so the same position always gets the same answer; its values
(:meth:`SearchBot.analyse <keltis_env.bots.search.SearchBot.analyse>`) are points of final
score difference. Each part runs under a time limit and reports its own failure in place of
its numbers.

:func:`search_game` runs that search at every decision of a recorded game (every seat's), one
position after another, each under the same time limit: a whole game's marks
(:func:`search_mark`: the search's choice and what the move played lost against it).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: the search bot the analysis asks, where the game has it
SEARCH_BOT = "ismcts"
#: its rollouts per position unless ``--search-iterations`` says otherwise, on the compiled
#: core and in Python: a card game of 140 decisions takes about 15 s and 2 minutes on one core
#: (docs/serve.md)
SEARCH_ITERATIONS = {"compiled": 2048, "python": 512}


def _timed(work: Any, seconds: float) -> Any:
    """``work()`` in a thread, waited for at most ``seconds``; raises ``TimeoutError``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except Exception as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name="analysis", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"took longer than {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def value_meaning(target: str) -> str:
    """What a policy's value means, by the final reward its critic estimates (``value_target``)."""
    from keltis_env.core.rewards import SCORE_SCALE

    if target == "win":
        return ("the estimated final reward of the seat to move: +1 a sole win, 0 a shared win, -1 a loss "
                "(with two players, (value + 1) / 2 is about its chance to win)")
    return (f"the estimated final score of the seat to move minus the mean score of the others, over "
            f"{SCORE_SCALE:g} (value x {SCORE_SCALE:g} is the lead in points)")


def policy_analysis(spec: str, game: Any, view: Any) -> dict[str, Any]:
    """The policy ``spec``'s probabilities of the legal moves of ``view``, most probable first,
    and its value (``None`` for a file without a critic)."""
    from keltis_env.bots import make_bot

    bot: Any = make_bot(spec, seed=0, game=game.name, num_players=view.num_players)  # a PPOBot
    logits = bot.logits(view)
    legal = [int(a) for a in view.legal_actions]
    top = max(float(logits[a]) for a in legal)
    weights = {a: math.exp(float(logits[a]) - top) for a in legal}
    total = sum(weights.values())
    moves = sorted(({"id": a, "text": game.action_to_string(a), "probability": w / total}
                    for a, w in weights.items()), key=lambda m: -m["probability"])
    value = None
    if getattr(bot.policy, "value_layers", None) is not None:
        value = float(bot.policy.values(bot.encoder.encode(view)))
    return {"agent": spec, "moves": moves, "value": value, "value_target": bot.info.value_target,
            "value_meaning": value_meaning(bot.info.value_target)}


def review(spec: str, game: Any, states: list[Any], actions: list[int], seconds: float) -> dict[str, Any]:
    """The policy ``spec`` over a whole game (``states[k]``: the position after ``k`` of
    ``actions``): ``values[k][p]``, its value of position ``k`` for seat ``p`` (``None`` once
    the game is over, or for a file without a critic), and for each move its probability, the
    policy's own choice there, and what the move changed in the mover's value (``lost``:
    the value before minus the value after; positive when the move made the mover's
    position worse in the policy's eyes). Runs under ``seconds``."""

    def work() -> dict[str, Any]:
        import numpy as np

        from keltis_env.bots import make_bot

        n = states[0].num_players
        bot: Any = make_bot(spec, seed=0, game=game.name, num_players=n)
        live = [k for k, state in enumerate(states) if not state.is_over]
        values: list[list[float | None]] = [[None] * n for _ in states]
        if getattr(bot.policy, "value_layers", None) is not None and live:
            seen = np.stack([bot.encoder.encode(states[k].view(p)) for k in live for p in range(n)])
            for i, value in enumerate(bot.policy.values(seen)):  # one forward pass for the whole game
                values[live[i // n]][i % n] = float(value)
        views = [states[k].view(int(states[k].current)) for k in range(len(actions))]
        logits = bot.batch_logits_each(np.stack([bot.encoder.encode(v) for v in views])) if views else []
        moves = []
        for k, action in enumerate(actions):
            seat = int(views[k].player)
            legal = [int(a) for a in views[k].legal_actions]
            top = max(float(logits[k][a]) for a in legal)
            weights = {a: math.exp(float(logits[k][a]) - top) for a in legal}
            total = sum(weights.values())
            choice = max(legal, key=lambda a: weights[a])
            before, after = values[k][seat], values[k + 1][seat]
            moves.append({"step": k + 1, "seat": seat, "played": game.action_to_string(action),
                          "probability": weights.get(int(action), 0.0) / total,
                          "choice": game.action_to_string(choice), "choice_probability": weights[choice] / total,
                          "agrees": int(action) == choice,
                          "lost": None if before is None or after is None else before - after})
        return {"agent": spec, "value_target": bot.info.value_target,
                "value_meaning": value_meaning(bot.info.value_target), "values": values, "moves": moves}

    return dict(_timed(work, seconds))


def search_spec(game: str, iterations: int | None = None) -> str:
    """The search the analysis asks in ``game``: its :data:`SEARCH_BOT` with ``iterations``
    rollouts per position (default: :data:`SEARCH_ITERATIONS` of its core; a budget in
    iterations: with the seed the analysis gives, the same answer every time), on the
    compiled core where the game's bot takes ``backend`` and numba can be imported (the
    compiled search draws its own random numbers, so its answers are not the Python search's)."""
    import importlib.util
    import inspect

    from keltis_env.bots import bot_factory

    takes = "backend" in inspect.signature(bot_factory(SEARCH_BOT, game)).parameters
    if takes and importlib.util.find_spec("numba") is not None:
        return f"{SEARCH_BOT}:backend=compiled,iterations={iterations or SEARCH_ITERATIONS['compiled']}"
    return f"{SEARCH_BOT}:iterations={iterations or SEARCH_ITERATIONS['python']}"


def search_bot(spec: str, game: Any, num_players: int) -> Any:
    """The search bot of ``spec`` as the analysis makes it (seed 0). Making the first one in a
    process loads the compiled search's kernels, so make it before a timed decision."""
    from keltis_env.bots import make_bot

    return make_bot(spec, seed=0, game=game.name, num_players=num_players)


def search_analysis(game: Any, view: Any, spec: str = SEARCH_BOT) -> dict[str, Any]:
    """Every candidate the search bot of ``spec`` considered at ``view``: its
    ``value`` (the score it chose by for a candidate that survived the halving, else its
    mean rollout value, else the ranker's value; points of final score difference), its
    ``mean`` rollout value (``None`` where it was not played out),
    ``samples`` (the sampled worlds it was rolled out in: its visit count), ``kept`` (it
    survived to the choice) and ``chosen`` (the move the search plays); the survivors first,
    best first, then the searched candidates the halving dropped, then those only ranked."""
    bot = search_bot(spec, game, view.num_players)  # a SearchBot
    result = bot.analyse(view)
    moves = []
    for c in result.candidates:
        value = c.score if c.score is not None else c.mean if c.mean is not None else c.rank
        moves.append({"id": int(c.action), "text": game.action_to_string(c.action), "value": float(value),
                      "mean": None if c.mean is None else float(c.mean), "samples": int(c.samples),
                      "kept": c.score is not None or not result.rollouts,
                      "chosen": int(c.action) == int(result.action)})
    # the survivors first (what the choice was made among), then the searched ones the halving
    # dropped, then the ones only ranked: values of those three kinds are not comparable
    moves.sort(key=lambda m: (not m["kept"], m["samples"] == 0, -m["value"]))
    return {"agent": spec, "moves": moves, "samples": int(result.samples), "rollouts": int(result.rollouts),
            "sure": bool(result.sure)}


def search_mark(search: Mapping[str, Any] | None, played: str) -> dict[str, Any] | None:
    """The search's verdict on the move ``played`` at a position it analysed (``search``, the
    answer of :func:`search_analysis`; ``None`` or a failure: no verdict): its ``choice``,
    whether the move was it (``agrees``), and what the move ``lost`` against it in points of
    final score difference, like against like: where the move survived the halving, the
    choice's score minus the move's (never negative: the choice has the best score); where
    the halving ``dropped`` it, after ``samples`` sampled worlds, the choice's mean rollout
    value minus the move's (the move's over its fewer worlds, so it may come out negative);
    ``None`` where the search did not play the move out (the ranker put it too far below
    the best to search it)."""
    if not search or not search.get("moves"):
        return None
    moves = search["moves"]
    chosen = next((m for m in moves if m.get("chosen")), moves[0])
    mine = next((m for m in moves if m["text"] == played), None)
    samples = int(mine.get("samples") or 0) if mine is not None else 0
    dropped = bool(samples and not mine.get("kept")) if mine is not None else False
    lost = None
    if mine is not None and samples:
        if not dropped:
            lost = chosen["value"] - mine["value"]
        elif chosen.get("mean") is not None and mine.get("mean") is not None:
            lost = chosen["mean"] - mine["mean"]
    return {"choice": chosen["text"], "agrees": chosen["text"] == played, "lost": lost, "dropped": dropped,
            "samples": samples}


def search_game(game: Any, states: Sequence[Any], actions: Sequence[int], spec: str, seconds: float,
                report: Callable[[int, dict[str, Any]], None], skip: Callable[[int], bool] = lambda k: False,
                stop: Callable[[], bool] = lambda: False) -> None:
    """The search of ``spec`` at every decision of a game (``states[k]``: the position before
    move ``k``; every seat's), one position after another: ``report(k, answer)`` for each
    (:func:`search_analysis`'s answer, or ``{"error": ...}`` where the search failed there),
    except where ``skip(k)`` (already searched). ``stop()`` is asked before each position
    (it ends the work there). A position that takes longer than ``seconds`` raises
    ``TimeoutError``: the work ends, and that position's search ends by itself."""
    if actions:
        search_bot(spec, game, states[0].num_players)  # the compiled search's kernels load outside the timer
    for k in range(len(actions)):
        if skip(k):
            continue
        if stop():
            return
        view = states[k].clone().view(int(states[k].current))
        try:
            answer = _timed(lambda view=view: search_analysis(game, view, spec), seconds)
        except TimeoutError as exc:
            raise TimeoutError(f"the search of position {k} {exc}") from None
        except Exception as exc:
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        report(k, answer)


def analyse(game: Any, state: Any, policy: str | None, seconds: float, search: str | None = None,
            searched: dict[str, Any] | None = None) -> dict[str, Any]:
    """The analysis of the seat to move in ``state``: ``policy`` and ``search`` parts, each
    its numbers or ``{"error": ...}`` (``None`` where there is no such agent). ``search`` is
    the search's spec (default: :func:`search_spec`'s); ``searched``, its answer at this
    position where it is known already (it is not searched again)."""
    from keltis_env.bots import bot_names

    seat = int(state.current)
    view = state.view(seat)
    out: dict[str, Any] = {"seat": seat, "policy": None, "search": searched}
    parts: list[tuple[str, Any]] = []
    if policy is not None:
        parts.append(("policy", lambda: policy_analysis(policy, game, view)))
    if searched is None and SEARCH_BOT in bot_names(game.name):
        spec = search if search is not None else search_spec(game.name)
        try:
            search_bot(spec, game, view.num_players)  # the compiled search's kernels load outside the timer
        except Exception as exc:
            out["search"] = {"error": f"{type(exc).__name__}: {exc}"}
        else:
            parts.append(("search", lambda: search_analysis(game, view, spec)))
    for key, work in parts:
        try:
            out[key] = _timed(work, seconds)
        except Exception as exc:
            out[key] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


__all__ = ["SEARCH_BOT", "SEARCH_ITERATIONS", "analyse", "policy_analysis", "review", "search_analysis", "search_bot",
           "search_game", "search_mark", "search_spec", "value_meaning"]
