"""``python -m training.bench``: training throughput, the batched collector against
Stable-Baselines3's stock SubprocVecEnv (:mod:`training.bench.throughput`)."""
