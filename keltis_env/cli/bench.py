"""``keltis bench``: decisions per second of the bare engine, of the match loop and of the
AEC loop.

* ``engine``: random legal play on the engine alone (``legal_actions`` / ``apply``), the
  reference the other loops are compared with;
* ``match``: :class:`~keltis_env.core.match.Match` with a random bot at every seat, each
  acting on its own player's view: the loop of the evaluation and of the learner's
  opponents;
* ``aec``: the PettingZoo loop on the wrapped ``env()`` (which runs on the match loop),
  with observation and mask every step;
* ``openspiel`` (not measured unless asked for; the ``openspiel`` extra): random legal
  play through OpenSpiel's ``pyspiel`` API on the game's OpenSpiel form
  (:func:`keltis_env.integrations.openspiel.random_play`), chance outcomes drawn by their
  probabilities: ``keltis bench --loops aec openspiel`` puts it next to the AEC loop.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from typing import Any

HELP = "measure engine, match-loop and PettingZoo AEC-loop speed (random legal play, medians of repeated runs)"
LOOPS = ("engine", "match", "aec")
#: loops measured only when named in --loops
OPTIONAL_LOOPS = ("openspiel",)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.cli.arguments import MAX_REPEATS, MAX_RUN_SECONDS, count, seconds
    from keltis_env.core.game import game_names

    p.add_argument("--game", choices=[*game_names(), "all"], default="all", help="which game to measure (default: all)")
    p.add_argument("--players", type=int, nargs="+", default=[2, 3, 4], choices=[2, 3, 4])
    p.add_argument("--seconds", type=seconds(MAX_RUN_SECONDS), default=1.5,
                   help=f"length of one timed run, > 0 and <= {MAX_RUN_SECONDS:g} (default 1.5)")
    p.add_argument("--repeats", type=count(1, MAX_REPEATS), default=5,
                   help=f"timed runs per figure, 1 to {MAX_REPEATS}; the median is reported (default 5)")
    p.add_argument(
        "--loops", nargs="+", choices=LOOPS + OPTIONAL_LOOPS, default=list(LOOPS),
        help="which loops to measure (default: engine match aec; openspiel needs the openspiel extra)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument(
        "--peers", action="store_true",
        help="instead: our two environments and PettingZoo's classic card games in one AEC loop (the peers extra)",
    )


def engine_run(spec: Any, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """Random legal play on the bare engine: (decisions, games, elapsed seconds)."""
    config = spec.make_config(num_players=num_players)
    rng = random.Random(seed)
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        state = spec.new_state(config, seed + games)
        while not state.is_over:
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
            decisions += 1
        games += 1
    return decisions, games, time.perf_counter() - start


def match_run(spec: Any, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """Random bots at every seat under the match loop: (decisions, games, elapsed seconds)."""
    from keltis_env.bots import RandomBot
    from keltis_env.core.match import Match

    config = spec.make_config(num_players=num_players)
    bots = [RandomBot(seed + seat) for seat in range(num_players)]
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        match = Match(spec, spec.new_state(config, seed + games), bots)
        match.run()
        decisions += sum(match.decisions)
        games += 1
    return decisions, games, time.perf_counter() - start


def aec_run(game: Any, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """The PettingZoo loop on the wrapped env of ``game`` (a name or descriptor): agent_iter
    / last (observation and mask every step) / step with a random legal action taken from
    the mask; the same loop ``keltis peers`` times on PettingZoo's own games."""
    from keltis_env.envs import make_env

    from .peers import aec_loop

    return aec_loop(lambda: make_env(game, num_players=num_players), seconds, seed)


def run(args: argparse.Namespace) -> int:
    from keltis_env.cli.peers import json_option_error

    if (status := json_option_error(args, "keltis bench")) is not None:
        return status
    if getattr(args, "peers", False):
        from keltis_env.cli.peers import run_peers

        return run_peers(args)
    from tqdm import tqdm

    from keltis_env.core.game import game_names, get_game

    games = game_names() if args.game == "all" else [args.game]
    loops = [kind for kind in LOOPS + OPTIONAL_LOOPS if kind in args.loops]
    random_play = None
    if "openspiel" in loops:
        try:
            from keltis_env.integrations.openspiel import random_play
        except ImportError as exc:
            print(f"keltis bench: the openspiel loop needs OpenSpiel (pip install 'keltis-rl[openspiel]', "
                  f"Python 3.11 or later): {exc}", file=sys.stderr)
            return 2
        if args.game != "all" and get_game(args.game).chance_model is None:
            print(f"keltis bench: the game {args.game!r} has no OpenSpiel form (it declares no chance model); "
                  "leave out --loops openspiel or pick another --game", file=sys.stderr)
            return 2
    # with --game all, the openspiel loop measures the games that have an OpenSpiel form
    jobs = [(g, n, kind) for g in games for n in args.players for kind in loops
            if kind != "openspiel" or get_game(g).chance_model is not None]
    results: list[dict[str, Any]] = []
    with tqdm(total=len(jobs) * args.repeats, desc="bench", unit="run", leave=False) as bar:
        for game, n, kind in jobs:
            rates, game_rates = [], []
            for r in range(args.repeats):
                if kind == "engine":
                    d, g, el = engine_run(get_game(game), n, args.seconds, seed=1000 * r)
                elif kind == "match":
                    d, g, el = match_run(get_game(game), n, args.seconds, seed=1000 * r)
                elif kind == "openspiel":
                    assert random_play is not None
                    d, g, el = random_play(game, n, args.seconds, seed=1000 * r)
                else:
                    d, g, el = aec_run(get_game(game), n, args.seconds, seed=1000 * r)
                rates.append(d / el)
                game_rates.append(g / el)
                bar.update(1)
            results.append(
                {
                    "game": game,
                    "players": n,
                    "loop": kind,
                    "decisions_per_s": statistics.median(rates),
                    "games_per_s": statistics.median(game_rates),
                    "min_decisions_per_s": min(rates),
                    "max_decisions_per_s": max(rates),
                    "repeats": args.repeats,
                    "seconds_per_run": args.seconds,
                }
            )
    engine = {(r["game"], r["players"]): r["decisions_per_s"] for r in results if r["loop"] == "engine"}
    head = f"{'game':<8}{'players':>8}  {'loop':<10}{'decisions/s':>13}{'games/s':>10}"
    print(f"{head}{'(min..max)':>22}{'/engine':>10}")
    for r in results:
        base = engine.get((r["game"], r["players"]))
        ratio = f"{r['decisions_per_s'] / base:.2f}" if base else "-"
        span = f"{r['min_decisions_per_s']:,.0f}..{r['max_decisions_per_s']:,.0f}"
        print(
            f"{r['game']:<8}{r['players']:>8}  {r['loop']:<10}{r['decisions_per_s']:>13,.0f}"
            f"{r['games_per_s']:>10,.1f}{span:>22}{ratio:>10}"
        )
    print(f"medians of {args.repeats} runs of {args.seconds:g} s each; single process, random legal play")
    if args.json is not None:
        from keltis_env.core.files import atomic_write_text

        atomic_write_text(args.json, json.dumps(results, indent=1))
    return 0
