"""Multi-agent self-play PPO with Ray RLlib: the recipe (``recipe``), its league (``league``:
the policy mapping and the win-rate callback), its config (``config``), its warm start from a
policy file (``warm_start``), the training kit's recipe files on it (``kit``: ``backend: rllib``
in ``python -m training.train``) and its command line (``python -m training.rllib``,
``__main__``). Imports ``training.common`` only; Ray is imported when a run starts."""
