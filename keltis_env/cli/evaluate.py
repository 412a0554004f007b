"""``keltis evaluate``: agents against each other over duplicate deals with seat rotation.

Every output path (``--json``, ``--csv``, ``--records``) is checked before the first game
is played, and the JSON and CSV files are written atomically (:mod:`keltis_env.core.output_files`).
Ctrl-C or SIGTERM stops the worker processes and reports the games finished so far, marked
as a partial result; ``--json`` and ``--csv`` then receive them under names that say so
(``out.partial.json``), and the files named by the options are not written. The exit
status then says which signal stopped it, as a shell reports a process killed by it:
130 after Ctrl-C, 143 after SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import add_agent_options, agent_failure, disk_full, print_error

if TYPE_CHECKING:  # the evaluation (tqdm, openskill) is imported only when the command runs
    from keltis_env.evaluation import EvaluationResult

HELP = "play agents (bot specs) against each other over duplicate deals and report win rates"

#: exit status after Ctrl-C, as a shell reports a process stopped by SIGINT
INTERRUPTED = 130
#: exit status after SIGTERM, as a shell reports a process stopped by it
TERMINATED = 143
#: the per-move time limit unless --move-seconds is given (as evaluate()'s default)
DEFAULT_MOVE_SECONDS = 60.0

EPILOG = """\
An AGENT is a bot spec: random, heuristic, ismcts, ismcts:iterations=400,
ismcts:seconds=0.1, ppo:PATH, ..., or your own code: py:FILE.py:NAME or
py:MODULE:NAME (docs/agents.md). Give 2 to 4 agents: one per player.
Every deal is played once per seating (agents rotated through the seats), so
--games is rounded up to a multiple of the number of agents. A k-way tie for
the highest score counts 1/k win for each tied agent.

Output paths are checked before the first game; --json and --csv must lie
outside the --records folder, and two evaluations cannot share one --records
folder (the first holds it until it ends). Ctrl-C (or SIGTERM) stops the
evaluation and reports the games finished so far as a PARTIAL result; --json and
--csv then write them to NAME.partial.json / NAME.partial.csv, and --records
keeps only the finished games' records. With --out DIR every finished game is
kept in DIR as it ends, and --resume DIR plays only the games still missing
(the result is that of an evaluation never stopped).

Each move has a time limit (--move-seconds, default 60): an agent over it loses
that game on time, and the summary counts such games apart. An agent that
fails (raises, calls sys.exit, returns an illegal action, or its worker process
dies) stops the evaluation with one line naming the agent, its seat, the game
and what happened (--traceback adds its traceback); the finished games stay in
--out. Exit status: 0 when done, 1 when an agent failed, 2 for bad arguments,
130 after Ctrl-C, 143 after SIGTERM.

examples:
  keltis evaluate heuristic random --games 1000 --seed 1
  keltis evaluate heuristic random random random --games 1000 --seed 2
  keltis evaluate heuristic random --option tile_layout=random
  keltis evaluate ismcts heuristic --games 400 --seed 3 --json out.json --csv games.csv
  keltis evaluate ismcts planner --games 400 --seed 3 --out runs/ismcts-planner
  keltis evaluate ismcts planner --games 400 --seed 3 --resume runs/ismcts-planner
  keltis evaluate py:examples/my_agent.py:EpsilonFirst heuristic --games 400 --private-deals

With --private-deals the seed of the deals and bots is drawn from the operating
system's randomness: the commitment printed before the first game is the SHA-256
of the deal seeds, and the seed printed at the end (and in --json) lets anyone
check it (docs/benchmark.md: what a result certifies).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EPILOG
    p.add_argument("agents", nargs="+", metavar="AGENT", help="2 to 4 agent specs, one per player")
    p.add_argument("--games", type=int, default=100, help="number of games, at most 1,000,000 (default 100)")
    p.add_argument("--seed", type=int, default=None, help="seed of the deals and the bots (default 0)")
    p.add_argument("--private-deals", action="store_true",
                   help="deal from a seed drawn from the OS's randomness instead of --seed: a commitment (SHA-256 of "
                        "the deal seeds) is printed first and the seed revealed at the end")
    p.add_argument("--game", default="keltis", help="which game (default keltis)")
    p.add_argument("--workers", type=int, default=2, help="worker processes, at most 256 (default 2)")
    p.add_argument("--max-turns", type=int, default=None, help="truncate games after this many turns")
    p.add_argument("--option", dest="options", action="append", default=[], type=game_option, metavar="KEY=VALUE",
                   help="a game option for every game, e.g. tile_layout=random (card game) or bonus_layout=random "
                        "(dice game); the value is read as JSON when it parses (numbers, lists), else as text; "
                        "repeatable, each KEY once")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON")
    p.add_argument("--csv", metavar="PATH", help="write one row per game as CSV")
    p.add_argument("--records", metavar="DIR",
                   help="save every game's record (JSON) in this folder (created if missing); it must hold no "
                        "game_*.json records, and one evaluation at a time may use it")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--out", metavar="DIR", help="keep every finished game in this folder (new or empty), so that an "
                     "evaluation stopped by Ctrl-C, a crash or the end of a session can go on with --resume DIR")
    run.add_argument("--resume", metavar="DIR", help="go on with the evaluation kept in DIR (its --out): the same "
                     "agents, --games, --seed, --game and options; only the missing games are played")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_agent_options(p, DEFAULT_MOVE_SECONDS)


def game_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as a pair; the value is JSON where it parses, else the text itself."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. tile_layout=random), got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def game_options(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The ``--option`` pairs as a mapping; a key given twice is refused (``ValueError``)."""
    options: dict[str, Any] = {}
    for key, value in pairs:
        if key in options:
            raise ValueError(f"--option {key} is given twice ({key}={options[key]!r} and {key}={value!r}); "
                             "give each game option once")
        options[key] = value
    return options


def check_outputs(args: argparse.Namespace) -> dict[str, Path]:
    """The output files by option, checked (with their partial names); raises
    :class:`~keltis_env.core.output_files.OutputPathError` naming the option and the problem."""
    from keltis_env.core.output_files import OutputPathError, check_output_file, overlapping, partial_path

    outputs: dict[str, Path] = {}
    for option, what in (("json", "the JSON summary"), ("csv", "the CSV of games")):
        value = getattr(args, option)
        if value is None:
            continue
        try:
            path = check_output_file(value, what)
            check_output_file(partial_path(path), f"{what} (partial)")
        except OutputPathError as exc:
            raise OutputPathError(f"--{option}: {exc}") from None
        outputs[option] = path
    if "json" in outputs and "csv" in outputs and outputs["json"].resolve() == outputs["csv"].resolve() \
            and not outputs["json"].resolve().is_char_device():  # both to /dev/null is fine
        raise OutputPathError(f"--json and --csv name the same file {outputs['json']}; give two file names")
    if args.records is not None:
        from keltis_env.evaluation import EvaluationError
        from keltis_env.evaluation.records import check_records_dir

        try:
            check_records_dir(args.records)
        except EvaluationError as exc:
            raise OutputPathError(f"--records: {exc}") from None
        for option, path in outputs.items():
            for written in (path, partial_path(path)):
                if overlapping(written, args.records):
                    raise OutputPathError(f"--{option} {written} and --records {args.records} overlap (the same path "
                                          "or one inside the other); give a file outside the records folder")
    folder = args.out or args.resume
    if folder is not None:
        for option, path in outputs.items():
            if overlapping(path, folder):
                raise OutputPathError(f"--{option} {path} lies in the run folder {folder}; give a file outside it")
        if args.records is not None and overlapping(args.records, folder):
            raise OutputPathError(f"--records {args.records} and the run folder {folder} overlap; give another folder")
    return outputs


def run(args: argparse.Namespace) -> int:
    from keltis_env.core.output_files import DiskFullError, OutputPathError
    from keltis_env.evaluation import AgentPlayError, EvaluationError, EvaluationInterrupted, evaluate
    from keltis_env.evaluation.play import Terminated, sigterm_interrupts

    try:
        options = game_options(args.options)
        outputs = check_outputs(args)
        seed = run_seed(args)
    except (OutputPathError, ValueError) as exc:
        print_error("keltis evaluate", exc)
        return 2
    if args.private_deals and args.games >= 1:  # other counts are refused by evaluate()
        from keltis_env.evaluation.play import deal_commitment

        deals = -(-max(args.games, 1) // max(len(args.agents), 1))
        print(f"private deals: {deals} deals dealt from a seed drawn from the OS's randomness; commitment "
              f"{deal_commitment(seed, deals)} (the SHA-256 of the deal seeds; the seed is revealed at the end)",
              flush=True)
    try:
        with sigterm_interrupts():  # from here on, Ctrl-C is the user's and an agent's KeyboardInterrupt its own
            result = evaluate(
                args.agents,
                games=args.games,
                seed=seed,
                workers=args.workers,
                game=args.game,
                progress=not args.quiet,
                max_turns=args.max_turns,
                records_dir=args.records,
                options=options,
                out=args.out or args.resume,
                resume=args.resume is not None,
                move_seconds=args.move_seconds,
            )
    except AgentPlayError as exc:
        return agent_failure("keltis evaluate", exc, args.traceback, args.out or args.resume)
    except DiskFullError as exc:
        return disk_full("keltis evaluate", exc, args.out or args.resume)
    except EvaluationError as exc:
        print_error("keltis evaluate", exc)
        return 2
    except EvaluationInterrupted as stop:
        terminated = stop.signum == signal.SIGTERM
        print(f"\n{'terminated' if terminated else 'interrupted'}: the worker processes are stopped", file=sys.stderr)
        try:
            report(stop.result, outputs, args.records)
        except DiskFullError as exc:
            return disk_full("keltis evaluate", exc, args.out or args.resume)
        folder = args.out or args.resume
        if folder is not None:
            print(f"the finished games are kept in {folder}; continue with --resume {folder}", file=sys.stderr)
        return TERMINATED if terminated else INTERRUPTED
    except Terminated:  # before the first game (while the agents were made)
        print("terminated", file=sys.stderr)
        return TERMINATED
    try:
        code = report(result, outputs, args.records)
    except DiskFullError as exc:
        return disk_full("keltis evaluate", exc, args.out or args.resume)
    if args.private_deals:
        print(f"private deals revealed: seed {seed} (deal d is dealt from derive_seed(seed, 'deal', d), "
              "keltis_env.evaluation.play.deal_seeds); rerun with --seed to replay them")
    return code


def run_seed(args: argparse.Namespace) -> int:
    """The seed of the deals: ``--seed`` (default 0), or with ``--private-deals`` one drawn
    from the operating system's randomness (a resumed run's own, from its folder);
    ``ValueError`` for both at once."""
    if not args.private_deals:
        return args.seed if args.seed is not None else 0
    if args.seed is not None:
        raise ValueError("--private-deals draws the seed of the deals; leave out --seed")
    if args.resume is not None:
        from keltis_env.evaluation.store import RUN_FILE

        try:
            kept = json.loads((Path(args.resume) / RUN_FILE).read_text(encoding="utf-8"))
            return int(kept["seed"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"--resume {args.resume}: cannot read the seed of its private deals ({exc})") from None
    from keltis_env.evaluation.play import private_seed

    return private_seed()


def report(result: EvaluationResult, outputs: dict[str, Path], records: str | None) -> int:
    """Print the summary and write the requested files (under partial names for a
    partial result); the exit status."""
    from keltis_env.core.output_files import partial_path

    print(result.summary())
    written = {option: partial_path(path) if result.partial else path for option, path in outputs.items()}
    if "json" in written:
        result.write_json(written["json"])
        print(f"summary written to {written['json']}")
    if "csv" in written:
        result.write_csv(written["csv"])
        print(f"games written to {written['csv']}")
    if records:
        print(f"game records written to {records}/" + (" (finished games only)" if result.partial else ""))
    return INTERRUPTED if result.partial else 0
