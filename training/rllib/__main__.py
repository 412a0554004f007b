"""The command line of the Ray RLlib trainer (:mod:`training.rllib.trainer`).

    python -m training.rllib --config configs/rllib/rllib_2p.yaml [--set key=value ...]
    python -m training.rllib --config configs/rllib/rllib_2p.yaml --address auto   # join a Ray cluster
    python -m training.rllib --resume runs/rllib_2p-20260101-120000 [--set stop.minutes=30]
    python -m training.rllib --describe                                      # every key
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from ..common.cli import add_overrides, add_run_source
from ..common.config import ConfigError
from ..common.jsonfile import finite_json
from .config import RESUMABLE, describe, load_config, load_resume_config
from .trainer import latest_checkpoint, sampling_rate, train

_DESCRIPTION = "Multi-agent self-play PPO with Ray RLlib (new API stack), for any registered game."


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.rllib", description=_DESCRIPTION)
    add_run_source(p, "config file (configs/rllib/rllib_2p.yaml)",
                   f"go on from the run's newest checkpoint (--set may change only {', '.join(RESUMABLE)})")
    add_overrides(p, "stop.minutes=5")
    p.add_argument("--address", help="join an existing Ray cluster (HOST:PORT or 'auto'); default: a local Ray")
    p.add_argument("--out", metavar="DIR", help="run folder (default runs/<name>-<time>)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--sampling", type=float, metavar="SECONDS",
                   help="instead of training: measure sampling alone (env steps/s) for SECONDS and exit")
    return p


def sb3_config(path: str) -> None:
    """A :class:`ConfigError` when ``path`` is a config of ``python -m training.train`` (it
    names ``backend``, as the files that earlier version ran on RLlib did): this command
    reads its own keys, which ``configs/rllib/`` shows."""
    from ..common.config import read_with_base

    if "backend" in read_with_base(Path(path), ()):
        raise ConfigError(f"{path} is a config of python -m training.train (it names backend); this command reads "
                          "its own keys (python -m training.rllib --describe), as configs/rllib/*.yaml do: "
                          "configs/rllib/rllib_warm_2p.yaml is the earlier backend: rllib file rllib_warm_2p")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.describe:
        print(describe(), end="")
        return 0
    try:
        if args.resume:
            config = load_resume_config(args.resume, args.overrides)
            latest_checkpoint(args.resume)
        else:
            sb3_config(args.config)
            config = load_config(args.config, args.overrides)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    try:
        import ray  # noqa: F401
    except ImportError:
        print("training.rllib needs Ray RLlib: pip install -c constraints.txt -e '.[train,distributed]'",
              file=sys.stderr)
        return 2
    if args.sampling:
        print(finite_json(sampling_rate(config, args.sampling, address=args.address), "the sampling rate"))
        return 0
    if args.resume and args.out:
        print("give --out or --resume, not both (a resumed run stays in its folder)", file=sys.stderr)
        return 2
    if args.resume:
        run_dir = Path(args.resume)
    else:
        run_dir = Path(args.out) if args.out else Path("runs") / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    command = shlex.join([sys.executable, "-m", "training.rllib", *argv])
    try:
        summary = train(config, run_dir, command, address=args.address, progress=not args.quiet,
                        resume=bool(args.resume), sigterm_stops=True)
    except KeyboardInterrupt:
        return 130
    print(f"run folder: {run_dir}\nfinal checkpoint: {summary['checkpoint']}\npolicy: {summary['policy']} "
          f"(keltis evaluate --game {config.env.game} ppo:{summary['policy']} random)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
