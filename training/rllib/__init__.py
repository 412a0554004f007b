"""Multi-agent self-play PPO with Ray RLlib, the one way to train with RLlib
(``python -m training.rllib``, ``__main__``, from the configs of ``configs/rllib/``): the
training run (``trainer``), its league (``league``: the policy mapping and the win-rate
callback), its config (``config``) and its warm start from a policy file (``warm_start``).
Imports ``training.common`` only; Ray is imported when a run starts."""
