"""The learning-budget track: a training recipe run with a fixed number of the learning
policy's decisions, for several seeds, each final policy scored on the benchmark's rungs.

    python -m training.budget --recipe configs/default.yaml --decisions 2e6 --seeds 3
    python -m training.budget --recipe configs/rllib_2p.yaml --decisions 2e6 --seeds 2   # .venv-distributed
    python -m training.budget ... --resume        # go on: finished seeds are kept, a stopped one resumes

**The budget** counts the decisions of the learning policy only: SB3's ``total_timesteps``
(the learner's moves in its training games), or for an RLlib recipe ``stop.learner_steps``
(the moves of the trained module ``main``, in all its seats). Opponents' moves, evaluation
games and a teacher's games do not count; a teacher's decisions (the recorded games of
``pretrain.teacher`` and the DAgger rounds it labels) are reported separately, under
``teacher``. No time limit stops a run early (``max_minutes``, ``stop.minutes`` are set to
0). A run ends at the first whole rollout (SB3) or iteration (RLlib) at or past the budget;
``decisions_used`` is what it took.

**Seeds** are ``0 .. N-1`` (the recipe's ``seed`` key). Each seed's run lives in
``RUNS/seed-K/`` (``--runs``, default ``runs/budget/NAME-BUDGET``); ``seed-K/trained.json``
marks a finished run and ``seed-K/score.json`` its scores, so ``--resume`` trains and scores
only what is missing, and an interrupted run goes on from its last checkpoint.

**The policy scored** is the one at the end of the budget (SB3: the final weights, not the
best periodic checkpoint that a run's ``policy.zip`` is; RLlib: ``checkpoints/final``),
played unchanged on the rungs of :mod:`keltis_env.benchmark`'s track for the recipe's game
and number of players (``heuristic`` and ``planner`` where the track has them).

**The result file** ``OUT/NAME-BUDGET.json`` (``--out``, default ``benchmarks/results/budget``;
``NAME`` the recipe's ``name``, ``BUDGET`` e.g. ``300k`` or ``2M``), read by the leaderboard's
learning-budget section, holds one JSON object:

* ``format``: ``"keltis-budget/1"``; ``protocol``: the benchmark protocol's version;
  ``package_version``; ``track`` (e.g. ``"keltis-2p"``); ``quick``: whether the rungs were
  played with the protocol's quick game count;
* ``recipe`` (path as given), ``recipe_sha256``, ``recipe_name``, ``algorithm`` (``"sb3"`` or
  ``"rllib"``), ``overrides`` (the ``--set`` items), ``command`` (the exact command);
* ``decisions``: the budget per seed; ``seeds``: the seeds, in order; ``rungs``: the rungs;
* ``runs``: one object per seed: ``seed``, ``decisions_used``, ``teacher`` (``null``, or
  ``spec``, ``games``, ``decisions``), ``learning_minutes``, ``agent`` (the agent spec
  scored), ``scores`` (per rung: ``games``, ``win_rate``, ``interval`` [low, high], 95%,
  ``margin``: the mean score margin) and ``curve`` (``source``, and ``points``: per
  opponent a list of ``[decisions, win_rate]``);
* ``spread``: per rung, over the seeds' win rates: ``mean``, ``std`` (sample standard
  deviation; 0 for one seed), ``min``, ``max``, and ``margin_mean``;
* ``curves``: the file name of the picture of every seed's learning curve, next to the JSON.
"""

#: the ``format`` field of a result file
FORMAT = "keltis-budget/1"
#: the rungs every run is scored on, where the track has them
RUNGS = ("heuristic", "planner")

__all__ = ["FORMAT", "RUNGS"]
