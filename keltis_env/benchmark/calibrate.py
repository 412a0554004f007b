"""Calibrating a track: the rungs of its ladder play each other and their ratings are
fitted jointly (:func:`keltis_env.benchmark.rating.fit_joint`, with the protocol's anchor
fixed: ``random`` = 0 in v1, ``heuristic`` = 1000 in v2), then written to the protocol's
ratings file (``benchmarks/v1/calibration.json``), where the ladder reads them. Run once
per track when a protocol is made; the file is then frozen with the protocol.

    python -m keltis_env.benchmark.calibrate --track keltis-2p --deals 100 --search-deals 20
    python -m keltis_env.benchmark.calibrate --protocol benchmarks/v2 --track keltis-2p --deals 200 --search-deals 100

Every pair of rungs plays one table: the rung earlier in the ladder against
``players - 1`` copies of the later one, over the first deals of the track (``--deals``;
``--search-deals`` for the tables with a search rung, whose games are slow). The games
are kept in ``--out`` (one file per table) and a run given the same folder again
continues where it stopped. The ratings file records, per track, the ratings with their
standard errors, every table's games and wins, the command, and (``neighbours``) each
neighbouring pair of rungs' rating difference with its standard error, which it also prints.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from keltis_env.core.text import terminal_text

from .games import check_specs, load_games, play_table, table_tasks
from .protocol import BenchmarkError, Track, load_protocol
from .rating import JointFit, Outcome, fit_joint

#: virtual games per table in the joint fit (:func:`fit_ratings`): ``random`` never wins a
#: card game against the other rungs, so without them its rating, the anchor, is unbounded.
PRIOR_GAMES = 1.0


def _is_search(spec: str) -> bool:
    return spec.partition(":")[0] == "ismcts"


def calibrate(protocol_path: str | None, track_name: str, deals: int, search_deals: int, workers: int,
              out: Path, progress: bool = True) -> dict[str, Any]:
    """Play the track's rungs against each other (games kept in ``out``) and return the
    track's entry of the ratings file."""
    from tqdm import tqdm

    protocol = load_protocol(protocol_path)
    track = protocol.track(track_name)
    for name, count in (("deals", deals), ("search-deals", search_deals)):
        if not 1 <= count <= track.deals:
            raise BenchmarkError(f"--{name} must be from 1 to the track's {track.deals} deals, got {count}")
    check_specs(list(track.rungs.values()), track.game, track.players)
    pairs = list(itertools.combinations(track.rungs, 2))
    tables = []
    for solo, table in pairs:
        n = search_deals if _is_search(track.rungs[solo]) or _is_search(track.rungs[table]) else deals
        specs = [track.rungs[solo]] + [track.rungs[table]] * (track.players - 1)
        store = out / f"{solo}-vs-{table}.jsonl"
        tables.append((solo, table, n, specs, store, load_games(store, table_tasks(specs, track.game, track.seed, n,
                                                                               ppo_forward=track.ppo_forward))))
    total = sum(n * track.players for _, _, n, *_ in tables)
    with tqdm(total=total, initial=sum(len(t[5]) for t in tables), unit="game", disable=not progress) as bar:
        for solo, table, n, specs, store, done in tables:
            bar.set_description(f"{solo} vs {table}")
            play_table(specs, track.game, track.seed, n, workers, store, lambda _: bar.update(1), done,
                       ppo_forward=track.ppo_forward)
    outcomes = []
    played: list[dict[str, Any]] = []
    for solo, table, _, _, _, done in tables:
        wins = sum(r.shares[r.seat_of(0)] for r in done)
        outcomes.append(Outcome(table, track.players, wins, len(done), player=solo))
        played.append({"solo": solo, "table": table, "games": len(done), "solo_wins": wins})
    fit = fit_joint(outcomes, anchor=protocol.anchor, prior_games=PRIOR_GAMES)
    fitted = {rung: fit.rating(rung, protocol.anchor_rating) for rung in track.rungs}
    entry: dict[str, Any] = {
        "game": track.game, "players": track.players, "seed": track.seed,
        "deals": deals, "search_deals": search_deals, "games": sum(p["games"] for p in played),
        "prior_games": PRIOR_GAMES,
        "ratings": {rung: {"rating": round(fitted[rung][0], 1), "se": round(fitted[rung][1], 1)}
                    for rung in track.rungs},
        "tables": played,
    }
    entry["neighbours"] = neighbour_errors(fit, list(track.rungs))
    return entry


def neighbour_errors(fit: JointFit, rungs: list[str]) -> list[dict[str, Any]]:
    """Every pair of neighbouring rungs in rating order: their rating difference and its
    standard error from the joint fit's covariance (``sqrt(var a + var b - 2 cov(a, b))``)."""
    ordered = sorted(rungs, key=lambda r: fit.rating(r)[0])
    return [{"low": a, "high": b, "difference": round(fit.rating(b)[0] - fit.rating(a)[0], 1),
             "se": round(fit.difference_se(a, b), 1)} for a, b in itertools.pairwise(ordered)]


def scale_text(anchor: str = "random", rating: float = 0.0) -> str:
    """The ratings file's ``scale``: its anchor and the size of its points."""
    return f"{anchor} = {rating:g}; 400 points = 10:1 odds in a two-player game"


def write_entry(ratings_file: Path, track: str, entry: dict[str, Any], scale: str | None = None) -> None:
    """Put one track's entry in the ratings file (the other tracks' entries are kept);
    ``scale`` (default: v1's, random = 0) names the file's scale when the file is new."""
    from keltis_env.core.output_files import atomic_write_text

    data: dict[str, Any] = {"scale": scale or scale_text(), "tracks": {}}
    if ratings_file.exists():
        data = json.loads(ratings_file.read_text(encoding="utf-8"), parse_constant=_no_constant)
    data["tracks"][track] = entry
    data["tracks"] = dict(sorted(data["tracks"].items()))
    try:
        text = json.dumps(data, indent=1, allow_nan=False)
    except ValueError:
        raise BenchmarkError(f"the ratings of track {track} are not all finite numbers; nothing written to "
                             f"{ratings_file}") from None
    atomic_write_text(ratings_file, text + "\n")


def _no_constant(name: str) -> float:
    """``json.loads``' hook for NaN and Infinity, which a ratings file must not hold."""
    raise BenchmarkError(f"{name} is not a JSON number; a ratings file holds finite numbers only")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m keltis_env.benchmark.calibrate", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--track", required=True, help="the track to calibrate, e.g. keltis-2p")
    p.add_argument("--protocol", default=None, help="the protocol folder (default: the shipped v1)")
    p.add_argument("--deals", type=int, default=100, help="deals per table (default 100)")
    p.add_argument("--search-deals", type=int, default=20, help="deals per table with an ismcts rung (default 20)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--out", required=True, help="folder that keeps the games (a run given it again continues)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    try:
        protocol = load_protocol(args.protocol)
        track: Track = protocol.track(args.track)
        entry = calibrate(args.protocol, track.name, args.deals, args.search_deals, args.workers, Path(args.out),
                          progress=not args.quiet)
    except BenchmarkError as exc:
        print(terminal_text(f"calibrate: error: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted; the finished games are kept in {args.out}: run the same command to continue",
              file=sys.stderr)
        return 130
    command = ["python", "-m", "keltis_env.benchmark.calibrate", "--track", track.name, "--deals", str(args.deals),
               "--search-deals", str(args.search_deals)]
    if args.protocol:
        command[3:3] = ["--protocol", args.protocol]
    entry["command"] = shlex.join(command)
    write_entry(protocol.ratings_file, track.name, entry, scale_text(protocol.anchor, protocol.anchor_rating))
    for rung, r in entry["ratings"].items():
        print(f"{track.name} {rung:<12}{r['rating']:>8.1f} +/- {1.96 * r['se']:.1f}")
    for pair in entry.get("neighbours", []):
        print(f"{track.name} {pair['high']} - {pair['low']}: {pair['difference']:.1f}, standard error {pair['se']:.1f}")
    print(f"{entry['games']} games; ratings written to {protocol.ratings_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
