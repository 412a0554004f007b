"""Self-play PPO with Stable-Baselines3 (sb3-contrib MaskablePPO): the trainer
(``trainer``, ``run_folder``, ``checkpoints``, ``model``, ``warm_start``, ``callbacks``,
``pool``), the algorithm (``pipeline``, ``distill``), the environments (``collector``,
``selfplay``, ``envs``, ``vec``) and the throughput benchmark (``throughput``).
Imports ``training.common`` and ``training.imitate``."""
