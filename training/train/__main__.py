"""Self-play training with sb3-contrib's MaskablePPO.

    python -m training.train --config configs/train/default.yaml [--set key=value ...]
    python -m training.train --resume runs/default-20250101-120000 [--set total_timesteps=2000000]
    python -m training.train --describe        # every config key, its default and meaning

A run trains the learner against an opponent pool (snapshots of itself, fixed bots),
evaluates it periodically, keeps the best checkpoint, and ends with a final evaluation
report (printed, and written to the run folder; see :mod:`training.sb3.trainer`). Ray
RLlib runs are ``python -m training.rllib``'s, with their own config (``configs/rllib/``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from ..common.cli import (
    add_overrides,
    add_run_source,
    print_error_line,
    quiet_threads,
    stop_on_signals,
)

quiet_threads()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.train", description=__doc__.split("\n\n")[0])
    add_run_source(p, "config file (configs/train/)", "continue a run from its last checkpoint", required=False)
    add_overrides(p, "ppo.learning_rate=1e-4")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    from ..common.config import ConfigError
    from ..sb3.config import describe, load_config
    from ..sb3.run_folder import RunFolderInUseError

    if args.describe:
        print(describe())
        return 0
    if not args.config and not args.resume:
        print("python -m training.train: give --config YAML or --resume RUN_DIR (or --describe)", file=sys.stderr)
        return 2
    command = shlex.join([sys.executable, "-m", "training.train", *argv])
    from keltis_env.core.output_files import is_disk_full

    from ..sb3.trainer import Trainer

    try:
        if args.resume:
            trainer = Trainer.resume(args.resume, command, args.overrides, progress=not args.no_progress)
        else:
            config = load_config(args.config, args.overrides)
            trainer = Trainer.new(config, command, progress=not args.no_progress)
    except RunFolderInUseError as exc:  # another process runs it: refused, nothing written
        print_error_line(f"python -m training.train: {exc}")
        return 2
    except ConfigError as exc:
        print_error_line(f"config error: {exc}")
        return 2
    print(f"run folder: {trainer.run_dir}", flush=True)
    from keltis_env.core.compile_notice import compile_notice

    try:
        with stop_on_signals(), compile_notice():  # a first compiled run compiles the kernels for minutes
            trainer.train()
            report = trainer.final_report()
    except KeyboardInterrupt:
        print(f"interrupted; resume with: python -m training.train --resume {trainer.run_dir}", file=sys.stderr)
        return 130
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        print_error_line(f"python -m training.train: {disk_full_text(exc, trainer.run_dir)}; the last checkpoint is "
                         f"kept: free some space, then resume with: python -m training.train --resume "
                         f"{trainer.run_dir}")
        return 1
    finally:
        trainer.close()  # the run folder is given back too
    print()
    print(report["markdown"])
    print(f"run folder: {trainer.run_dir}")
    return 0


def disk_full_text(exc: OSError, run_dir: Any) -> str:
    """One line for a full disk: the writer's own (:class:`~keltis_env.core.output_files.DiskFullError`
    names the file and what it needed), else the run folder's."""
    from keltis_env.core.output_files import DiskFullError

    if isinstance(exc, DiskFullError):
        return str(exc)
    where = f" writing {exc.filename}" if exc.filename else ""
    return f"no space left on the device of the run folder {run_dir}{where}"


if __name__ == "__main__":
    sys.exit(main())
