"""Training of Keltis agents: self-play PPO with Stable-Baselines3 (sb3-contrib
MaskablePPO), imitation of a teacher, expert iteration, multi-agent PPO with Ray RLlib, and
the recipes that rebuild every shipped policy.

Every job runs the same way, ``python -m training.<job>`` (its package's ``__main__``, a
thin command) with ``--config``, ``--resume``, ``--set`` and ``--describe`` where they
apply: ``train`` (an SB3 run), ``imitate`` (record a teacher, fit a policy or a value head),
``exit`` (expert iteration), ``zero`` (expert iteration from zero), ``budget`` (the
learning-budget track), ``rllib`` (an RLlib run), ``bench`` (training throughput) and
``recipe`` (rebuild a shipped policy).

Subpackages, by job, and the one direction their imports go (``a <- b``: b imports a; a
``__main__`` command may use every subpackage)::

    common <- imitate <- sb3 <- train
    common <- imitate <- sb3 <- bench
    common <- imitate <- sb3 <- exit <- recipe
    common <- imitate <- sb3 <- exit <- recipe <- budget
    common <- imitate <- zero <- recipe <- budget
    common <- rllib <- budget
    common <- rllib <- bench

* :mod:`training.common`: what every job shares: the config loader and
  :class:`~training.common.config.ConfigError`, the game section and the checks of games and
  agent specs, the command-line arguments, the masked policy math;
* :mod:`training.imitate`: demonstrations of a teacher: recorded, saved, fitted (its own
  config: the ``record``, ``fit`` and ``network`` sections);
* :mod:`training.sb3`: the SB3 run: its config, trainer, collector, algorithm, pool,
  evaluation and report;
* :mod:`training.train`: ``python -m training.train``, an SB3 run;
* :mod:`training.bench`: training throughput, the collector against SB3's SubprocVecEnv;
* :mod:`training.exit`: expert iteration: the search guided by the network labels games,
  the network is fitted to them and gated;
* :mod:`training.zero`: expert iteration from zero: self-play with the search that knows
  only the rules and the network, the network fitted to its improved policies and outcomes;
* :mod:`training.recipe`: the recipe of a shipped policy, its stages run in order;
* :mod:`training.rllib`: the Ray RLlib trainer and its config;
* :mod:`training.budget`: the learning-budget track: a training config of either kind trained for a
  fixed number of decisions over several seeds, each policy scored on the benchmark.

``keltis_env`` never imports ``training``; ``tests/test_training_layout.py`` checks both.
"""
