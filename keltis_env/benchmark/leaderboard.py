"""``LEADERBOARD.md``, generated from the scorecards committed under ``benchmarks/results/``.

    python -m keltis_env.benchmark.leaderboard            # write LEADERBOARD.md
    python -m keltis_env.benchmark.leaderboard --check    # exit 1 when it is out of date

Every ``*.json`` under ``benchmarks/results/`` (but ``budget/``) is a ladder scorecard
(:class:`~keltis_env.benchmark.scorecard.Scorecard`, written by ``keltis ladder --json``);
each becomes a row of its track's table, naming the command that produced it, marked when
made with ``--quick``. A scorecard of another protocol file (its SHA-256 differs from the
protocol folder's), or a partial one, is refused: it cannot be compared with the others.

The learning-budget track
    Every ``benchmarks/results/budget/*.json`` is one training config run with a fixed
    budget of decisions over several seeds, each final policy scored on ladder rungs.
    Its schema (``kind`` and ``schema`` are checked; the other fields are required unless
    marked optional)::

        {"kind": "keltis-budget-result", "schema": 2,
         "config": "configs/train/default.yaml",    # the training config
         "algorithm": "sb3-ppo",                    # optional, a short name
         "track": "keltis-2p",                      # the track the policies were scored on
         "budget_decisions": 2000000,               # decisions of the learning policy, per seed
         "command": "python -m training.budget --config configs/train/default.yaml --decisions 2e6 --seeds 3",
         "warm_start": {"file": "runs/w.zip", "sha256": "..."},  # optional: the policy file it starts from
         "seeds": [
           {"seed": 0,
            "decisions": 2000000,                   # decisions the learning policy made
            "teacher_decisions": 0,                 # optional: a teacher's / imitation's, reported apart
            "policy_sha256": "...",                 # optional: the final policy file
            "curve": "benchmarks/results/budget/x_seed0.csv",  # optional: the seed's learning curve
            "scorecard": {...}},                    # the final policy's ladder scorecard (JSON form)
           ...]}

    The leaderboard shows, per file and per rung scored (e.g. ``heuristic``, ``planner``),
    the mean win rate over the seeds, their spread (lowest and highest) and each seed's
    95% interval, and the mean rating.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from keltis_env.core.recorded_paths import recorded_path
from keltis_env.core.text import terminal_text

from .protocol import BENCHMARKS_DIR, BenchmarkError, Protocol, load_protocol, protocol_folder
from .scorecard import Scorecard

RESULTS_DIR = BENCHMARKS_DIR / "results"
LEADERBOARD = BENCHMARKS_DIR.parent / "LEADERBOARD.md"
COMMAND = "python -m keltis_env.benchmark.leaderboard"
#: the hand-kept table of matches measured outside the ladder, in the results folder
MATCHES = "matches.md"
#: later protocols whose scorecards lie in their own folder, ``benchmarks/results/<version>/<track>/``,
#: and make a section of their own after protocol v1's tables
LATER_PROTOCOLS = ("v2",)
BUDGET_KIND = "keltis-budget-result"
BUDGET_SCHEMA = 2


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except (OSError, ValueError) as exc:
        raise BenchmarkError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise BenchmarkError(f"{path} is not a JSON object")
    return data


def _no_constant(name: str) -> float:
    """``json.loads``' hook for NaN and Infinity: refused, a result holds finite numbers only."""
    raise ValueError(f"{name} is not a JSON number; results hold finite numbers only")


def load_scorecards(results: Path) -> list[tuple[Path, Scorecard]]:
    cards = []
    for path in sorted(results.rglob("*.json")):
        parts = path.relative_to(results).parts
        if "budget" in parts or parts[0] in LATER_PROTOCOLS:
            continue
        try:
            card = Scorecard.from_dict(_read_json(path))
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchmarkError(f"{path} is not a ladder scorecard: {exc}") from None
        if card.partial:
            raise BenchmarkError(f"{path} is a partial scorecard (an interrupted run); finish it with --resume")
        cards.append((path, card))
    return cards


def load_budget(results: Path) -> list[tuple[Path, dict[str, Any]]]:
    entries = []
    for path in sorted((results / "budget").glob("*.json")):
        data = _read_json(path)
        if data.get("kind") != BUDGET_KIND or data.get("schema") != BUDGET_SCHEMA:
            raise BenchmarkError(f"{path}: not a learning-budget result of schema {BUDGET_SCHEMA} "
                                 f"(kind {data.get('kind')!r}, schema {data.get('schema')!r})")
        missing = [k for k in ("config", "track", "budget_decisions", "command", "seeds") if k not in data]
        if missing or not isinstance(data["seeds"], list) or not data["seeds"]:
            raise BenchmarkError(f"{path}: a learning-budget result needs config, track, budget_decisions, command "
                                 f"and a non-empty list of seeds (missing: {', '.join(missing) or 'seeds'})")
        try:
            for seed in data["seeds"]:
                seed["card"] = Scorecard.from_dict(seed["scorecard"])
                int(seed["seed"]), int(seed["decisions"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchmarkError(f"{path}: a seed needs seed, decisions and a ladder scorecard ({exc!r})") from None
        entries.append((path, data))
    return entries


def _rank(card: Scorecard) -> float:
    """Where a row goes: by rating, an agent that won every game by its lower bound."""
    r = card.rating
    if r is None:
        return -1e9
    if r.value is not None:
        return r.value
    if r.bound == "above":
        return r.low if r.low is not None else 1e9
    return (r.high if r.high is not None else -1e9) - 1e6


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render(protocol_dir: Path | None = None, results: Path | None = None) -> str:
    """The leaderboard's Markdown."""
    protocol = load_protocol(protocol_dir)
    results = results if results is not None else RESULTS_DIR
    cards = _checked_cards(protocol, results)
    lines = [
        "# Leaderboard",
        "",
        f"<!-- generated by `{COMMAND}` from benchmarks/results/; do not edit by hand -->",
        "",
        f"Agents scored by `keltis ladder` under benchmark protocol {protocol.version} "
        "([docs/benchmark.md](docs/benchmark.md)): each agent plays every rung of its track's ladder at a table of "
        "its own (the agent against copies of the rung) over the track's fixed duplicate deals. The rating is on "
        "the track's scale (random = 0; 400 points = 10:1 odds in a two-player game), with its 95% interval; the "
        "win rates count a k-way tie for the best score as 1/k win. Rows marked *quick* played the protocol's quick "
        "game count (about 200 games per rung instead of 1,100), so their intervals are wider. Where the policies "
        "and checkpoints of the rows come from (the shipped policies, a `make train` run, an RLlib run): "
        "[docs/benchmark.md](docs/benchmark.md#where-the-leaderboards-own-agents-come-from). To add a row, see "
        "[Submitting a row](docs/benchmark.md#submitting-a-row).",
        "",
    ]
    lines += _track_tables(protocol, cards, "##")
    for version in LATER_PROTOCOLS:
        if (results / version).is_dir():
            lines += _later_section(version, results / version, protocol_dir)
    lines += _budget_section(load_budget(results) if results.is_dir() else [])
    lines += _matches_section(results / MATCHES)
    return "\n".join(lines).rstrip() + "\n"


def _checked_cards(protocol: Protocol, results: Path) -> list[Scorecard]:
    """The scorecards under ``results``, each checked to be made under ``protocol``'s file."""
    cards = load_scorecards(results) if results.is_dir() else []
    for path, card in cards:
        if card.protocol_sha256 != protocol.sha256:
            raise BenchmarkError(f"{path} was made under another protocol file (SHA-256 {card.protocol_sha256[:12]}…, "
                                 f"protocol {protocol.version} is {protocol.sha256[:12]}…)")
    return [card for _, card in cards]


def _later_section(version: str, results: Path, protocol_dir: Path | None) -> list[str]:
    """The section of a later protocol: its scale and its tracks' tables, from ``results`` (its folder)."""
    folder = protocol_dir.parent / version if protocol_dir is not None else protocol_folder(version)
    protocol = load_protocol(folder)
    lines = [f"# Protocol {protocol.version}", "",
             f"Scorecards under benchmarks/results/{version}/, scored by `keltis ladder AGENT --track TRACK "
             f"--protocol benchmarks/{version}`. The scale of each track is anchored on {protocol.anchor} = "
             f"{protocol.anchor_rating:g} (400 points = 10:1 odds in a two-player game); ratings are not "
             "comparable with protocol v1's.", ""]
    return lines + _track_tables(protocol, _checked_cards(protocol, results), "##")


def _track_tables(protocol: Protocol, cards: list[Scorecard], level: str) -> list[str]:
    """One table per track of ``protocol``: its rungs' frozen ratings and a row per scorecard."""
    calibration = json.loads(protocol.ratings_file.read_text(encoding="utf-8")) if protocol.ratings_file.exists() \
        else {"tracks": {}}
    lines: list[str] = []
    for name, track in protocol.tracks.items():
        rows = sorted((c for c in cards if c.track == name), key=lambda c: (-_rank(c), c.agent, c.quick))
        lines += [f"{level} {name}" + (f" ({protocol.version})" if protocol.version != "v1" else ""), ""]
        ratings = calibration["tracks"].get(name, {}).get("ratings", {})
        if ratings:
            lines.append("Rungs: " + ", ".join(f"{r} {ratings[r]['rating']:.0f}" for r in track.rungs if r in ratings)
                         + ".")
            lines.append("")
        if not rows:
            lines += ["No scorecards yet.", ""]
            continue
        versus = " | ".join(f"vs {r}" for r in track.rungs)
        head = f"| agent | rating (95% CI) | {versus} | games per rung | command |"
        lines += [head, "|" + "---|" * (len(track.rungs) + 4)]
        for c in rows:
            cells = []
            for r in track.rungs:
                try:
                    cells.append(_pct(c.rung(r).win_rate))
                except KeyError:
                    cells.append("–")
            agent = f"`{c.agent}`" + (" *quick*" if c.quick else "")
            rating = c.rating.text() if c.rating else "not rated"
            games = c.rungs[0].games
            command = f"`{c.command}`" if c.command else "(the Python API)"
            lines.append(f"| {agent} | {rating} | " + " | ".join(cells) + f" | {games} | {command} |")
        lines.append("")
    return lines


def _matches_section(path: Path) -> list[str]:
    """The matches measured outside the ladder (``keltis evaluate`` runs, each with its
    command), kept by hand in ``benchmarks/results/matches.md`` and copied in verbatim."""
    if not path.is_file():
        return []
    return ["## Other measured matches", "", path.read_text(encoding="utf-8").strip(), ""]


def _link(path: Path) -> str:
    """``path`` as a link from LEADERBOARD.md (the repository's root), when it lies inside."""
    try:
        return path.resolve().relative_to(LEADERBOARD.resolve().parent).as_posix()
    except ValueError:  # outside: still relative, never one machine's absolute path
        return recorded_path(path)


def _budget_text(data: dict[str, Any]) -> str:
    return f"{int(float(data['budget_decisions'])):,} decisions"


def _mean_rate(seeds: list[dict[str, Any]], rung: str) -> str:
    rates = []
    for s in seeds:
        try:
            rates.append(s["card"].rung(rung).win_rate)
        except KeyError:
            return "–"
    return _pct(sum(rates) / len(rates))


def _budget_summary(entries: list[dict[str, Any]]) -> list[str]:
    """One line per result: the means over its seeds, for comparing training configs at a budget."""
    rungs: list[str] = []
    for data in entries:
        rungs += [r.rung for r in data["seeds"][0]["card"].rungs if r.rung not in rungs]
    head = ["track", "budget (decisions)", "config", "seeds", "teacher's decisions per seed"]
    head += [f"mean vs {r}" for r in rungs] + ["rating: the mean (or each seed's)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for data in entries:
        seeds = data["seeds"]
        ratings = [s["card"].rating for s in seeds]
        values = [r.value for r in ratings if r is not None]
        if len(values) == len(seeds) and all(v is not None for v in values):
            rating = f"{sum(values) / len(values):.0f}"
        else:
            rating = "; ".join(r.text() if r is not None else "not rated" for r in ratings)
        teacher = sum(int(s.get("teacher_decisions", 0) or 0) for s in seeds) / len(seeds)
        warm = data.get("warm_start")
        cells = [data["track"], f"{int(float(data['budget_decisions'])):,}", f"`{data['config']}`", str(len(seeds)),
                 f"{teacher:,.0f}" if teacher else f"– (a warm start: `{warm['file']}`)" if warm else "–"]
        cells += [_mean_rate(seeds, r) for r in rungs] + [rating]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _budget_section(entries: list[tuple[Path, dict[str, Any]]]) -> list[str]:
    lines = [
        "## Learning-budget track",
        "",
        "Training configs compared at an equal budget of decisions of the learning policy (a teacher's or an "
        "imitation's decisions are shown apart), several seeds each, every final policy scored on ladder rungs.",
        "",
    ]
    if not entries:
        return [*lines, "No learning-budget results yet (benchmarks/results/budget/ is empty).", ""]
    entries = sorted(entries, key=lambda e: (e[1]["track"], float(e[1]["budget_decisions"]), e[1]["config"]))
    lines += _budget_summary([data for _, data in entries])
    for path, data in entries:
        seeds = data["seeds"]
        rungs = [r.rung for r in seeds[0]["card"].rungs]
        teacher = sum(int(s.get("teacher_decisions", 0) or 0) for s in seeds)
        lines += [f"### {data['config']} on {data['track']}, {_budget_text(data)}"
                  + (f" ({data['algorithm']})" if data.get("algorithm") else ""), ""]
        quick = any(s["card"].quick for s in seeds)
        lines.append(f"- budget: {int(float(data['budget_decisions'])):,} decisions of the learning policy per seed; "
                     f"{len(seeds)} seeds" + (f"; teacher/imitation decisions {teacher:,} in all" if teacher else "")
                     + ("; scored *quick* (about 200 games per rung)" if quick else ""))
        lines.append(f"- command: `{data['command']}`")
        warm = data.get("warm_start")
        if warm:
            digest = f" (SHA-256 {warm['sha256'][:12]}…)" if warm.get("sha256") else ""
            lines.append(f"- warm start: the policy file `{warm['file']}`{digest}, made before the runs; the "
                         "decisions that made it are not counted")
        picture = path.with_suffix(".png")
        if picture.is_file():
            lines.append(f"- each seed's learning curve: [{picture.name}]({_link(picture)})")
        lines += ["", "| rung | mean win rate | lowest – highest | each seed (95% CI) |", "|---|---:|---|---|"]
        for rung in rungs:
            per_seed = []
            for s in seeds:
                try:
                    per_seed.append((s["seed"], s["card"].rung(rung)))
                except KeyError:
                    continue
            if not per_seed:
                continue
            rates = [r.win_rate for _, r in per_seed]
            each = "; ".join(f"seed {seed}: {_pct(r.win_rate)} [{_pct(r.win_rate_ci[0])}, {_pct(r.win_rate_ci[1])}]"
                             for seed, r in per_seed)
            lines.append(f"| {rung} | {_pct(sum(rates) / len(rates))} | {_pct(min(rates))} – {_pct(max(rates))} | "
                         f"{each} |")
        rated = [(s["seed"], s["card"].rating) for s in seeds if s["card"].rating]
        if rated:
            each = "; ".join(f"seed {seed}: {rating.text()}" for seed, rating in rated)
            values = [rating.value for _, rating in rated]
            mean = ""
            if len(rated) == len(seeds) and all(v is not None for v in values):
                mean = f"; mean {sum(values) / len(values):.0f}"
            lines += ["", f"Rating on the track's scale (95% CI): {each}{mean}."]
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=COMMAND, description="Write LEADERBOARD.md from the committed scorecards.")
    p.add_argument("--check", action="store_true", help="only check that LEADERBOARD.md is up to date (exit 1 if not)")
    p.add_argument("--output", default=str(LEADERBOARD), help=f"the file to write (default {LEADERBOARD})")
    args = p.parse_args(argv)
    try:
        text = render()
    except BenchmarkError as exc:
        print(terminal_text(f"leaderboard: error: {exc}"), file=sys.stderr)
        return 2
    out = Path(args.output)
    if args.check:
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out} is out of date; run {COMMAND}", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    from keltis_env.core.output_files import atomic_write_text

    atomic_write_text(out, text)
    print(f"leaderboard written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
