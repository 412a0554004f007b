"""Multi-agent self-play PPO with Ray RLlib: the recipe (``recipe``), its league (``league``:
the policy mapping and the win-rate callback), its config (``config``) and its command line
(``python -m training.rllib``, ``__main__``). Imports ``training.common`` only; Ray is
imported when a run starts."""
