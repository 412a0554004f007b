"""Learner-view steps per second on each backend: ``python -m keltis_env.benchmark.learner_speed``.

Times ``KeltisLearnerEnv(backend=...)`` stepping ``--steps`` learner steps with uniformly
random legal actions (resetting at each episode's end), for every backend and opponent
asked for, interleaved, and prints the median of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from keltis_env.envs.learner import KeltisLearnerEnv


def steps_per_second(backend: str, opponent: str, steps: int, game: str, num_players: int, seed: int) -> float:
    """Learner steps per second of ``steps`` steps against ``opponent`` on ``backend``."""
    env = KeltisLearnerEnv(num_players=num_players, game=game, opponents=opponent, backend=backend)
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    t0 = time.perf_counter()
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--game", default="keltis")
    parser.add_argument("--players", type=int, default=2)
    parser.add_argument("--opponents", nargs="+", default=["random", "heuristic"])
    parser.add_argument("--backends", nargs="+", default=["python", "compiled"])
    args = parser.parse_args(argv)
    for backend in args.backends:  # the compiled kernels are compiled before any timing
        steps_per_second(backend, args.opponents[0], 50, args.game, args.players, 0)
    print(f"{args.game} {args.players}p, {args.steps} learner steps, median of {args.repeats}")
    for opponent in args.opponents:
        runs: dict[str, list[float]] = {b: [] for b in args.backends}
        for repeat in range(args.repeats):
            for backend in args.backends:
                runs[backend].append(
                    steps_per_second(backend, opponent, args.steps, args.game, args.players, repeat))
        line = ", ".join(f"{b} {statistics.median(r):,.0f} steps/s" for b, r in runs.items())
        print(f"{opponent}: {line}")


if __name__ == "__main__":
    main()
