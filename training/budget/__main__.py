"""The command line of the learning-budget track (:mod:`training.budget`).

    python -m training.budget --config configs/train/default.yaml --decisions 2e6 --seeds 3 [--out DIR] [--quick]
    python -m training.budget --config configs/train/default.yaml --decisions 2e6 --seeds 3 --resume
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..common.cli import (
    add_overrides,
    print_error_line,
    quiet_threads,
    stop_on_signals,
)

quiet_threads()

_DESCRIPTION = ("A training config trained for a fixed number of the learning policy's decisions, for several "
                "seeds; each final policy scored on the benchmark's heuristic and planner rungs.")


class _Renamed(argparse.Action):
    """An option of an earlier version: refused at once, naming the option it is now."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error(f"{option_string} is now --config (a training config, or a recipe of configs/recipes/ with a "
                     "train stage)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.budget", description=_DESCRIPTION)
    p.add_argument("--recipe", action=_Renamed, help=argparse.SUPPRESS)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", dest="config", metavar="YAML",
                     help="a training config: SB3 (configs/train/default.yaml), RLlib (configs/rllib/rllib_2p.yaml), "
                          "expert iteration (configs/zero/keltis_2p.yaml), or a recipe of configs/recipes/ with a "
                          "train stage")
    src.add_argument("--describe", action="store_true",
                     help="print every key --set may change (an SB3 config's; RLlib: python -m training.rllib "
                          "--describe; zero: python -m training.zero --describe) and exit")
    p.add_argument("--decisions", metavar="N",
                   help="the budget: decisions of the learning policy per seed (e.g. 2e6, 300_000)")
    p.add_argument("--seeds", type=int, default=3, metavar="N", help="seeds 0 .. N-1 (default 3)")
    p.add_argument("--out", default="benchmarks/results/budget", metavar="DIR",
                   help="where the result JSON and the curves go (default benchmarks/results/budget)")
    p.add_argument("--runs", metavar="DIR", help="the seeds' run folders (default runs/budget/NAME-BUDGET)")
    p.add_argument("--resume", action="store_true",
                   help="go on with the runs folder: finished seeds are kept, a stopped one resumes")
    p.add_argument("--quick", action="store_true", help="score with the protocol's quick game count")
    p.add_argument("--workers", type=int, default=2, help="processes playing the scoring games (default 2)")
    p.add_argument("--protocol", metavar="DIR", help="the benchmark protocol's folder (default the shipped v1)")
    p.add_argument("--curve-points", type=int, default=4, metavar="K",
                   help="SB3: evaluate at least K times during each run for its curve (0: the config's eval.every)")
    add_overrides(p, "eval.games=100", what="a key of the config for every seed")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.describe:
        from ..sb3.config import describe

        print(describe())
        return 0
    if args.decisions is None:
        parser.error("the following arguments are required: --decisions")
    from ..common.config import ConfigError, as_int
    from .results import markdown
    from .track import BudgetRequest, run_budget

    command = shlex.join([sys.executable, "-m", "training.budget", *argv])
    try:
        request = BudgetRequest(
            config=args.config, decisions=as_int("--decisions", args.decisions), seeds=args.seeds,
            out=Path(args.out), runs=Path(args.runs) if args.runs else None, resume=args.resume, quick=args.quick,
            overrides=tuple(args.overrides), workers=args.workers,
            protocol=Path(args.protocol) if args.protocol else None, curve_points=args.curve_points,
            progress=not args.no_progress)
        with stop_on_signals():
            data, path = run_budget(request, command, result_command(args))
    except ConfigError as exc:
        print_error_line(f"python -m training.budget: {exc}")
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished seeds are kept and a stopped run has its checkpoint; go on with the same "
              "command and --resume", file=sys.stderr)
        return 130
    print()
    print(markdown(data))
    print(f"result: {path}")
    return 0


def result_command(args: argparse.Namespace) -> str:
    """The command that reproduces the result (what changes only speed, the runs' place or
    resuming is left out: --runs, --resume, --workers, --no-progress)."""
    words = ["python", "-m", "training.budget", "--config", args.config, "--decisions", args.decisions,
             "--seeds", str(args.seeds)]
    if args.quick:
        words.append("--quick")
    if args.curve_points != build_parser().get_default("curve_points"):
        words += ["--curve-points", str(args.curve_points)]
    if args.protocol:
        words += ["--protocol", args.protocol]
    for item in args.overrides:
        words += ["--set", item]
    if args.out != build_parser().get_default("out"):
        words += ["--out", args.out]
    return shlex.join(words)


if __name__ == "__main__":
    sys.exit(main())
