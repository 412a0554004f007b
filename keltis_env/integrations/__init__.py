"""Adapters to other reinforcement-learning libraries, each an optional install.

* :mod:`keltis_env.integrations.rllib`: Ray RLlib's new API stack (``MultiAgentEnv``,
  an action-masking ``RLModule``, bot seats, the ``rllib:CHECKPOINT`` bot); needs the
  ``distributed`` extra. The league that trains on it is the RLlib trainer's
  (:mod:`training.rllib.league`).
* PufferLib: the vector environment as a native ``pufferlib.PufferEnv`` is one of the
  environment front-ends, :mod:`keltis_env.envs.pufferlib` (the ``puffer`` extra).

Nothing here is imported by the rest of the package: importing ``keltis_env`` never
loads Ray or PufferLib.
"""
