"""Adapters to other reinforcement-learning libraries, each an optional install.

* :mod:`keltis_env.integrations.rllib`: Ray RLlib's new API stack (``MultiAgentEnv``,
  an action-masking ``RLModule``, bot seats, the ``rllib:CHECKPOINT`` bot); needs the
  ``distributed`` extra. The league that trains on it is the RLlib trainer's
  (:mod:`training.rllib.league`).
* :mod:`keltis_env.integrations.pufferlib`: the vector environment
  (:class:`~keltis_env.vector.KeltisVectorEnv`) as a native ``pufferlib.PufferEnv`` over
  PufferLib's buffers, and a masking policy for PufferLib's trainer; needs the ``puffer``
  extra (``examples/pufferlib_train.py`` trains with it).

Nothing here is imported by the rest of the package: importing ``keltis_env`` never
loads Ray or PufferLib.
"""
