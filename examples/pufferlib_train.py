"""Train on the compiled core with PufferLib's own PPO trainer (``pufferlib.pufferl.PuffeRL``),
on the CPU, against in-kernel opponents.

    python examples/pufferlib_train.py --steps 100000 --seed 0
    python examples/pufferlib_train.py --game dice --opponents heuristic --steps 50000 --json result.json

The environment is :class:`keltis_env.envs.pufferlib.KeltisPufferEnv` (``--num-envs``
learner games of one process, the vector environment's arguments), the policy its
:class:`~keltis_env.envs.pufferlib.MaskedPolicy`, which reads the legal actions from
the observation. The games raise on an illegal action (``illegal_action="raise"``), so a run
that finishes played only legal actions. PuffeRL runs over PufferLib's ``Serial`` backend
with the one environment: PufferLib 3.0.16's trainer unpacks eight fields from ``recv``,
which its ``Serial`` gives and its native ``PufferEnv.recv`` (seven) does not; ``Serial``
hands the environment its buffers and reads them in place. Games end ``terminated`` at the
turn cap (``turn_cap="end"``): PuffeRL reads terminals alone.

PuffeRL prints its dashboard while it trains; the last line is this script's summary (learner
steps, steps a second, the mean of the episode returns PuffeRL logged, the checkpoint), and
``--json`` writes it with the command line. Checkpoints go to ``--out`` (a temporary folder
unless named). Needs the ``puffer`` extra (docs/integrations.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def trainer_config(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    """PuffeRL's configuration: plain PPO (uniform minibatches: ``prio_alpha`` 0; V-trace
    clips at 1, which is GAE while the policy has not moved), Adam, the CPU, no compile."""
    horizon = args.horizon
    return {
        "env": f"keltis:{args.game}", "seed": args.seed, "device": "cpu", "torch_deterministic": True,
        "total_timesteps": args.steps, "batch_size": args.num_envs * horizon, "bptt_horizon": horizon,
        "minibatch_size": args.minibatch, "max_minibatch_size": args.minibatch, "update_epochs": args.epochs,
        "learning_rate": args.lr, "anneal_lr": True, "optimizer": "adam", "adam_beta1": 0.9, "adam_beta2": 0.999,
        "adam_eps": 1e-8, "gamma": 0.99, "gae_lambda": 0.95, "clip_coef": 0.2, "vf_coef": 0.5, "vf_clip_coef": 0.2,
        "ent_coef": args.ent_coef, "max_grad_norm": 0.5, "prio_alpha": 0.0, "prio_beta0": 1.0,
        "vtrace_rho_clip": 1.0, "vtrace_c_clip": 1.0, "use_rnn": False, "cpu_offload": False, "compile": False,
        "compile_mode": "default", "compile_fullgraph": False, "precision": "float32",
        "checkpoint_interval": 10**9, "data_dir": str(data_dir),
    }


def train(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    import numpy as np
    import pufferlib.vector
    import torch
    from pufferlib.pufferl import PuffeRL

    from keltis_env.envs.pufferlib import KeltisPufferEnv, MaskedPolicy

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    env_kwargs = {"num_envs": args.num_envs, "game": args.game, "num_players": args.players,
                  "opponents": args.opponents, "reward": args.reward, "turn_cap": "end", "illegal_action": "raise"}
    vecenv = pufferlib.vector.make(KeltisPufferEnv, env_kwargs=env_kwargs, backend=pufferlib.vector.Serial,
                                   num_envs=1, seed=args.seed)
    policy = MaskedPolicy(vecenv.driver_env, hidden_size=args.hidden)
    before = [p.detach().clone() for p in policy.parameters()]
    config = trainer_config(args, data_dir)
    trainer = PuffeRL(config, vecenv, policy)
    start = time.perf_counter()
    logs: list[dict[str, Any]] = []  # PuffeRL's logs, each the means since the last
    while trainer.global_step < config["total_timesteps"]:
        trainer.evaluate()
        log = trainer.train()
        if log is not None:
            logs.append(log)
    seconds = time.perf_counter() - start
    steps, epochs = trainer.global_step, trainer.epoch
    # the last epoch's losses: PuffeRL keeps them after a log (a log itself carries the losses
    # of the log before it, none when a short run logs only once, at its end)
    losses = {k: float(v) for k, v in (getattr(trainer, "losses", None) or {}).items()}
    checkpoint = trainer.close()
    returns = [log["environment/episode_return"] for log in logs if "environment/episode_return" in log]
    lengths = [log["environment/episode_length"] for log in logs if "environment/episode_length" in log]
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip(policy.parameters(), before, strict=True))
    return {
        "game": args.game, "opponents": args.opponents, "reward": args.reward, "seed": args.seed,
        "num_envs": args.num_envs, "threads": args.threads, "learner_steps": steps, "epochs": epochs,
        "seconds": round(seconds, 2), "steps_per_second": round(steps / seconds),
        "episode_return": float(np.mean(returns)) if returns else None,
        "episode_length": float(np.mean(lengths)) if lengths else None,
        "losses": losses,
        "largest_weight_change": moved, "checkpoint": checkpoint,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=100_000, help="learner steps of training (default 100,000)")
    p.add_argument("--game", default="keltis", help="keltis or dice (default keltis)")
    p.add_argument("--players", type=int, default=2, help="players a game (default 2)")
    p.add_argument("--opponents", default="random", help="the in-kernel opponents (default random)")
    p.add_argument("--reward", default="shaped", choices=("win", "score", "shaped"), help="default shaped")
    p.add_argument("--num-envs", type=int, default=64, help="learner games stepped together (default 64)")
    p.add_argument("--horizon", type=int, default=32, help="steps a game per rollout segment (default 32)")
    p.add_argument("--minibatch", type=int, default=512, help="rows a minibatch (default 512)")
    p.add_argument("--epochs", type=int, default=2, help="passes over each batch (default 2)")
    p.add_argument("--lr", type=float, default=3e-4, help="Adam's learning rate (default 3e-4)")
    p.add_argument("--ent-coef", type=float, default=0.01, help="entropy bonus (default 0.01)")
    p.add_argument("--hidden", type=int, default=128, help="the policy's hidden width (default 128)")
    p.add_argument("--seed", type=int, default=0, help="deals and initial weights (default 0)")
    p.add_argument("--threads", type=int, default=1, help="torch's threads (default 1: this small network's "
                   "forward passes of one row a game are fastest on one, and several lose much to waiting on a busy "
                   "machine)")
    p.add_argument("--out", metavar="DIR", help="PuffeRL's checkpoints (default: a temporary folder)")
    p.add_argument("--json", metavar="PATH", help="write the summary here")
    args = p.parse_args(argv)
    for name in ("steps", "num_envs", "horizon", "minibatch", "epochs", "hidden", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        result = train(args, out)
        if not args.out:
            result["checkpoint"] = None  # gone with the temporary folder
    print(f"PuffeRL on {args.game} ({args.num_envs} games, opponents {args.opponents}, reward {args.reward}, "
          f"seed {args.seed}): {result['learner_steps']:,} learner steps in {result['epochs']} epochs, "
          f"{result['steps_per_second']:,} steps/s; episode return {result['episode_return']}; "
          f"checkpoint {result['checkpoint']}")
    if args.json:
        words = sys.argv[1:] if argv is None else argv
        record = {"command": " ".join(["python", "examples/pufferlib_train.py", *words]), **result}
        Path(args.json).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
