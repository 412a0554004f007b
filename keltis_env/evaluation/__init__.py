"""Head-to-head evaluation of agents with duplicate deals and seat rotation.

``evaluate(["ismcts", "heuristic"], games=400, seed=0)`` plays 400 games and returns an
:class:`EvaluationResult`. An *agent* is a bot spec for :func:`keltis_env.bots.make_bot`
(``"random"``, ``"heuristic"``, ``"ismcts:iterations=400"``, ``"ppo:PATH"``); the number
of agents is the number of players (2-4); the same spec may appear more than once
(``["heuristic", "random", "random", "random"]``), each copy being its own agent.

Duplicate deals
    Each *deal* is a game seed. A deal is played once per seating: in rotation ``r``
    agent ``i`` sits at seat ``(i + r) % n``, so over a deal every agent plays every seat
    exactly once with the same cards, tiles and first player, and the luck of the deal
    cancels out. ``games`` is rounded up to a whole number of deals (a multiple of the
    number of agents). Deal seeds come from ``seed`` alone.

Counting
    A game's victory is shared as :func:`keltis_env.core.rewards.win_shares` shares it: a sole
    winner gets 1 win, each of ``k`` players tied for the highest score gets ``1/k``.
    ``win_rate`` is wins / games with a 95% Wilson score interval (:func:`wilson_interval`);
    ``mean_score`` has a 95% normal interval, mean +/- 1.96 sample standard deviations /
    sqrt(games) (:func:`mean_interval`). The intervals treat games as independent; duplicate
    deals make the games of a deal negatively correlated for the agents' comparison, so
    the intervals are, if anything, conservative. A truncated game (R8) counts from the
    standings at its cut, like the environments' rewards. With three or more distinct
    specs, agents are also rated with openskill's Plackett-Luce model, one update per game
    in game order.

Reproducibility
    Bots are made with ``make_bot(spec, seed=...)`` inside the worker processes (specs
    travel, never bots); each worker makes one bot per agent and re-seeds it with
    :meth:`~keltis_env.bots.base.Bot.seed` before every game, from a seed derived from
    ``seed``, the deal, the rotation and the agent. A bot must therefore keep no state
    between games besides its random generator. The games, and so every result except
    the measured decision times, are identical for a given seed whatever the number of
    workers.

Speed
    When an agent is a ``ppo:`` policy (and every agent a spec), a worker plays a group of
    games at once in lockstep (:mod:`~keltis_env.evaluation.lockstep`): each game has its
    own bots, and the games waiting on one network share one encoding and one forward pass
    that gives every game the logits it gets alone, so the games are those played one at a
    time. An evaluation long enough to repay loading the compiled kernels (at least
    :data:`~keltis_env.evaluation.play.COMPILED_FROM_GAMES` games per process) plays the
    card game's ``heuristic`` and ``planner`` given without a ``backend`` option through
    them (``backend=auto``: the same decisions); results still name them by their spec.

Interruption
    Ctrl-C (``KeyboardInterrupt``) during :func:`evaluate` stops the worker processes (they
    ignore SIGINT themselves and are terminated by the main process) and raises
    :class:`EvaluationInterrupted`, a ``KeyboardInterrupt`` that carries the games finished
    so far as an :class:`EvaluationResult` marked ``partial``. Game records of unfinished
    games are removed, so ``records_dir`` holds exactly the finished games.

Misbehaving agents
    Each move has a time limit (``move_seconds``, default 60 s): an agent over it loses
    that game on time (``end="time"``), counted apart in the summary. An agent that raises
    (``SystemExit`` and its own ``KeyboardInterrupt`` included), returns an illegal action
    or kills its worker process stops the evaluation with :class:`AgentPlayError`, which
    names the agent, its seat, the game and what happened (``trace`` holds its traceback),
    the same with one worker or many; the finished games are kept in ``out``. No worker
    process is left behind (:mod:`~keltis_env.evaluation.workers`).
"""

from .errors import AgentPlayError, EvaluationError, EvaluationInterrupted
from .play import derive_seed
from .results import AgentStats, EvaluationResult, GameResult, aggregate
from .stats import Z95, mean_interval, wilson_interval
from .tournament import DEFAULT_MOVE_SECONDS, MAX_GAMES, MAX_PLAYERS, MAX_WORKERS, MIN_PLAYERS, check_agents, evaluate

__all__ = [
    "DEFAULT_MOVE_SECONDS",
    "MAX_GAMES",
    "MAX_PLAYERS",
    "MAX_WORKERS",
    "MIN_PLAYERS",
    "Z95",
    "AgentPlayError",
    "AgentStats",
    "EvaluationError",
    "EvaluationInterrupted",
    "EvaluationResult",
    "GameResult",
    "aggregate",
    "check_agents",
    "derive_seed",
    "evaluate",
    "mean_interval",
    "wilson_interval",
]
