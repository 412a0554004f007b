"""The command line of expert iteration from zero (:mod:`training.zero`).

    python -m training.zero --config configs/zero/keltis_2p.yaml [--set key=value ...] [--out RUN_DIR]
    python -m training.zero --resume RUN_DIR [--set minutes=480]
    python -m training.zero --describe                                    # every key
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from keltis_env.core.output_files import OutputPathError

from ..common.cli import add_overrides, add_run_folder, add_run_source, open_run, print_error_line, run_in_folder
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
    add_run_folder(p)
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
        config, run_dir = open_run(args, load_config, load_resume_config)
    except (ConfigError, OutputPathError) as exc:
        print_error_line(f"config error: {exc}")
        return 2
    command = shlex.join([sys.executable, "-m", "training.zero", *argv])
    run = Run(config, run_dir, progress=not args.quiet)

    def body() -> dict[str, Any]:
        from keltis_env.core.compile_notice import compile_notice

        with compile_notice():  # a first run on a machine compiles the search's kernels
            run.prepare(command)
            return run.run()

    data = run_in_folder("python -m training.zero", run_dir, "the run folder", body)
    if isinstance(data, int):
        return data
    print(f"run folder: {run_dir}\nreport: {run_dir / 'report.md'}\nnetwork: {data['network']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
