"""How far the RLlib trainer scales over Ray nodes: one env runner's sampling rate and the
learner's update time per train batch, measured, and the estimate for N nodes drawn from them.

    .venv-distributed/bin/python -m training.rllib.scaling [--config configs/rllib/rllib_2p.yaml]
        [--set key=value ...] [--seconds 30] [--updates 5] [--runners-per-node 15] [--json OUT]

The RLlib config (``--config``, ``--set``) is built as ``python -m training.rllib`` builds it, on a
local Ray, with one env runner (``resources.env_runners`` is set to 1):

* **r**, one runner's env steps/s: :func:`training.rllib.trainer.sampling_rate` (what
  ``python -m training.rllib --sampling`` measures) for ``--seconds``;
* **U**, the learner's update time per train batch: ``--updates`` times, a train batch
  (``ppo.train_batch`` env steps) sampled, then timed alone: the update (``ppo.epochs``
  epochs of ``ppo.minibatch``), as PPO's training step runs it, on the driver's learner
  (``num_learners: 0``, ``resources.torch_threads`` threads); then **S**, the weights' sync to
  the runner. The median of each is reported.

The RLlib run's PPO is synchronous: an iteration samples a train batch on all runners, then
updates. With ``R`` runners of rate ``r`` (``--runners-per-node`` on each of N nodes) an
iteration takes ``B / (R r) + U + S`` seconds for ``B = ppo.train_batch`` env steps; the
learner is the bottleneck (it takes longer than the sampling) from ``R* = B / (r U)``
runners on, and no number of nodes exceeds ``B / (U + S)`` env steps/s. The figures are this
machine's: a dedicated core samples faster than a shared one, so measure on a cluster node.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from typing import Any

from keltis_env.core.output_files import atomic_write_text

from ..common.cli import check_json_out, quiet_threads
from ..common.config import ConfigError
from ..common.jsonfile import finite_json
from .config import RLlibConfig, load_config

quiet_threads()

#: node counts of the printed table
NODES = (1, 2, 4, 8, 16, 32, 64)


def measure_update(config: RLlibConfig, updates: int) -> dict[str, Any]:
    """The learner's update time and the weights' sync time per train batch (medians over
    ``updates``), with one env runner sampling each batch beforehand, on a local Ray."""
    import ray
    import torch
    from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    from .trainer import build_algorithm_config, init_ray, start_weights

    torch.set_num_threads(config.resources.torch_threads)
    init_ray(config, None)
    update_s: list[float] = []
    sync_s: list[float] = []
    try:
        algo = build_algorithm_config(config).build_algo()
        start_weights(algo, config)
        algo.train()  # warm-up: the runner's first games, the first update
        sampled = 0
        for _ in range(updates):
            episodes = synchronous_parallel_sample(worker_set=algo.env_runner_group,
                                                   max_env_steps=config.ppo.train_batch, _uses_new_env_runners=True)
            sampled += sum(e.env_steps() for e in episodes)
            start = time.perf_counter()
            results = algo.learner_group.update(
                episodes=episodes, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: sampled},
                num_epochs=config.ppo.epochs, minibatch_size=config.ppo.minibatch, shuffle_batch_per_epoch=True)
            update_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            modules = set(results[0]) - {"__all_modules__"}
            algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, policies=modules,
                                               inference_only=True)
            sync_s.append(time.perf_counter() - start)
        algo.stop()
    finally:
        ray.shutdown()
    return {"update_s": round(statistics.median(update_s), 4), "sync_s": round(statistics.median(sync_s), 4),
            "updates": updates, "update_s_each": [round(x, 3) for x in update_s]}


def estimate(batch: int, rate: float, update_s: float, sync_s: float, runners_per_node: int) -> dict[str, Any]:
    """The synchronous iteration's time and env steps/s on N nodes (see the module's text)."""
    rows = []
    for nodes in NODES:
        sample_s = batch / (nodes * runners_per_node * rate)
        rows.append({"nodes": nodes, "runners": nodes * runners_per_node, "sample_s": round(sample_s, 3),
                     "iteration_s": round(sample_s + update_s + sync_s, 3),
                     "env_steps_per_s": round(batch / (sample_s + update_s + sync_s), 1),
                     "learner_share": round((update_s + sync_s) / (sample_s + update_s + sync_s), 3)})
    runners = batch / (rate * update_s)
    return {"rows": rows, "learner_bound_from_runners": round(runners, 1),
            "learner_bound_from_nodes": math.ceil(runners / runners_per_node),
            "ceiling_env_steps_per_s": round(batch / (update_s + sync_s), 1)}


def table(report: dict[str, Any]) -> str:
    est = report["estimate"]
    lines = [f"one runner: {report['runner_env_steps_per_s']:,.0f} env steps/s; update {report['update_s']:.2f} s "
             f"and sync {report['sync_s']:.3f} s per train batch of {report['train_batch']:,} env steps",
             "| nodes | runners | sampling s | iteration s | env steps/s | learner's share |",
             "|---|---|---|---|---|---|"]
    for r in est["rows"]:
        lines.append(f"| {r['nodes']} | {r['runners']} | {r['sample_s']:.2f} | {r['iteration_s']:.2f} | "
                     f"{r['env_steps_per_s']:,.0f} | {r['learner_share']:.0%} |")
    lines.append(f"the learner takes longer than the sampling from {est['learner_bound_from_runners']:,.1f} runners "
                 f"on ({est['learner_bound_from_nodes']} nodes of {report['runners_per_node']}); ceiling "
                 f"{est['ceiling_env_steps_per_s']:,.0f} env steps/s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.rllib.scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/rllib/rllib_2p.yaml", metavar="YAML", help="the RLlib config")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the RLlib config (repeatable)")
    p.add_argument("--seconds", type=float, default=30.0, help="seconds of the sampling measurement (default 30)")
    p.add_argument("--updates", type=int, default=5, help="timed updates, the median is reported (default 5)")
    p.add_argument("--runners-per-node", type=int, default=15,
                   help="env runners a node holds in the estimate (its CPUs less one; default 15)")
    p.add_argument("--json", metavar="OUT", help="write the measurement and the estimate to this JSON file")
    args = p.parse_args(argv)
    for name, value, lo, hi in (("--seconds", args.seconds, 1, 3600), ("--updates", args.updates, 1, 100),
                                ("--runners-per-node", args.runners_per_node, 1, 1024)):
        if not lo <= value <= hi:
            p.error(f"{name} must be from {lo} to {hi}, got {value:g}")
    check_json_out(p, args.json, "the estimate")
    try:
        config = load_config(args.config, [*args.overrides, "resources.env_runners=1"])
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    from .trainer import sampling_rate

    print(f"sampling with one env runner for {args.seconds:g} s ...", flush=True)
    sampling = sampling_rate(config, args.seconds)
    print(f"timing {args.updates} updates of {config.ppo.train_batch:,} env steps ...", flush=True)
    update = measure_update(config, args.updates)
    r = config.resources
    from keltis_env.core.recorded_paths import recorded_path, recorded_text

    # a results file is read elsewhere: its paths relative to the repository
    report: dict[str, Any] = {"config": recorded_path(args.config),
                              "overrides": [recorded_text(item) for item in args.overrides], "sampler": r.sampler,
                              "train_batch": config.ppo.train_batch, "envs_per_runner": r.envs_per_runner,
                              "runner_env_steps_per_s": sampling["env_steps_per_s"], "sampling": sampling, **update,
                              "runners_per_node": args.runners_per_node}
    report["estimate"] = estimate(config.ppo.train_batch, sampling["env_steps_per_s"], update["update_s"],
                                  update["sync_s"], args.runners_per_node)
    print(table(report))
    if args.json is not None:
        atomic_write_text(args.json, finite_json(report, args.json, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
