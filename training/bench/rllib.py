"""Learner steps per second of the RLlib trainer against the SB3 collector's, in one command.

    .venv-distributed/bin/python -m training.bench.rllib [--config configs/rllib/rllib_2p.yaml]
        [--set key=value ...] [--sb3-config configs/train/default.yaml] [--sb3-set key=value ...]
        [--seconds 30] [--runs 3] [--json bench.json]

Both sides train end to end (sampling and PPO updates) for ``--seconds`` after a warm-up
iteration, ``--runs`` times in turn (RLlib, SB3, RLlib, SB3, ...), and the report gives each
side's median rate, the ratio of the medians and the median of the runs' ratios. A learner
step is a decision of the trained network (``main`` on RLlib, the learner on SB3), as the
budget track counts them.

* **RLlib**: the config (``--config``, ``--set``) built as ``python -m training.rllib``
  builds it, on a local Ray of ``resources.num_cpus``; the rate is the growth of
  ``num_module_steps_sampled_lifetime/main`` over whole training iterations.
* **SB3**: :func:`training.bench.throughput.measure` (what ``python -m training.bench``
  measures for the collector) on ``--sb3-config`` with the RLlib trainer's network
  (``model.hidden``, ``model.activation``), batch sizes (``ppo.train_batch`` as
  ``ppo.n_steps`` x ``n_envs``, ``ppo.minibatch``, ``ppo.epochs``), reward, turn cap, game
  options and opponents (``league.weights``: ``self`` and ``league`` as the pool's ``self``,
  a frozen snapshot; the bots by name), its relabelling (``env.relabel``); ``--sb3-set`` overrides after that.

What Ray's own processes cost: the CPU seconds, over the measured window, of this process
(the driver: the learner, and the sampling with ``resources.env_runners: 0``), of the env
runner actors and of Ray's other processes (GCS server, raylet, dashboard agents, log
monitor, idle workers), as found under this process in ``/proc`` (Linux). Each side's steps
per CPU second (all its processes) and their ratio are reported too: on a shared machine the
wall-time ratio also depends on how much of the CPU each side gets.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ..common.cli import check_json_out, print_error_line, quiet_threads

quiet_threads()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.bench.rllib", description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/rllib/rllib_2p.yaml", metavar="YAML", help="the RLlib config")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the RLlib config (repeatable)")
    p.add_argument("--sb3-config", default="configs/train/default.yaml", metavar="YAML", help="the SB3 training config")
    p.add_argument("--sb3-set", dest="sb3_overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key of the SB3 config after the RLlib trainer's sizes (repeatable)")
    p.add_argument("--seconds", type=float, default=30.0, help="measured seconds per run and side (default 30)")
    p.add_argument("--runs", type=int, default=3, help="runs per side, the median is reported (default 3)")
    p.add_argument("--only", choices=("rllib", "sb3"), help="measure one side")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    args = p.parse_args(argv)
    if not 0 < args.seconds <= 3600:
        p.error(f"--seconds must be > 0 and <= 3600, got {args.seconds:g}")
    if not 1 <= args.runs <= 100:
        p.error(f"--runs must be from 1 to 100, got {args.runs}")
    from keltis_env.core.output_files import atomic_write_text

    check_json_out(p, args.json, "the results")
    from ..common.config import ConfigError
    from ..rllib.config import load_config

    try:
        rllib = load_config(args.config, args.overrides)
        sb3 = sb3_config(rllib, args.sb3_config, args.sb3_overrides)
    except ConfigError as exc:
        print_error_line(f"config error: {exc}")
        return 2
    report = run(rllib, sb3, args)
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(report, indent=1))
    return 0


def run(rllib: Any, sb3: Any, args: argparse.Namespace) -> dict[str, Any]:
    """``args.runs`` runs of each side in turn; prints each and the summary; returns the report."""
    sides = [args.only] if args.only else ["rllib", "sb3"]
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for k in range(args.runs):
        for side in sides:
            print(f"{side} run {k + 1}/{args.runs}: measuring for {args.seconds:g} s after a warm-up ...", flush=True)
            result = measure_rllib(rllib, args.seconds) if side == "rllib" else measure_sb3(sb3, args.seconds)
            results[side].append(result)
            print(f"{side} run {k + 1}: {line(result)}", flush=True)
    report: dict[str, Any] = {"rllib_config": args.config, "rllib_overrides": args.overrides,
                              "sb3_config": args.sb3_config, "sb3_overrides": args.sb3_overrides,
                              "seconds": args.seconds, "runs": args.runs, "cpus": os.cpu_count(),
                              "load_average": [round(x, 2) for x in os.getloadavg()], **results}
    for side in sides:
        report[f"{side}_steps_per_s"] = statistics.median(r["steps_per_s"] for r in results[side])
        print(f"{side}: median {report[f'{side}_steps_per_s']:,.0f} learner steps/s over {args.runs} runs")
    if len(sides) == 2:
        report["ratio"] = report["rllib_steps_per_s"] / report["sb3_steps_per_s"]
        pairs = [a["steps_per_s"] / b["steps_per_s"] for a, b in zip(results["rllib"], results["sb3"], strict=True)]
        report["ratio_of_runs"] = statistics.median(pairs)
        print(f"ratio RLlib / SB3: {report['ratio']:.2f} (medians); {report['ratio_of_runs']:.2f} (median of the "
              f"runs' ratios: {', '.join(f'{x:.2f}' for x in pairs)})")
        per_cpu = [a["steps_per_cpu_s"] / b["steps_per_cpu_s"] for a, b in zip(results["rllib"], results["sb3"],
                                                                               strict=True)]
        report["cpu_ratio"] = statistics.median(per_cpu)
        print(f"per CPU second (all of each side's processes): {report['cpu_ratio']:.2f} (median of the runs'; on a "
              "shared machine the wall-time ratio also depends on how much of the CPU each side gets)")
    return report


def line(result: dict[str, Any]) -> str:
    """One run as a line: the rate and, for RLlib, where its CPU time went."""
    text = (f"{result['steps_per_s']:,.0f} learner steps/s ({result['steps']:,} in {result['seconds']:.1f} s; "
            f"{result['steps_per_cpu_s'] or 0:,.0f} per CPU second)")
    cpu = result.get("cpu_seconds")
    if cpu:
        parts = ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in cpu.items())
        text += f"; CPU seconds: {parts}"
    return text


# ---------------------------------------------------------------------- RLlib
def measure_rllib(config: Any, seconds: float) -> dict[str, Any]:
    """Train the RLlib config on a local Ray for ``seconds`` after one warm-up iteration; the rate
    of ``main``'s decisions over whole iterations, and the CPU seconds of the processes."""
    import ray
    import torch

    from keltis_env.integrations.rllib import MAIN

    from ..rllib.trainer import build_algorithm_config, copy_main_to, init_ray, snapshot_ids

    torch.set_num_threads(config.resources.torch_threads)
    init_ray(config, None)
    try:
        algo = build_algorithm_config(config).build_algo()
        for slot in snapshot_ids(config):
            copy_main_to(algo, slot)

        def learner_steps(result: dict[str, Any]) -> int:
            runners = result.get("env_runners", {})
            return int(runners.get("num_module_steps_sampled_lifetime", {}).get(MAIN, 0))

        first = learner_steps(algo.train())  # warm-up: the runners' first games, the first update
        cpu_before, start = process_cpu(), time.perf_counter()
        iterations = 0
        while True:
            last = learner_steps(algo.train())
            iterations += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        cpu_after = process_cpu()
        algo.stop()
    finally:
        ray.shutdown()
    steps = last - first
    cpu = {k: round(cpu_after.get(k, 0.0) - cpu_before.get(k, 0.0), 2) for k in cpu_after}
    return {"steps": steps, "seconds": round(elapsed, 2), "steps_per_s": steps / elapsed, "iterations": iterations,
            "steps_per_cpu_s": steps / max(sum(cpu.values()), 1e-9),
            "env_runners": config.resources.env_runners, "games_per_runner": config.resources.envs_per_runner,
            "sampler": config.resources.sampler, "cpu_seconds": cpu,
            "ray_share_of_cpu": round(cpu.get("ray_processes", 0.0) / max(sum(cpu.values()), 1e-9), 4)}


def process_cpu() -> dict[str, float]:
    """CPU seconds so far of this process (``driver``), of the env runner actors below it
    (``env_runners``) and of Ray's other processes below it (``ray_processes``), from ``/proc``."""
    out = {"driver": sum(os.times()[:2]), "env_runners": 0.0, "ray_processes": 0.0}
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            names[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        # own and waited-for children's user and system time
        times[int(entry.name)] = sum(int(x) for x in fields[11:15]) / tick
    me = os.getpid()
    for pid in times:
        ancestor, seen = parents.get(pid), 0
        while ancestor not in (None, 0, 1, me) and seen < 64:
            ancestor, seen = parents.get(ancestor), seen + 1
        if ancestor != me:
            continue
        key = "env_runners" if "EnvRunner" in names.get(pid, "") else "ray_processes"
        out[key] += times[pid]
    return out


# ---------------------------------------------------------------------- SB3
def sb3_config(rllib: Any, path: str, extra: list[str]) -> Any:
    """The SB3 config at ``path`` with the RLlib trainer's network, batch sizes, reward, game
    options and opponents (see the module doc), then ``extra``."""
    from ..common.config import ConfigError
    from ..sb3.config import load_config

    base = load_config(path, [])
    n_envs = base.n_envs
    if rllib.ppo.train_batch % n_envs:
        raise ConfigError(f"ppo.train_batch ({rllib.ppo.train_batch}) must be a multiple of the SB3 config's n_envs "
                          f"({n_envs}) to give both the same rollout")
    weights: dict[str, float] = {}
    for kind, weight in rllib.league.weights.items():
        name = "self" if kind in ("self", "league") else kind
        weights[name] = weights.get(name, 0.0) + float(weight)
    options = dict(rllib.env.options)
    sizes = [f"network.net_arch={json.dumps(list(rllib.model.hidden))}", f"network.activation={rllib.model.activation}",
             f"ppo.n_steps={rllib.ppo.train_batch // n_envs}", f"ppo.batch_size={rllib.ppo.minibatch}",
             f"ppo.n_epochs={rllib.ppo.epochs}", f"env.reward={rllib.env.reward}",
             f"env.turn_cap={getattr(rllib.env, 'turn_cap', 'truncate')}", f"env.game={rllib.env.game}",
             f"env.num_players={rllib.env.num_players}", f"pool.weights={json.dumps(weights)}",
             f"relabel={getattr(rllib.env, 'relabel', 'none')}",
             *(f"env.{k}={json.dumps(v)}" for k, v in options.items())]
    return load_config(path, [*sizes, *extra])


def measure_sb3(config: Any, seconds: float) -> dict[str, Any]:
    """The SB3 collector's rate (:func:`training.bench.throughput.measure`)."""
    from .throughput import measure

    result = measure(config, "collector", seconds)
    result["cpu_seconds"] = {"all_processes": result["cpu_seconds"]}
    return result


if __name__ == "__main__":
    sys.exit(main())
