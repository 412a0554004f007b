"""``keltis evaluate``: agents against each other over duplicate deals with seat rotation."""

from __future__ import annotations

import argparse
import sys

HELP = "play agents (bot specs) against each other over duplicate deals and report win rates"

EPILOG = """\
An AGENT is a bot spec: random, heuristic, ismcts, ismcts:iterations=400,
ismcts:seconds=0.1, ppo:PATH, ... Give 2 to 4 agents: one per player.
Every deal is played once per seating (agents rotated through the seats), so
--games is rounded up to a multiple of the number of agents. A k-way tie for
the highest score counts 1/k win for each tied agent.

examples:
  keltis evaluate heuristic random --games 1000 --seed 1
  keltis evaluate heuristic random random random --games 1000 --seed 2
  keltis evaluate ismcts heuristic --games 400 --seed 3 --json out.json --csv games.csv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = EPILOG
    p.add_argument("agents", nargs="+", metavar="AGENT", help="2 to 4 agent specs, one per player")
    p.add_argument("--games", type=int, default=100, help="number of games (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed of the deals and the bots (default 0)")
    p.add_argument("--game", default="keltis", help="which game (default keltis)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--max-turns", type=int, default=None, help="truncate games after this many turns")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON")
    p.add_argument("--csv", metavar="PATH", help="write one row per game as CSV")
    p.add_argument("--records", metavar="DIR", help="save every game's record (JSON) in this folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from keltis_env.evaluation import EvaluationError, evaluate

    try:
        result = evaluate(
            args.agents,
            games=args.games,
            seed=args.seed,
            workers=args.workers,
            game=args.game,
            progress=not args.quiet,
            max_turns=args.max_turns,
            records_dir=args.records,
        )
    except EvaluationError as exc:
        print(f"keltis evaluate: error: {exc}", file=sys.stderr)
        return 2
    print(result.summary())
    if args.json:
        result.write_json(args.json)
        print(f"summary written to {args.json}")
    if args.csv:
        result.write_csv(args.csv)
        print(f"games written to {args.csv}")
    if args.records:
        print(f"game records written to {args.records}/")
    return 0
