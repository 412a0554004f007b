"""The end of an SB3 run: the learning-curve picture and the final evaluation report
(``report.md``, ``report.json``), written whole (:mod:`keltis_env.core.output_files`)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path, atomic_write_text

from .checkpoints import WARM_START, WARM_START_NAME
from .config import TrainConfig
from .opponent_eval import OpponentResult


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


#: Win rates and rates are drawn from this far below 0 to this far above 1, so that a line
#: at 0% (or 100%) stays visible above (below) the axis.
RATE_LIMITS = (-0.05, 1.05)


def _legend_outside(ax: Any) -> None:
    """The axes' legend to the right of its plot area, where it covers no data."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=9)


def learning_curve_figure(run_dir: Path) -> Any:
    """The figure of :func:`plot_learning_curve` (the caller closes it): the evaluations'
    win rates and, where the run has ``games.csv``, a second panel of the training games."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    evals = _read_csv(run_dir / "eval.csv")
    games = _read_csv(run_dir / "games.csv")
    if games:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    else:
        fig, top = plt.subplots(figsize=(10, 4.5))
    for opponent in dict.fromkeys(r["opponent"] for r in evals):
        rows = [r for r in evals if r["opponent"] == opponent]
        x = [int(r["timesteps"]) for r in rows]
        top.plot(x, [float(r["win_rate"]) for r in rows], marker="o", label=f"vs {opponent}", zorder=3)
        top.fill_between(x, [float(r["ci_low"]) for r in rows], [float(r["ci_high"]) for r in rows], alpha=0.2)
    if games:
        x = [int(r["timesteps"]) for r in games]
        top.plot(x, [float(r["win_rate"]) for r in games], color="grey", alpha=0.5, lw=1,
                 label="training games (pool)")
        bottom.plot(x, [float(r["mean_turns"]) for r in games], label="mean game length (turns)")
        twin = bottom.twinx()
        twin.plot(x, [float(r["truncation_rate"]) for r in games], color="tab:red", alpha=0.7,
                  label="truncation rate")
        twin.set_ylabel("truncation rate")
        twin.set_ylim(*RATE_LIMITS)
        bottom.set_ylabel("turns per game")
        handles, labels = bottom.get_legend_handles_labels()
        more, more_labels = twin.get_legend_handles_labels()
        bottom.legend(handles + more, labels + more_labels, loc="upper left", bbox_to_anchor=(1.12, 1.0),
                      borderaxespad=0.0, fontsize=9)
    top.axhline(0.5, color="black", lw=0.5, ls=":")
    top.set_ylim(*RATE_LIMITS)
    top.set_ylabel("win rate")
    top.set_title(f"{run_dir.name}: learning curve")
    _legend_outside(top)
    (bottom if games else top).set_xlabel("learner decisions (env steps)")
    fig.tight_layout()
    return fig


def plot_learning_curve(run_dir: Path, out: Path | None = None) -> Path:
    """``learning_curve.png`` (or ``out``): evaluation win rates (95% intervals shaded)
    and, from the training games, the learner's win share, game length and truncation
    rate; the legends beside the plots, never over the data."""
    import matplotlib.pyplot as plt

    fig = learning_curve_figure(run_dir)
    out = out if out is not None else run_dir / "learning_curve.png"
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return out


def write_report(
    run_dir: Path,
    config: TrainConfig,
    results: dict[str, OpponentResult],
    *,
    steps: int,
    learning_s: float,
    best: dict[str, Any] | None,
    policy: Path,
    final_eval_s: float,
    pretrain: dict[str, Any] | None = None,
    init: str | None = None,
) -> dict[str, Any]:
    """``report.json`` and ``report.md``; returns the report as a dict (``markdown`` key
    included)."""
    meta = json.loads((run_dir / "run.json").read_text())
    report: dict[str, Any] = {
        "run": run_dir.name,
        "policy": str(policy),
        "config": config.to_dict(),
        "seed": config.seed,
        "timesteps": steps,
        "learning_s": round(learning_s, 1),
        "learning_steps_per_s": round(steps / learning_s, 1) if learning_s > 0 else None,
        "final_eval_s": round(final_eval_s, 1),
        "best_checkpoint": best,
        "pretrain": pretrain,
        "init": init,
        "results": {opponent: r.to_dict() for opponent, r in results.items()},
        "git_commit": meta.get("git_commit"),
    }
    lines = [
        f"# Training report: {run_dir.name}",
        "",
        f"- players: {config.env.num_players}, reward: {config.env.reward}, seed: {config.seed}",
        f"- learner decisions: {steps:,} in {learning_s / 60:.1f} min of learning "
        f"({report['learning_steps_per_s'] or 0:,.0f} env steps/s, collection and updates, "
        f"{config.n_envs} envs)"
        + (f"; stopped by max_minutes ({config.max_minutes:g}) before total_timesteps ({config.total_timesteps:,})"
           if steps < config.total_timesteps else ""),
        f"- policy: `{policy}`"
        + (f" (best checkpoint: {best['timesteps']:,} steps, {best['win_rate']:.1%} vs {best['opponent']} "
           "in its periodic evaluation)" if best else " (the final weights)"),
    ]
    lines += _warm_start_lines(config, pretrain, init)
    lines.append("")
    lines += _results_lines(config, policy, results)
    lines += ["", "![learning curve](learning_curve.png)", ""]
    report["markdown"] = "\n".join(lines)
    atomic_write_text(run_dir / "report.md", report["markdown"])
    atomic_write_text(run_dir / "report.json", json.dumps({k: v for k, v in report.items() if k != "markdown"},
                                                          indent=1))
    return report


def _warm_start_lines(config: TrainConfig, pretrain: dict[str, Any] | None, init: str | None) -> list[str]:
    """The report's lines on the initial weights (``init``) and the imitation warm start."""
    lines = []
    if init:
        lines.append(f"- initial weights: `{init}` (init)"
                     + (f", logits divided by {config.pretrain.sharpen:g}"
                        if config.pretrain.sharpen != 1 and not pretrain else "")
                     + (f"; KL anchor to it (weight {config.pretrain.anchor:g} decaying to 0 over "
                        f"{config.pretrain.anchor_steps:,} steps)" if config.pretrain.anchor and not pretrain else ""))
    if pretrain:
        lines.append(
            f"- warm start: imitated `{pretrain['teacher']}` on {pretrain['decisions_recorded']:,} decisions of "
            f"{pretrain['games']} games ({pretrain.get('dagger_rounds', 0)} DAgger rounds; "
            f"{pretrain['accuracy']:.1%} of held-out decisions matched; {pretrain['seconds']:.0f} s)"
            + (f", the fit's epoch {pretrain['selected_epoch']:.0f} kept: {pretrain['selected_score']:.1%} against "
               f"`{config.fit.select_by}` on {config.fit.select_games} selection games"
               if "selected_epoch" in pretrain else "")
            + (f", logits divided by {config.pretrain.sharpen:g}" if config.pretrain.sharpen != 1 else "")
            + (f"; soft targets: softmax(teacher's action values / {pretrain['soft_temperature']:g})"
               if pretrain.get("soft_temperature") else "")
            + "; then self-play reinforcement learning"
            + (f" with a KL anchor to the imitated policy (weight {pretrain['anchor']:g} decaying to 0 over "
               f"{config.pretrain.anchor_steps:,} steps)" if pretrain.get("anchor") else "")
        )
    return lines


def _results_lines(config: TrainConfig, policy: Path, results: dict[str, OpponentResult]) -> list[str]:
    """The report's final-evaluation section: a table row per opponent and the commands to measure again."""
    if not results:
        return ["No final evaluation (eval.final_games = 0)."]
    n = next(iter(results.values())).games
    lines = [
        f"## Final evaluation ({n} games per opponent, duplicate deals, policy's seat rotating)",
        "",
        "| opponent | games | win rate | 95% interval | mean score | opponent's mean score | "
        "mean game length (turns) | truncated |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for opponent, r in results.items():
        lines.append(
            f"| {opponent} | {r.games} | {r.win_rate:.1%} | {r.win_rate_ci[0]:.1%} .. {r.win_rate_ci[1]:.1%} | "
            f"{r.mean_score:.1f} | {r.opponent_mean_score:.1f} | {r.mean_turns:.1f} | {r.truncation_rate:.1%} |"
        )
    lines += ["", "Win rate counts a k-way tie as 1/k of a win; 95% Wilson intervals (keltis_env.evaluation).",
              "To measure again (other seeds, other deals): "
              + "; ".join(f"`{_evaluate_command(config, policy, opponent, n)}`" for opponent in results) + "."]
    return lines


def _evaluate_command(config: TrainConfig, policy: Path, opponent: str, games: int) -> str:
    if opponent == WARM_START_NAME:
        opponent = f"ppo:{policy.parent / 'checkpoints' / WARM_START}"
    game = f"--game {config.env.game} " if config.env.game != "keltis" else ""
    others = " ".join([opponent] * (config.env.num_players - 1))
    return f"keltis evaluate {game}ppo:{policy} {others} --games {games} --seed 7"


def main(argv: list[str] | None = None) -> int:
    """``python -m training.sb3.report RUN [--out PNG]``: draw a run folder's learning curve
    again from its ``eval.csv`` (and ``games.csv`` where it has one)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m training.sb3.report", description=main.__doc__)
    parser.add_argument("run", type=Path, help="the run folder (its eval.csv, games.csv)")
    parser.add_argument("--out", type=Path, help="the picture (default: RUN/learning_curve.png)")
    args = parser.parse_args(argv)
    if not (args.run / "eval.csv").is_file():
        print(f"python -m training.sb3.report: {args.run} has no eval.csv; give a run folder", file=sys.stderr)
        return 2
    print(plot_learning_curve(args.run, args.out))
    return 0


__all__ = ["learning_curve_figure", "main", "plot_learning_curve", "write_report"]


if __name__ == "__main__":
    sys.exit(main())
