"""``keltis bench --peers`` (also ``keltis peers``): our two environments and PettingZoo's
classic card games through one AEC loop, in one process, one after the other in every
repeat (so a busy machine slows all of them alike).

The loop is the one every PettingZoo user writes: ``agent_iter()``, ``last()`` (the
observation and its action mask, every step), ``step()`` with a random legal action
drawn from the mask, ``step(None)`` for a finished agent. Every environment is built
with its constructor's defaults (two players). The peers need the ``peers`` extra:
``rlcard`` and ``pygame-ce`` (PettingZoo's classic modules import pygame), and a
PettingZoo older than 1.27 for ``gin_rummy_v4``, which 1.27 removed (PettingZoo issue
#1383); a peer that cannot be imported is listed as skipped, with the reason.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

HELP = "compare AEC-loop speed with PettingZoo's classic card games (the peers extra)"

#: PettingZoo classic card games measured when importable
PEERS = ("texas_holdem_v4", "leduc_holdem_v4", "gin_rummy_v4", "texas_holdem_no_limit_v6")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.cli.arguments import MAX_REPEATS, MAX_RUN_SECONDS, count, seconds

    p.add_argument("--seconds", type=seconds(MAX_RUN_SECONDS), default=1.5,
                   help=f"length of one timed run, > 0 and <= {MAX_RUN_SECONDS:g} (default 1.5)")
    p.add_argument("--repeats", type=count(1, MAX_REPEATS), default=5,
                   help=f"timed runs per environment, 1 to {MAX_REPEATS}; the median is reported (default 5)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def ours() -> dict[str, Callable[[], Any]]:
    """Environment name -> factory, for every registered game (``keltis_v0``, ...)."""
    from keltis_env.core.game import game_names, get_game
    from keltis_env.envs import make_env

    return {get_game(name).env_name: partial(make_env, name) for name in game_names()}


def available_peers() -> dict[str, Callable[[], Any]]:
    """Peer name -> environment factory, for the peers that import here."""
    found, _skipped = _peers()
    return found


def _peers() -> tuple[dict[str, Callable[[], Any]], dict[str, str]]:
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    found: dict[str, Callable[[], Any]] = {}
    skipped: dict[str, str] = {}
    for name in PEERS:
        try:
            module = importlib.import_module(f"pettingzoo.classic.{name}")
            found[name] = module.env
        except (ImportError, AttributeError) as exc:  # a missing extra, or a release without that game
            skipped[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            removed = isinstance(exc, ModuleNotFoundError) and exc.name == f"pettingzoo.classic.{name}"
            if name == "gin_rummy_v4" and removed:
                skipped[name] = "not in this PettingZoo (removed in 1.27, PettingZoo issue #1383): pettingzoo<1.27"
    return found, skipped


def aec_loop(make_env: Callable[[], Any], seconds: float, seed: int) -> tuple[int, int, float]:
    """Random legal play through the AEC API: (decisions, games, elapsed seconds)."""
    env = make_env()
    rng = random.Random(seed)
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        env.reset(seed=seed + games)
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[rng.randrange(len(legal))]))
            decisions += 1
        games += 1
    elapsed = time.perf_counter() - start
    env.close()
    return decisions, games, elapsed


def measure(seconds: float, repeats: int, seed: int = 0) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Median decisions/s and games/s of our environments and the importable peers."""
    peers, skipped = _peers()
    if not peers:
        return [], skipped
    envs = ours()
    own = set(envs)
    envs.update(peers)
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
    for r in range(repeats):
        for name, make_env in envs.items():
            d, g, el = aec_loop(make_env, seconds, seed=1000 * r + seed)
            rates[name].append((d / el, g / el))
    results = []
    for name, runs in rates.items():
        results.append({
            "env": name,
            "peer": name not in own,
            "decisions_per_s": statistics.median(r[0] for r in runs),
            "games_per_s": statistics.median(r[1] for r in runs),
            "min_decisions_per_s": min(r[0] for r in runs),
            "max_decisions_per_s": max(r[0] for r in runs),
            "repeats": repeats,
            "seconds_per_run": seconds,
        })
    return results, skipped


def report(results: list[dict[str, Any]]) -> str:
    """The table: each environment's speed, and each of ours divided by it."""
    ours = {r["env"]: r["decisions_per_s"] for r in results if not r["peer"]}
    head = f"{'environment':<26}{'decisions/s':>13}{'games/s':>10}"
    head += "".join(f"{'ratio ' + name:>24}" for name in ours)
    lines = [head]
    for r in results:
        line = f"{r['env']:<26}{r['decisions_per_s']:>13,.0f}{r['games_per_s']:>10,.1f}"
        line += "".join(f"{value / r['decisions_per_s']:>23.2f}x" for value in ours.values())
        lines.append(line)
    return "\n".join(lines)


def run_peers(args: argparse.Namespace) -> int:
    results, skipped = measure(args.seconds, args.repeats)
    if not results:
        reasons = "; ".join(f"{k}: {v}" for k, v in skipped.items())
        raise SystemExit(f"keltis bench --peers: no peer environment could be imported ({reasons}); "
                         "install the peers extra: pip install -e '.[peers]'")
    print(report(results))
    print(f"medians of {args.repeats} runs of {args.seconds:g} s each, interleaved; one process; "
          "ratio = our decisions/s divided by that row's")
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    if args.json is not None:
        from keltis_env.core.files import atomic_write_text

        atomic_write_text(args.json, json.dumps({"results": results, "skipped": skipped}, indent=1))
    return 0


def json_option_error(args: argparse.Namespace, prog: str) -> int | None:
    """Check ``--json`` before anything is measured: print why it cannot be written and
    return the exit status 2, or ``None`` when it is fine or not given."""
    if args.json is None:
        return None
    from keltis_env.core.files import OutputPathError, check_output_file

    try:
        check_output_file(args.json, "the results")
    except OutputPathError as exc:
        print(f"{prog}: error: --json: {exc}", file=sys.stderr)
        return 2
    return None


def run(args: argparse.Namespace) -> int:
    if (status := json_option_error(args, "keltis peers")) is not None:
        return status
    return run_peers(args)
