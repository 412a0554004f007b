"""Training throughput: learner steps per second end to end (collection and PPO updates).

    python -m training.bench --config configs/train/default.yaml --seconds 60 --json bench.json
    python -m training.bench --zero configs/zero/keltis_2p.yaml --set device=cuda --seconds 60

Trains the config's network for ``--seconds`` on the batched collector and on
Stable-Baselines3's stock ``SubprocVecEnv`` in turn, from the same start, and reports both
rates, their ratio and where the time goes (:mod:`training.bench.throughput` says how).
With ``--zero``, an expert-iteration config instead: its self-play's decisions per second on
the device its ``device`` key names, and the network's share of the time
(:mod:`training.zero.throughput`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..common.cli import check_json_out, print_error_line, quiet_threads

quiet_threads()


#: the longest measurement per environment (a day)
MAX_SECONDS = 86400.0


def main(argv: list[str] | None = None) -> int:
    from keltis_env.cli.arguments import seconds

    p = argparse.ArgumentParser(prog="python -m training.bench", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", metavar="YAML", help="training config (see configs/)")
    src.add_argument("--zero", metavar="YAML", help="an expert-iteration config (configs/zero/): measure its "
                                                    "self-play's decisions per second instead")
    src.add_argument("--describe", action="store_true", help="print every key of the training config and exit")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, as in training.train (repeatable)")
    p.add_argument("--seconds", type=seconds(MAX_SECONDS), default=60.0,
                   help=f"measured seconds per environment, > 0 and <= {MAX_SECONDS:g} (default 60)")
    p.add_argument("--baseline-envs", type=int, default=None,
                   help="environments (processes) of the SubprocVecEnv baseline (default: the config's n_envs)")
    p.add_argument("--only", choices=("collector", "baseline"), help="measure one of the two")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    args = p.parse_args(argv)
    if args.describe:
        from ..sb3.config import describe

        print(describe())
        return 0
    if args.baseline_envs is not None and args.baseline_envs < 1:
        p.error(f"--baseline-envs must be >= 1, got {args.baseline_envs}")
    from keltis_env.core.output_files import atomic_write_text

    check_json_out(p, args.json, "the results")
    if args.zero is not None:
        if args.only or args.baseline_envs is not None:
            p.error("--only and --baseline-envs measure the PPO collector; --zero takes neither")
        return _zero(args)

    from ..common.config import ConfigError
    from ..sb3.config import load_config
    from .throughput import measure, summary_line

    try:
        config = load_config(args.config, args.overrides)
    except ConfigError as exc:
        print_error_line(f"config error: {exc}")
        return 2
    kinds = [args.only] if args.only else ["collector", "baseline"]
    results: dict[str, Any] = {}
    for kind in kinds:
        print(f"{kind}: measuring for {args.seconds:g} s after a warm-up rollout ...", flush=True)
        results[kind] = measure(config, kind, args.seconds, args.baseline_envs)
        print(f"{kind}: {summary_line(results[kind])}", flush=True)
    from keltis_env.core.recorded_paths import recorded_path, recorded_text

    # a results file is read elsewhere: its paths relative to the repository
    report: dict[str, Any] = {"config": recorded_path(args.config),
                              "overrides": [recorded_text(item) for item in args.overrides], "seconds": args.seconds,
                              "cpus": os.cpu_count(), "torch_threads": config.torch_threads, **results}
    if "collector" in results:
        report["steps_per_s"] = results["collector"]["steps_per_s"]
    if "baseline" in results:
        report["baseline_steps_per_s"] = results["baseline"]["steps_per_s"]
    if len(results) == 2:
        report["ratio"] = report["steps_per_s"] / report["baseline_steps_per_s"]
        print(f"ratio: {report['ratio']:.2f}x the stock SubprocVecEnv baseline of this run")
        c, b = results["collector"]["steps_per_cpu_s"], results["baseline"]["steps_per_cpu_s"]
        if c and b:
            report["cpu_ratio"] = c / b
            print(f"per CPU second: {report['cpu_ratio']:.2f}x (on a shared machine the wall-time ratio also "
                  "depends on how many processes each side runs)")
    if args.json is not None:
        atomic_write_text(args.json, json.dumps(report, indent=1))
    return 0


def _zero(args: argparse.Namespace) -> int:
    """``--zero``: the expert-iteration config's self-play throughput."""
    from keltis_env.core.compile_notice import compile_notice
    from keltis_env.core.output_files import atomic_write_text
    from keltis_env.core.recorded_paths import recorded_path, recorded_text

    from ..common.config import ConfigError
    from ..zero.config import load_config
    from ..zero.throughput import measure, summary_line

    try:
        config = load_config(args.zero, args.overrides)
    except ConfigError as exc:
        print_error_line(f"config error: {exc}")
        return 2
    print(f"self-play of {recorded_path(args.zero)}: a warm-up, then {args.seconds:g} s ...", flush=True)
    with compile_notice():  # a first run on a machine compiles the search's kernels
        result = measure(config, args.seconds, log=lambda line: print(line, flush=True))
    print(summary_line(result), flush=True)
    if args.json is not None:
        overrides = [recorded_text(item) for item in args.overrides]
        report = {"zero_config": recorded_path(args.zero), "overrides": overrides, **result}
        atomic_write_text(args.json, json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
