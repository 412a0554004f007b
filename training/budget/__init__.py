"""The learning-budget track: a training config run with a fixed number of the learning
policy's decisions, for several seeds, each final policy scored on the benchmark's rungs.

    python -m training.budget --config configs/train/default.yaml --decisions 2e6 --seeds 3
    python -m training.budget --config configs/rllib/rllib_2p.yaml --decisions 2e6 --seeds 2   # .venv-distributed
    python -m training.budget --config configs/zero/keltis_2p.yaml --decisions 1e6 --seeds 3
    python -m training.budget ... --resume        # go on: finished seeds are kept, a stopped one resumes

**The budget** counts the decisions of the learning policy only: SB3's ``total_timesteps``
(the learner's moves in its training games), or for an RLlib config ``stop.learner_steps``
(the moves of the trained module ``main``, in all its seats), or for a config of
:mod:`training.zero` its ``decisions`` (the self-play moves of the search that the network
guides, in every seat; a generation is finished, so a run ends at the first generation at or
past the budget). Opponents' moves, evaluation
games and a teacher's games do not count; a teacher's decisions (the recorded games of
``record.teacher`` and the DAgger rounds it labels) are reported separately, under
``teacher``. No time limit stops a run early (``max_minutes``, ``stop.minutes`` are set to
0). A run ends at the first whole rollout (SB3) or iteration (RLlib) at or past the budget;
a seed's ``decisions`` are what it took.

**Seeds** are ``0 .. N-1`` (the config's ``seed`` key). Each seed's run lives in
``RUNS/seed-K/`` (``--runs``, default ``runs/budget/NAME-BUDGET``); ``seed-K/trained.json``
marks a finished run and ``seed-K/score.json`` its scores, so ``--resume`` trains and scores
only what is missing, and an interrupted run goes on from its last checkpoint.

**The policy scored** is the one at the end of the budget (SB3: the final weights, not the
best periodic checkpoint that a run's ``policy.zip`` is; RLlib: the same, ``final_policy.zip``,
the weights of ``checkpoints/final`` as a policy file; zero: the run's ``network.zip``, the
network alone, without the search, not its ``best.zip``),
played unchanged on the rungs of :mod:`keltis_env.benchmark`'s track for the config's game
and number of players (``heuristic`` and ``planner`` where the track has them).

**The result file** ``OUT/NAME-BUDGET.json`` (``--out``, default ``benchmarks/results/budget``;
``NAME`` the config's ``name``, ``BUDGET`` e.g. ``300k`` or ``2M``) is what the leaderboard's
learning-budget section reads (:mod:`keltis_env.benchmark.leaderboard` states the fields it
needs). One JSON object:

* ``kind``: ``"keltis-budget-result"``, ``schema``: 1;
* ``config`` (the path as given), ``config_sha256``, ``config_name``, ``algorithm``
  (``"sb3-ppo"``, ``"rllib-ppo"`` or ``"gumbel-expert-iteration"``), ``overrides`` (the ``--set`` items), ``command``;
* ``track`` (e.g. ``"keltis-2p"``), ``protocol`` and ``protocol_sha256`` of the benchmark,
  ``package_version``, ``quick`` (the rungs played with the protocol's quick game count),
  ``rungs``;
* ``budget_decisions``: the budget per seed;
* ``seeds``: one object per seed: ``seed``, ``decisions`` (what the run used),
  ``teacher_decisions`` (0 without a teacher) and ``teacher`` (``null``, or ``spec``,
  ``games``, ``decisions``), ``learning_minutes``, ``agent`` (the spec scored),
  ``policy_sha256`` (of a policy file), ``scores`` (per rung: ``games``, ``win_rate``,
  ``interval`` [low, high] at 95%, ``margin``: the mean score margin), ``learning_curve``
  (``source``, and ``points``: per opponent a list of ``[decisions, win_rate]``) and
  ``scorecard`` (the policy's ladder scorecard, JSON form);
* ``spread``: per rung, over the seeds' win rates: ``mean``, ``std`` (sample standard
  deviation; 0 for one seed), ``min``, ``max``, and ``margin_mean``;
* ``curves``: the file name of the picture of every seed's learning curve, next to the JSON;
* ``warm_start`` (only for a config that starts from a policy file: SB3's ``init``, RLlib's
  ``warm_start.file``): ``file`` and ``sha256``. The file was made before the run (by an
  imitation, say); whatever made it is not counted in the run's decisions nor as its teacher's.
"""

#: the ``kind`` and ``schema`` of a result file
KIND = "keltis-budget-result"
SCHEMA = 2  # 2: the training config is "config" (schema 1 called it "recipe")
#: the ``algorithm`` of a result file, by the trainer of its config
ALGORITHMS = {"sb3": "sb3-ppo", "rllib": "rllib-ppo", "zero": "gumbel-expert-iteration"}
#: the rungs every run is scored on, where the track has them
RUNGS = ("heuristic", "planner")

__all__ = ["ALGORITHMS", "KIND", "RUNGS", "SCHEMA"]
