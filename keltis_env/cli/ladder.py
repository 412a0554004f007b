"""``keltis ladder``: score an agent on a track of the benchmark protocol (an opponent
ladder over fixed duplicate deals), with a rating on the track's fixed scale.

Output paths are checked before the first game. ``--out DIR`` keeps every finished game
in DIR, and ``--resume DIR`` continues that run. Ctrl-C or SIGTERM stops the worker
processes and reports the games finished so far as a partial scorecard (``--json`` and
``--markdown`` then write ``NAME.partial.json`` / ``NAME.partial.md``); the exit status is
130 after Ctrl-C, 143 after SIGTERM, 2 for bad arguments, 1 when an agent failed.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import add_agent_options, agent_failure, count, disk_full, print_error

if TYPE_CHECKING:
    from keltis_env.benchmark import Scorecard

#: the command as a user types it (recorded in the scorecard)
PROGRAM = "keltis ladder"

HELP = "score an agent on a benchmark track: an opponent ladder over fixed deals, with a rating"

INTERRUPTED = 130
TERMINATED = 143

EPILOG = """\
An AGENT is a bot spec (random, heuristic, ppo:PATH, ...). The TRACKs of protocol v1
are keltis-2p, keltis-3p, keltis-4p, dice-2p, dice-3p and dice-4p. The agent plays
every rung of the track's ladder (random, heuristic, planner, ismcts, the track's
frozen policy) at a table of its own against players-1 copies of the rung, over the
track's duplicate deals: about 1,100 games per rung, or about 200 with --quick (the
scorecard says so). The ismcts rung is slow: hours on two cores for the 3- and
4-player tracks; keep the games with --out and continue with --resume. Before the
first game the run prints how many games it plays and about how long they take.

With --private-deals the deals are dealt from a seed drawn from the operating
system's randomness instead of the track's public one: the run prints a commitment
(the SHA-256 of the deal seeds) before the first game and reveals the seed in the
scorecard at the end, for organisers who score other people's agents
(docs/benchmark.md: what a scorecard certifies). A py: agent's seeds are drawn
under a secret of the run, so that it cannot tell from them which deal it plays.

Every move has the protocol's time limit (10 seconds in v1): an agent over it
loses that game on time, and the scorecard counts such games per rung. An agent
that fails (raises, calls sys.exit, returns an illegal action, or kills its
worker process) stops the run with one line naming it, its seat, the game and
what happened (--traceback adds its traceback); the finished games stay in --out.

examples:
  keltis ladder heuristic --track keltis-2p --quick
  keltis ladder ppo:my_policy.zip --track keltis-2p --out runs/ladder-mine --json mine.json
  keltis ladder ppo:my_policy.zip --track keltis-2p --resume runs/ladder-mine --json mine.json
  keltis ladder heuristic --track dice-3p --rungs random,heuristic --markdown card.md
  keltis ladder py:examples/my_agent.py:EpsilonFirst --track keltis-2p --private-deals --json card.json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EPILOG
    p.add_argument("agent", metavar="AGENT", help="the agent's bot spec")
    p.add_argument("--track", required=True, help="the track, e.g. keltis-2p")
    p.add_argument("--quick", action="store_true", help="the protocol's quick game count (about 200 games per rung)")
    p.add_argument("--rungs", default=None, metavar="A,B",
                   help="only these rungs, comma-separated (default: the whole ladder)")
    p.add_argument("--workers", type=count(1, 256), default=2, help="worker processes, at most 256 (default 2)")
    p.add_argument("--json", metavar="PATH", help="write the scorecard as JSON")
    p.add_argument("--markdown", metavar="PATH", help="write the scorecard as Markdown")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--out", metavar="DIR", help="keep every finished game in this new or empty folder")
    where.add_argument("--resume", metavar="DIR", help="continue the run kept in this folder (by --out)")
    p.add_argument("--protocol", metavar="DIR", default=None,
                   help="the protocol folder (default: the shipped benchmarks/v1; benchmarks/v2 for protocol v2)")
    p.add_argument("--private-deals", action="store_true",
                   help="deal from a seed drawn from the OS's randomness: a commitment is printed first, the seed "
                        "revealed in the scorecard")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_agent_options(p, None, fixed="the protocol")


def command_line(args: argparse.Namespace) -> str:
    """The command that reproduces the scorecard (options that change only speed or where
    games are kept, --workers, --out, --resume, --quiet, are left out)."""
    words = [*PROGRAM.split(), args.agent, "--track", args.track]
    if args.quick:
        words.append("--quick")
    if args.rungs:
        words += ["--rungs", args.rungs]
    if args.protocol:
        words += ["--protocol", args.protocol]
    if getattr(args, "private_deals", False):
        words.append("--private-deals")
    for option in ("json", "markdown"):
        if getattr(args, option):
            words += [f"--{option}", getattr(args, option)]
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    from keltis_env.benchmark import BenchmarkError, LadderInterrupted, score
    from keltis_env.core.errors import KeltisError
    from keltis_env.core.output_files import (
        DiskFullError,
        OutputPathError,
        check_output_file,
        overlapping,
        partial_path,
    )
    from keltis_env.evaluation import AgentPlayError, EvaluationError
    from keltis_env.evaluation.play import Terminated, sigterm_interrupts

    outputs: dict[str, Path] = {}
    try:
        for option, what in (("json", "the JSON scorecard"), ("markdown", "the Markdown scorecard")):
            value = getattr(args, option)
            if value is not None:
                try:
                    outputs[option] = check_output_file(value, what)
                    check_output_file(partial_path(outputs[option]), f"{what} (partial)")
                except OutputPathError as exc:
                    raise OutputPathError(f"--{option}: {exc}") from None
        folder = args.out or args.resume
        for option, path in outputs.items():
            if folder is not None and overlapping(path, folder):
                raise OutputPathError(f"--{option} {path} lies in the run folder {folder}; give a file outside it")
        rungs = [r.strip() for r in args.rungs.split(",")] if args.rungs is not None else None
        if rungs is not None and not all(rungs):
            raise BenchmarkError(f"--rungs {args.rungs!r}: give rung names separated by commas, e.g. random,heuristic")
        with sigterm_interrupts():  # from here on, Ctrl-C is the user's and an agent's KeyboardInterrupt its own
            card = score(args.agent, args.track, rungs=rungs, quick=args.quick, workers=args.workers,
                         protocol=args.protocol, out=folder, resume=args.resume is not None,
                         progress=not args.quiet, command=command_line(args), private_deals=args.private_deals,
                         started=announce)
    except AgentPlayError as exc:
        return agent_failure("keltis ladder", exc, args.traceback, folder)
    except DiskFullError as exc:
        return disk_full("keltis ladder", exc, folder)
    except (BenchmarkError, OutputPathError) as exc:
        print_error("keltis ladder", exc)
        return 2
    except (EvaluationError, KeltisError) as exc:  # an agent that failed in play, e.g. an illegal action
        kept = f"; the finished games are kept in {folder}" if folder is not None else ""
        print_error("keltis ladder", f"{exc}{kept}")
        return 1
    except LadderInterrupted as stop:
        terminated = stop.signum == signal.SIGTERM
        print(f"\n{'terminated' if terminated else 'interrupted'}: the worker processes are stopped", file=sys.stderr)
        try:
            report(stop.scorecard, outputs, folder)
        except DiskFullError as exc:
            return disk_full("keltis ladder", exc, folder)
        return TERMINATED if terminated else INTERRUPTED
    except Terminated:  # before the first game (while the agents were made)
        print("terminated", file=sys.stderr)
        return TERMINATED
    try:
        return report(card, outputs, folder)
    except DiskFullError as exc:
        return disk_full("keltis ladder", exc, folder)


def announce(run: dict[str, Any]) -> None:
    """What the run says before its first game: the games it plays and about how long they
    take, and for private deals their commitment."""
    from keltis_env.benchmark.ladder import duration_text

    if run.get("games"):
        took = (f"; the rungs' moves take about {duration_text(run['seconds'])} on this many workers (measured on a "
                "2-core machine), the agent's own moves come on top" if run.get("seconds") is not None else "")
        print(f"keltis ladder: {run['games']:,} games to play{took}", flush=True)
    if "commitment" in run:
        print(f"private deals: {run['deals']} deals dealt from a seed drawn from the OS's randomness; commitment "
              f"{run['commitment']} (the SHA-256 of the deal seeds; the scorecard reveals the seed at the end)",
              flush=True)


def report(card: Scorecard, outputs: dict[str, Path], folder: str | None) -> int:
    from keltis_env.core.output_files import partial_path

    print(card.summary())
    written = {option: partial_path(path) if card.partial else path for option, path in outputs.items()}
    if "json" in written:
        card.write_json(written["json"])
        print(f"scorecard written to {written['json']}")
    if "markdown" in written:
        card.write_markdown(written["markdown"])
        print(f"scorecard written to {written['markdown']}")
    if card.partial and folder is not None:
        print(f"the finished games are kept in {folder}; continue with --resume {folder}")
    return INTERRUPTED if card.partial else 0
