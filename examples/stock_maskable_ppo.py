"""What a user's own trainer reaches: stock sb3-contrib MaskablePPO, default hyperparameters,
on the Gymnasium learner view against bots, then 200 duplicate-deal games against
``heuristic`` (any opponents you name).

    python examples/stock_maskable_ppo.py --steps 300000 --reward shaped --turn-cap end --seed 0
    python examples/stock_maskable_ppo.py --steps 300000 --reward score --seed 0   # the old defaults

Nothing here is tuned: ``MaskablePPO("MlpPolicy", env, seed=...)`` on ``make_vec_env``'s 8
environments, as a user would write it. The environment options are the learner view's
(``reward``, ``turn_cap``, ``opponents``; :mod:`keltis_env.envs.learner`). The result (win rate
with its 95% interval, mean score) is printed and, with ``--json``, written with the
command line. Needs the ``train`` extra (torch, sb3-contrib).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def train(args: argparse.Namespace, path: Path) -> float:
    """Train and save the model to ``path``; the seconds it took."""
    import gymnasium
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env

    import keltis_env  # noqa: F401  (registers keltis_env/KeltisLearner-v0)

    kwargs = {"opponents": args.opponents, "reward": args.reward, "turn_cap": args.turn_cap, "game": args.game,
              "features": tuple(args.features)}
    env = make_vec_env(lambda: gymnasium.make("keltis_env/KeltisLearner-v0", **kwargs), n_envs=args.n_envs,
                       seed=args.seed)
    start = time.perf_counter()
    model = MaskablePPO("MlpPolicy", env, seed=args.seed, verbose=0)
    model.learn(total_timesteps=args.steps, progress_bar=args.progress)
    model.save(path)
    env.close()
    from keltis_env.policy import write_policy_info

    # a plain MaskablePPO.save file is read by its observation size; features make that
    # size ambiguous, so the file says what it is
    write_policy_info(path, args.game, 2, features=tuple(args.features))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300_000, help="learner steps of training (default 300,000)")
    p.add_argument("--reward", default="shaped", choices=("win", "score", "shaped"), help="default shaped")
    p.add_argument("--turn-cap", default="end", choices=("truncate", "end"), help="default end")
    p.add_argument("--opponents", nargs="+", default=["heuristic"], help="the bots it trains against")
    p.add_argument("--game", default="keltis", help="keltis or dice")
    p.add_argument("--features", nargs="*", default=[], help="observation features, e.g. plan (the card game's "
                   "plan model's action values: a hand-written model's advice in the observation)")
    p.add_argument("--n-envs", type=int, default=8, help="make_vec_env's environments (default 8)")
    p.add_argument("--seed", type=int, default=0, help="training seed (the evaluation's deals are fixed: seed 2026)")
    p.add_argument("--games", type=int, default=200, help="evaluation games against heuristic (default 200)")
    p.add_argument("--against", default="heuristic", help="the evaluation's opponent (default heuristic)")
    p.add_argument("--save", metavar="PATH", help="keep the trained model here (a ppo: policy file)")
    p.add_argument("--json", metavar="PATH", help="write the result here")
    p.add_argument("--progress", action="store_true", help="show a progress bar while training")
    args = p.parse_args(argv)
    from keltis_env.evaluation import evaluate

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.save) if args.save else Path(tmp) / "model.zip"
        seconds = train(args, path)
        result = evaluate([f"ppo:{path}", args.against], games=args.games, seed=2026, workers=2, game=args.game,
                          progress=False)
    agent = result.agents[0]
    lo, hi = agent.win_rate_ci
    line = (f"stock MaskablePPO, {args.steps:,} steps, reward={args.reward}, turn_cap={args.turn_cap}, "
            f"features={','.join(args.features) or 'none'}, opponents={','.join(args.opponents)}, seed {args.seed}: "
            f"{100 * agent.win_rate:.1f}% "
            f"[{100 * lo:.1f}, {100 * hi:.1f}] against {args.against} over {result.games} games "
            f"(mean score {agent.mean_score:.1f}; trained in {seconds / 60:.1f} min)")
    print(line)
    if args.json:
        record = {"command": " ".join(["python", *sys.argv]), "steps": args.steps, "reward": args.reward,
                  "turn_cap": args.turn_cap, "features": args.features, "opponents": args.opponents,
                  "seed": args.seed, "game": args.game,
                  "against": args.against, "games": result.games, "win_rate": agent.win_rate,
                  "win_rate_ci": [lo, hi], "mean_score": agent.mean_score, "train_seconds": seconds}
        Path(args.json).write_text(json.dumps(record, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
