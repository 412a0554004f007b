"""The report of a run of expert iteration from zero (``report.md`` and ``curve.png`` in
the run folder), written again after every generation from the run's files alone:
``curve.jsonl`` (one line a generation) and ``evals.jsonl`` (one line an evaluation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path, atomic_write_text


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def plot_curve(evals: list[dict[str, Any]], title: str, out: Path) -> None:
    """``curve.png``: the network's win rate against each opponent (95% intervals) by
    decisions of self-play, with the minutes of learning on a second axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4.5))
    for opponent in dict.fromkeys(e["opponent"] for e in evals):
        points = [e for e in evals if e["opponent"] == opponent]
        x = [e["decisions"] / 1e6 for e in points]
        y = [e["win_rate"] for e in points]
        err = [[e["win_rate"] - e["win_rate_ci"][0] for e in points], [e["win_rate_ci"][1] - e["win_rate"]
                                                                        for e in points]]
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, label=f"against {opponent}")
    ax.axhline(0.5, color="black", lw=0.5, ls=":")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("decisions of self-play (millions)")
    ax.set_ylabel("win rate (selection deals)")
    ax.set_title(title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    plt.close(fig)


def write_report(folder: Path, config: Any) -> str:
    """``report.md`` of the run in ``folder``; returns its text."""
    curve = _lines(folder / "curve.jsonl")
    evals = _lines(folder / "evals.jsonl")
    c = config
    out = [f"# {c.name}: expert iteration from zero", "",
           f"Game {c.env.game}, {c.env.num_players} players, features {list(c.env.features)}, seed {c.seed}; "
           f"the search: {c.search.simulations} simulations a move, top {c.search.top_k}; "
           f"{c.selfplay.games} games a generation; "
           + (f"started from {c.init}." if c.init else "started from random weights."), ""]
    if curve:
        last = curve[-1]
        out += [f"{len(curve)} generations, {last['decisions']:,} decisions, {last['minutes']:.1f} min of learning "
                f"(self-play and fits).", ""]
    opponents = list(dict.fromkeys(e["opponent"] for e in evals))
    if evals:
        out += ["## The network against the bots (selection deals, seed "
                f"{c.eval.seed}, {c.eval.games} games each, 95% Wilson intervals)", "",
                "| decisions | minutes | " + " | ".join(opponents) + " |",
                "|---:|---:|" + "---|" * len(opponents)]
        by_point: dict[int, dict[str, Any]] = {}
        for e in evals:
            by_point.setdefault(e["decisions"], {"minutes": e["minutes"]})[e["opponent"]] = e
        for decisions, row in sorted(by_point.items()):
            cells = []
            for o in opponents:
                e = row.get(o)
                cells.append("" if e is None else
                             f"{e['win_rate']:.1%} [{e['win_rate_ci'][0]:.1%}, {e['win_rate_ci'][1]:.1%}]")
            out.append(f"| {decisions:,} | {row['minutes']:.1f} | " + " | ".join(cells) + " |")
        out += ["", "![curve](curve.png)", ""]
        try:
            plot_curve(evals, f"{c.name}: expert iteration from zero, {c.env.game} {c.env.num_players}p",
                       folder / "curve.png")
        except ImportError:  # matplotlib is in the train extra; the tables say it all
            out[-2] = "(no curve.png: matplotlib is not installed)"
        best = folder / "best.json"
        if best.is_file():
            b = json.loads(best.read_text())
            out += [f"Best against {b['opponent']} on the selection deals: {b['checkpoint']} "
                    f"({b['win_rate']:.1%} at {b['decisions']:,} decisions), copied to best.zip. Report it on other "
                    "deals (keltis evaluate ... --seed S with S not the selection seed).", ""]
    if curve:
        out += ["## Generations", "", "| generation | decisions | minutes | self-play decisions/s | moves a game | "
                "cut | policy loss | value loss | value loss, new games | target entropy |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        step = max(1, len(curve) // 40)
        for line in curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else []):
            speed = line["new_decisions"] / max(line["selfplay_seconds"], 1e-9)
            out.append(f"| {line['generation']} | {line['decisions']:,} | {line['minutes']:.1f} | {speed:,.0f} | "
                       f"{line['mean_length']:.0f} | {line['truncated']} | {line['policy_loss']:.3f} | "
                       f"{line['value_loss']:.4f} | {_new_games(line)} | {line['target_entropy']:.2f} |")
        out.append("")
    text = "\n".join(out)
    atomic_write_text(folder / "report.md", text)
    return text


def _new_games(line: dict[str, Any]) -> str:
    """A generation's value loss on its new games before the fit (runs before it: none)."""
    value = line.get("new_games_value_loss")
    return "" if value is None else f"{value:.4f}"


__all__ = ["write_report"]
