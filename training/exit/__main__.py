"""The command line of expert iteration (:mod:`training.exit`).

    python -m training.exit --config configs/exit/exit_2p.yaml [--set key=value ...] [--out RUN_DIR]
    python -m training.exit --resume RUN_DIR [--set rounds=20]
    python -m training.exit --refit RUN_DIR --out DIR [--set fit.epochs=4 ...]  # other fit settings, same labels
    python -m training.exit --describe                                    # every key
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import OutputPathError, check_output_dir, claim_folder, overlapping
from keltis_env.core.recorded_paths import recorded_text

from ..common.cli import add_overrides, add_run_folder, add_run_source, open_run, print_error_line, run_in_folder
from ..common.config import ConfigError
from .config import RESUMABLE, describe, load_config, load_refit_config, load_resume_config
from .fit import refit
from .loop import Run

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
    add_run_folder(p)
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
        config, run_dir = open_run(args, load_config, load_resume_config)
    except (ConfigError, OutputPathError) as exc:
        print_error_line(f"config error: {exc}")
        return 2
    command = shlex.join([sys.executable, "-m", "training.exit", *argv])
    run = Run(config, run_dir, progress=not args.quiet)

    def body() -> dict[str, Any]:
        run.prepare(command)
        return run.run()

    data = run_in_folder("python -m training.exit", run_dir, "the expert-iteration run folder", body)
    if isinstance(data, int):
        return data
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
