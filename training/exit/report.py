"""The report of an expert-iteration run, written again after every round from the files
the stages left: ``report.json`` (every round's labelling, fit, gate and evaluations),
``report.md`` (one table row per round) and ``curve.png`` (the win rates against
``eval.opponent`` by round, 95% intervals as bars), all written whole
(:mod:`keltis_env.core.output_files`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from keltis_env.core.output_files import atomic_path, atomic_write_text

if TYPE_CHECKING:
    from .loop import Run


def _read(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


def _evals(folder: Path, seeds: list[int]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for who in ("network", "search"):
        for seed in seeds:
            found = _read(folder / f"eval_{who}_seed{seed}.json")
            if found is not None:
                out.setdefault(who, {})[str(seed)] = found
    return out


def collect(run: Run) -> dict[str, Any]:
    """Everything measured so far, as ``report.json`` holds it."""
    c = run.config
    rounds = []
    network = str(run.start)
    for k in range(c.rounds):
        folder = run.round_dir(k)
        entry: dict[str, Any] = {"round": k}
        for stage in ("label", "fit", "gate"):
            found = _read(folder / f"{stage}.json")
            if found is not None:
                entry[stage] = found
        if len(entry) == 1:
            break
        entry["eval"] = _evals(folder, c.eval.seeds)
        seconds = [entry.get(s, {}).get("seconds", 0.0) for s in ("label", "fit", "gate")]
        seconds += [e["seconds"] for by_seed in entry["eval"].values() for e in by_seed.values()]
        entry["seconds"] = round(sum(seconds), 1)
        if entry.get("gate", {}).get("kept"):
            network = str(folder / "network.zip")
        entry["network_after"] = network
        rounds.append(entry)
    return {"name": c.name, "game": c.env.game, "num_players": c.env.num_players, "start": c.init,
            "opponent": c.eval.opponent, "seeds": c.eval.seeds,
            "target": "soft" if c.label.target_temperature > 0 else "move",
            "temperature": c.label.target_temperature or None, "search": c.search.spec,
            "gate_player": c.gate.player, "baseline": _evals(run.folder / "baseline", c.eval.seeds),
            "rounds": rounds, "network": network}


def _cell(e: dict[str, Any] | None, ms: bool = False) -> str:
    if e is None:
        return "-"
    low, high = e["win_rate_ci"]
    text = f"{e['win_rate']:.1%} [{low:.1%}, {high:.1%}]"
    finished = e.get("finished")
    if finished and finished["truncated_games"]:
        text += f" ({finished['win_rate']:.1%} of {finished['games']} finished)"
    if not ms:
        return text
    theirs = e.get("opponent_ms_per_decision")
    return f"{text}, {e['ms_per_decision']:.1f} ms" + (f" ({theirs:.1f} ms)" if theirs is not None else "")


def _gate_cell(gate: dict[str, Any]) -> str:
    verdict = "kept" if gate["kept"] else "dropped"
    finished = gate.get("finished")
    if finished and finished["truncated_games"]:
        return f"{finished['win_rate']:.1%} of {finished['games']} finished, {gate['win_rate']:.1%} of all ({verdict})"
    return f"{gate['win_rate']:.1%} ({verdict})"


#: The win-rate axis runs from this far below 0 to this far above 1.
RATE_LIMITS = (-0.05, 1.05)


def plot_curve(data: dict[str, Any], out: Path) -> None:
    """``curve.png``: win rate against the opponent by round (-1: the start network)."""
    import matplotlib.pyplot as plt

    fig = curve_figure(data)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def curve_figure(data: dict[str, Any]) -> Any:
    """The figure of :func:`plot_curve` (the caller closes it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(10, 4.5))
    rows = [(-1, data["baseline"])] + [(r["round"], r["eval"]) for r in data["rounds"]]
    for who, style in (("network", "o-"), ("search", "s--")):
        for seed in map(str, data["seeds"]):
            points = [(k, e[who][seed]) for k, e in rows if seed in e.get(who, {})]
            if not points:
                continue
            x = [k for k, _ in points]
            y = [p["win_rate"] for _, p in points]
            err = [[p["win_rate"] - p["win_rate_ci"][0] for _, p in points],
                   [p["win_rate_ci"][1] - p["win_rate"] for _, p in points]]
            label = "raw network" if who == "network" else "guided search"
            ax.errorbar(x, y, yerr=err, fmt=style, capsize=3, label=f"{label}, seed {seed}")
    gates = [(r["round"], r["gate"]) for r in data["rounds"] if "gate" in r]
    if gates:
        ax.plot([k for k, _ in gates], [g["win_rate"] for _, g in gates], "x:", color="grey",
                label="gate: new vs previous")
    ax.axhline(0.5, color="black", lw=0.5, ls=":")
    ax.set_ylim(*RATE_LIMITS)  # a margin below 0 and above 1: a 0% or 100% point stays in view
    ax.set_xlabel("round (-1: the start network)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
    ax.set_ylabel(f"win rate against {data['opponent']}")
    ax.set_title(f"{data['name']}: expert iteration, {data['game']} {data['num_players']}p")
    if ax.get_legend_handles_labels()[0]:  # beside the plot, where it covers no data
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8)
    fig.tight_layout()
    return fig


def _label_cell(label: dict[str, Any]) -> str:
    cut = label.get("truncated_games", 0)
    return f"{label['decisions']:,}" + (f" ({cut} of {label['games']} games cut, unlabelled)" if cut else "")


def _fit_cell(fit: dict[str, Any]) -> str:
    guess = f" ({fit['value_loss_mean_guess']:.3f})" if "value_loss_mean_guess" in fit else ""
    return f"{fit['accuracy']:.1%} / {fit['value_loss']:.3f}{guess}"


def markdown(data: dict[str, Any]) -> str:
    seeds = [str(s) for s in data["seeds"]]
    head = ["round", "decisions labelled", "fit: searched move / value loss (guessing the mean)",
            "gate (new vs previous)"]
    head += [f"network vs {data['opponent']}, seed {s}" for s in seeds]
    head += [f"guided search vs {data['opponent']}, seed {s}" for s in seeds]
    head += ["minutes"]
    lines = [f"# {data['name']}: expert iteration", "",
             f"{data['game']}, {data['num_players']} players; start {data['start']}; search `{data['search']}`; "
             f"policy target: {data['target']}" + (f" (temperature {data['temperature']:g})" if data["temperature"]
                                                   else "") + f"; gating player: {data['gate_player']}.",
             "Win rates with 95% intervals (duplicate deals); the search's time per decision after the comma, "
             "its opponent's in the same games in brackets; where games were cut at max_turns, the win rate "
             "over the games that ended by the rules in brackets (the gate decides on those).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = data["baseline"]
    if base:
        cells = ["start", "-", "-", "-"] + [_cell(base.get("network", {}).get(s)) for s in seeds]
        cells += [_cell(base.get("search", {}).get(s), ms=True) for s in seeds] + ["-"]
        lines.append("| " + " | ".join(cells) + " |")
    for r in data["rounds"]:
        fit, gate, ev = r.get("fit"), r.get("gate"), r["eval"]
        cells = [str(r["round"]), _label_cell(r["label"]) if "label" in r else "-",
                 _fit_cell(fit) if fit else "-",
                 (_gate_cell(gate) if gate else "-")]
        cells += [_cell(ev.get("network", {}).get(s)) for s in seeds]
        cells += [_cell(ev.get("search", {}).get(s), ms=True) for s in seeds]
        cells.append(f"{r['seconds'] / 60:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Network now: `{data['network']}`.", "", "![curve](curve.png)", ""]
    return "\n".join(lines)


def write_report(run: Run) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and ``curve.png`` into the run folder; the data."""
    data = collect(run)
    atomic_write_text(run.folder / "report.json", json.dumps(data, indent=2) + "\n")
    atomic_write_text(run.folder / "report.md", markdown(data))
    plot_curve(data, run.folder / "curve.png")
    return data


def main(argv: list[str] | None = None) -> int:
    """``python -m training.exit.report RUN_OR_REPORT [--out PNG]``: draw the curve again
    from a run's ``report.json`` (a run folder or the file itself)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m training.exit.report", description=main.__doc__)
    parser.add_argument("report", type=Path, help="a run folder or its report.json")
    parser.add_argument("--out", type=Path, help="the picture (default: curve.png beside report.json)")
    args = parser.parse_args(argv)
    path = args.report / "report.json" if args.report.is_dir() else args.report
    data = _read(path)
    if not isinstance(data, dict) or "rounds" not in data:
        print(f"python -m training.exit.report: {path} is not an expert-iteration report.json", file=sys.stderr)
        return 2
    out = args.out if args.out is not None else path.parent / "curve.png"
    plot_curve(data, out)
    print(out)
    return 0


__all__ = ["RATE_LIMITS", "collect", "curve_figure", "main", "markdown", "plot_curve", "write_report"]


if __name__ == "__main__":
    raise SystemExit(main())
