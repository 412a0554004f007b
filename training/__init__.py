"""Training of Keltis agents: self-play PPO with Stable-Baselines3 (sb3-contrib
MaskablePPO), imitation of a teacher, and multi-agent PPO with Ray RLlib.

Entry commands (thin modules): ``python -m training.train`` (:mod:`training.train`),
``python -m training.imitate``, ``python -m training.bench``, ``python -m training.rllib``,
``python -m training.exit`` and ``python -m training.budget``.

Subpackages, by job, and the one direction their imports go (``a <- b``: b imports a)::

    common <- imitation <- sb3
    common <- rllib
    common <- imitation <- sb3 <- exit
    common <- imitation <- sb3 <- budget
    common <- rllib <- budget

* :mod:`training.common`: what every recipe shares: the config loader and
  :class:`~training.common.config.ConfigError`, the run config of SB3 and imitation,
  evaluation during training, the report, the masked policy math;
* :mod:`training.imitation`: demonstrations of a teacher: recorded, saved, fitted;
* :mod:`training.sb3`: the SB3 trainer, its collector, algorithm, pool and benchmark;
* :mod:`training.rllib`: the Ray RLlib recipe and its config;
* :mod:`training.exit`: expert iteration: the search guided by the network labels games,
  the network is fitted to them and gated;
* :mod:`training.budget`: the learning-budget track: a recipe of either kind trained for a
  fixed number of decisions over several seeds, each policy scored on the benchmark.

``keltis_env`` never imports ``training``; ``tests/test_training_layout.py`` checks both.
"""
