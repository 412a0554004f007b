"""Self-play training of Keltis agents with Stable-Baselines3 (sb3-contrib MaskablePPO).

``python -m training.train --config configs/default.yaml``; see :mod:`training.train`.
Modules: ``config`` (typed YAML configs), ``envs`` (vectorised learner environments),
``pool`` (opponent pool), ``callbacks`` (per-rollout bookkeeping), ``evaluation``,
``run`` (a run folder: training, checkpoints, resume), ``report`` (curve and report).
"""
