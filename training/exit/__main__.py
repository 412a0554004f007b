"""The command line of expert iteration (:mod:`training.exit`).

    python -m training.exit --config configs/exit/exit_2p.yaml [--set key=value ...] [--out RUN_DIR]
    python -m training.exit --resume RUN_DIR [--set rounds=20]
    python -m training.exit --refit RUN_DIR --out DIR [--set fit.epochs=4 ...]  # other fit settings, same labels
    python -m training.exit --describe                                    # every key
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import time
from pathlib import Path

from keltis_env.core.output_files import FolderInUseError, OutputPathError, check_output_dir, claim_folder, overlapping
from keltis_env.core.recorded_paths import recorded_text

from ..common.cli import add_overrides, add_run_source, print_error_line
from ..common.config import ConfigError
from .config import RESUMABLE, describe, load_config, load_refit_config, load_resume_config
from .fit import refit
from .loop import Run, Stopped, sigterm_stops

_DESCRIPTION = ("Expert iteration: the search guided by the network labels games, the network is fitted to the "
                "labels and kept if it beats the previous one; every stage resumable.")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.exit", description=_DESCRIPTION)
    add_run_source(p, "config file (configs/exit/exit_2p.yaml)",
                   f"go on with the run in RUN_DIR where it stopped (--set may change only {', '.join(RESUMABLE)})",
                   required=False)
    p.add_argument("--refit", metavar="RUN_DIR", help="fit the start network of the run in RUN_DIR afresh to the "
                   "labels of all its labelled rounds, into --out (--set may change only seed and fit.*)")
    add_overrides(p, "label.games=100")
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
    if sum(x is not None for x in (args.config, args.resume, args.refit)) != 1:
        print("give one of --config, --resume, --refit or --describe", file=sys.stderr)
        return 2
    if args.refit:
        return _refit(args, argv)
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
    command = shlex.join([sys.executable, "-m", "training.exit", *argv])
    run = Run(config, run_dir, progress=not args.quiet)
    try:
        with claim_folder(run_dir, "the expert-iteration run folder"), sigterm_stops():
            run.prepare(command)
            data = run.run()
    except FolderInUseError as exc:  # another process runs it: refused, nothing written
        print_error_line(f"python -m training.exit: {exc}")
        return 2
    except KeyboardInterrupt as stop:
        print(f"stopped; go on with: python -m training.exit --resume {run_dir}", file=sys.stderr, flush=True)
        return 128 + (signal.SIGTERM if isinstance(stop, Stopped) or getattr(stop, "signum", None) == signal.SIGTERM
                      else signal.SIGINT)
    print(f"run folder: {run_dir}\nreport: {run_dir / 'report.md'}\nnetwork: {data['network']}")
    return 0


def _refit(args: argparse.Namespace, argv: list[str]) -> int:
    try:
        if not args.out:
            raise ConfigError("--refit needs --out DIR, the folder of the refitted network")
        config = load_refit_config(args.refit, args.overrides)
        out = Path(args.out)
        if overlapping(out, args.refit):
            raise ConfigError(f"--out {out} lies in the run folder {args.refit}; give a folder outside it")
        check_output_dir(out, "the refit's folder")
        if (out / "fit.json").is_file():
            raise ConfigError(f"{out} holds a refit already (fit.json); give another --out")
        with claim_folder(out, "the refit's folder"):
            stats = refit(config, Path(args.refit), out)
    except (ConfigError, OutputPathError) as exc:
        print_error_line(f"config error: {exc}")
        return 2
    (out / "command.txt").write_text(recorded_text(shlex.join([sys.executable, "-m", "training.exit", *argv])) + "\n")
    print(f"refitted on rounds {stats['rounds']}: searched move {stats['accuracy']:.1%} of {stats['decisions']:,} "
          f"held-out decisions\nnetwork: {out / 'network.zip'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
