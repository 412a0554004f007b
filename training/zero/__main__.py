"""The command line of expert iteration from zero (:mod:`training.zero`).

    python -m training.zero --config configs/zero/keltis_2p.yaml [--set key=value ...] [--out RUN_DIR]
    python -m training.zero --resume RUN_DIR [--set minutes=480]
    python -m training.zero --describe                                    # every key
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from pathlib import Path

from keltis_env.core.output_files import FolderInUseError, OutputPathError, check_output_dir, claim_folder

from ..common.cli import add_overrides, add_run_source, print_error_line
from ..common.config import ConfigError
from .config import RESUMABLE, describe, load_config, load_resume_config
from .loop import Run

_DESCRIPTION = ("Expert iteration from zero: self-play with a search that knows only the rules and the network, "
                "the network fitted to the search's improved policies and the outcomes; resumable.")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.zero", description=_DESCRIPTION)
    add_run_source(p, "config file (configs/zero/keltis_2p.yaml)",
                   f"go on with the run in RUN_DIR where it stopped (--set may change only {', '.join(RESUMABLE)})",
                   required=False)
    add_overrides(p, "search.simulations=32")
    p.add_argument("--out", metavar="DIR", help="run folder (default runs/<name>-<time>); a folder of an earlier run "
                   "of the same config goes on like --resume")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    if args.describe:
        print(describe())
        return 0
    if (args.config is None) == (args.resume is None):
        print("give one of --config, --resume or --describe", file=sys.stderr)
        return 2
    if args.resume and args.out:
        print("give --out or --resume, not both (a resumed run stays in its folder)", file=sys.stderr)
        return 2
    try:
        if args.resume:
            run_dir = Path(args.resume)
            config = load_resume_config(run_dir, args.overrides)
        else:
            config = load_config(args.config, args.overrides)
            run_dir = Path(args.out) if args.out else Path("runs") / f"{config.name}-{time.strftime('%Y%m%d-%H%M%S')}"
            if (run_dir / "config.yaml").is_file() and (run_dir / "config.yaml").read_text() != config.to_yaml():
                raise ConfigError(f"{run_dir} holds a run of another config; resume it with --resume {run_dir}, or "
                                  "give another --out")
        check_output_dir(run_dir, "the run folder")
    except (ConfigError, OutputPathError) as exc:
        print_error_line(f"config error: {exc}")
        return 2
    command = shlex.join([sys.executable, "-m", "training.zero", *argv])
    run = Run(config, run_dir, progress=not args.quiet)
    from ..exit.loop import Stopped, sigterm_stops

    try:
        with claim_folder(run_dir, "the run folder"), sigterm_stops():
            run.prepare(command)
            data = run.run()
    except FolderInUseError as exc:
        print_error_line(f"python -m training.zero: {exc}")
        return 2
    except KeyboardInterrupt as stop:
        print(f"stopped; go on with: python -m training.zero --resume {run_dir}", file=sys.stderr, flush=True)
        return 128 + (signal.SIGTERM if isinstance(stop, Stopped) or getattr(stop, "signum", None) == signal.SIGTERM
                      else signal.SIGINT)
    print(f"run folder: {run_dir}\nreport: {run_dir / 'report.md'}\nnetwork: {data['network']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
