"""Self-play training with sb3-contrib's MaskablePPO, or with Ray RLlib (``backend: rllib``).

    python -m training.train --config configs/train/default.yaml [--set key=value ...]
    python -m training.train --resume runs/default-20250101-120000 [--set total_timesteps=2000000]
    python -m training.train --describe        # every config key, its default and meaning

A run trains the learner against an opponent pool (snapshots of itself, fixed bots),
evaluates it periodically, keeps the best checkpoint, and ends with a final evaluation
report (printed, and written to the run folder; see :mod:`training.sb3.trainer`).

A recipe file that names ``backend: rllib`` runs on Ray RLlib instead
(:mod:`training.rllib.kit`: which keys it honours; the others are refused naming them), in a
Python with Ray (``.venv-distributed/bin/python -m training.train --config FILE``); elsewhere
it is refused with that command. ``--resume`` of an RLlib run goes on with RLlib.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import Any

from ..common.cli import (
    add_overrides,
    add_run_source,
    quiet_threads,
    stop_on_signals,
)

quiet_threads()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.train", description=__doc__.split("\n\n")[0])
    add_run_source(p, "config file (see configs/)", "continue a run from its last checkpoint", required=False)
    add_overrides(p, "ppo.learning_rate=1e-4")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    from ..common.config import ConfigError
    from ..rllib import kit
    from ..sb3.config import BACKENDS, describe, load_config
    from ..sb3.run_folder import RunFolderInUseError

    if args.describe:
        print(describe())
        print(f"\nbackend: rllib (training.rllib.kit) refuses these keys unless as given:\n{kit.describe_mapping()}")
        return 0
    if not args.config and not args.resume:
        print("python -m training.train: give --config YAML or --resume RUN_DIR (or --describe)", file=sys.stderr)
        return 2
    command = shlex.join([sys.executable, "-m", "training.train", *argv])
    try:
        rllib = _rllib_run(args, argv, command, load_config, BACKENDS)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    if rllib is not None:
        return rllib
    from ..sb3.trainer import Trainer

    try:
        if args.resume:
            trainer = Trainer.resume(args.resume, command, args.overrides, progress=not args.no_progress)
        else:
            config = load_config(args.config, args.overrides)
            trainer = Trainer.new(config, command, progress=not args.no_progress)
    except RunFolderInUseError as exc:  # another process runs it: refused, nothing written
        print(f"python -m training.train: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    print(f"run folder: {trainer.run_dir}", flush=True)
    try:
        with stop_on_signals():
            trainer.train()
            report = trainer.final_report()
    except KeyboardInterrupt:
        print(f"interrupted; resume with: python -m training.train --resume {trainer.run_dir}", file=sys.stderr)
        return 130
    finally:
        trainer.close()  # the run folder is given back too
    print()
    print(report["markdown"])
    print(f"run folder: {trainer.run_dir}")
    return 0


def _rllib_run(args: argparse.Namespace, argv: list[str], command: str, load_config: Any,
               backends: tuple[str, ...]) -> int | None:
    """Run ``args`` on RLlib when they name an RLlib recipe (``backend: rllib``) or an RLlib
    run to resume; returns the exit status, or ``None`` for an SB3 run. Without Ray the run
    is refused in one line naming the command to use."""
    from pathlib import Path

    from ..common.folders import run_kind
    from ..rllib import kit
    from ..rllib.config import load_resume_config

    if args.resume:
        found = run_kind(args.resume)
        if found is None or found.key != "rllib" or not kit.is_kit_run(args.resume):
            return None  # the SB3 trainer's resume: it names another command's run
        config = load_resume_config(args.resume, kit.resume_overrides(args.overrides))
        run_dir = Path(args.resume)
    else:
        if load_config(args.config, args.overrides, backends=backends).backend != "rllib":
            return None
        config, train_config = kit.from_file(args.config, args.overrides,
                                             lambda path, overrides: load_config(path, overrides, backends=backends))
        kit_yaml = train_config.to_yaml()
        run_dir = Path(train_config.runs_dir) / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    missing = kit.ray_missing(argv)
    if missing:
        print(missing, file=sys.stderr)
        return 2
    return kit.run(config, run_dir, command, progress=not args.no_progress, resume=bool(args.resume),
                   kit_yaml="" if args.resume else kit_yaml)


if __name__ == "__main__":
    sys.exit(main())
