"""The results of a budget: each seed's policy scored on the benchmark's rungs, the spread
across seeds, every seed's learning curve in one picture, the result file and its Markdown
(the format: :mod:`training.budget`).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_path, atomic_write_text
from keltis_env.core.recorded_paths import recorded_path, recorded_text

from ..common.jsonfile import finite_json
from . import ALGORITHMS, KIND, SCHEMA
from .runs import SeedRun, TrainingConfig, seed_dir


def load_track(track: str, protocol: str | Path | None = None) -> tuple[Any, Any]:
    """The benchmark protocol (``protocol``: its folder; default the shipped one) and its
    ``track``; :class:`ValueError` naming the tracks when it has no such track."""
    from keltis_env.benchmark import BenchmarkError, load_protocol

    try:
        proto = load_protocol(protocol)
        return proto, proto.track(track)
    except BenchmarkError as exc:
        raise ValueError(str(exc)) from None


def track_rungs(track: Any, wanted: tuple[str, ...] | list[str]) -> list[str]:
    """The rungs of ``wanted`` that ``track`` has (the dice game has no planner), in order."""
    return [rung for rung in wanted if rung in track.rungs]


def score_seed(run: SeedRun, runs: Path, protocol: Any, track: Any, rungs: list[str], quick: bool, workers: int,
               progress: bool = True) -> dict[str, Any]:
    """The scorecard (its JSON form) of the seed's policy on ``rungs`` of ``track``
    (:func:`keltis_env.benchmark.score`).
    The ladder keeps its games in ``seed-K/ladder[-quick]/`` (an interrupted scoring goes on
    from there) and its scorecard in ``seed-K/scorecard[-quick].json``, which a later call
    reuses when it is for this agent, protocol and rungs."""
    from keltis_env.benchmark import score

    suffix = "-quick" if quick else ""
    folder = seed_dir(runs, run.seed)
    card_path = folder / f"scorecard{suffix}.json"
    if card_path.is_file():
        card = json.loads(card_path.read_text())
        if (card["agent"], card["protocol_sha256"], card["track"], [r["rung"] for r in card["rungs"]]) \
                == (recorded_text(run.agent), protocol.sha256, track.name, rungs) and not card["partial"]:
            return dict(card)
    ladder = folder / f"ladder{suffix}"
    scorecard = score(run.agent, track.name, rungs=rungs, quick=quick, workers=workers, protocol=protocol,
                      out=ladder, resume=(ladder / "run.json").is_file(), progress=progress)
    scorecard.write_json(card_path)
    return scorecard.to_dict()


def seed_scores(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per rung of a scorecard (its JSON form): games, win rate, its interval, mean margin."""
    return {r["rung"]: {"games": r["games"], "win_rate": r["win_rate"], "interval": list(r["win_rate_ci"]),
                        "margin": r["mean_margin"]} for r in card["rungs"]}


def spread(cards: list[dict[str, Any]], rungs: list[str]) -> dict[str, dict[str, float]]:
    """Per rung, over the seeds' scorecards: mean, sample standard deviation, min and max of
    the win rates, and the mean score margin."""
    scores = [seed_scores(card) for card in cards]
    out = {}
    for rung in rungs:
        rates = [s[rung]["win_rate"] for s in scores]
        out[rung] = {"mean": statistics.fmean(rates), "std": statistics.stdev(rates) if len(rates) > 1 else 0.0,
                     "min": min(rates), "max": max(rates),
                     "margin_mean": statistics.fmean(s[rung]["margin"] for s in scores)}
    return out


def plot_curves(runs: list[SeedRun], title: str, path: Path) -> None:
    """Every seed's learning curve: one panel per opponent of the curves, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = list(dict.fromkeys(o for r in runs for o in r.curve.get("points", {})))
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(5 * max(len(shown), 1), 4), squeeze=False)
    for ax, opponent in zip(axes[0], shown, strict=False):
        for run in runs:
            points = run.curve.get("points", {}).get(opponent, [])
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o" if len(points) <= 20 else None,
                        label=f"seed {run.seed}")
        ax.set_title(f"vs {opponent}")
        ax.set_ylim(0, 1)
        ax.axhline(0.5, color="black", lw=0.5, ls=":")
        ax.set_xlabel("learning policy's decisions")
        ax.set_ylabel("win rate")
        ax.legend(loc="best")
    source = runs[0].curve.get("source", "") if runs else ""
    fig.suptitle(f"{title}\n{source}", fontsize=9)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)


def budget_label(decisions: int) -> str:
    """``2000000`` -> ``2M``, ``300000`` -> ``300k``, ``2500`` -> ``2500``."""
    for unit, size in (("M", 10**6), ("k", 10**3)):
        if decisions % size == 0:
            return f"{decisions // size}{unit}"
    return str(decisions)


def _teacher(teacher: dict[str, Any] | None) -> dict[str, Any] | None:
    """The seed's teacher as the result records it (a policy file's spec relative to the repository)."""
    return None if teacher is None else {**teacher, "spec": recorded_text(str(teacher["spec"]))}


def result(trained: TrainingConfig, decisions: int, runs: list[SeedRun], cards: list[dict[str, Any]], protocol: Any,
           rungs: list[str], quick: bool, overrides: list[str], command: str, curves: str) -> dict[str, Any]:
    """The result file's object (the format: :mod:`training.budget`)."""
    from keltis_env import __version__

    seeds = []
    for run, card in zip(runs, cards, strict=True):
        entry = {"seed": run.seed, "decisions": run.decisions_used,
                 "teacher_decisions": run.teacher["decisions"] if run.teacher else 0, "teacher": _teacher(run.teacher),
                 "learning_minutes": run.learning_minutes, "agent": recorded_text(run.agent)}
        if card.get("agent_sha256"):
            entry["policy_sha256"] = card["agent_sha256"]
        entry.update(scores=seed_scores(card), learning_curve=run.curve, scorecard=card)
        seeds.append(entry)
    data = {
        "kind": KIND, "schema": SCHEMA, "config": recorded_path(trained.path), "config_sha256": trained.sha256,
        "config_name": trained.name, "algorithm": ALGORITHMS[trained.algorithm], "track": trained.track,
        "protocol": protocol.version, "protocol_sha256": protocol.sha256, "package_version": __version__,
        "quick": quick, "budget_decisions": decisions, "command": recorded_text(command),
        "overrides": [recorded_text(item) for item in overrides],
        "rungs": rungs, "seeds": seeds, "spread": spread(cards, rungs), "curves": curves,
    }
    if trained.warm_start:  # a file made before the run (by imitation, say): its teacher is not counted here
        path = Path(trained.warm_start)
        data["warm_start"] = {"file": recorded_path(trained.warm_start),
                              "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None}
    return data


def markdown(data: dict[str, Any]) -> str:
    """The result as Markdown: a row per seed and the spread across seeds."""
    rungs = data["rungs"]
    quick = " (quick)" if data["quick"] else ""
    lines = [f"# Learning budget: `{data['config']}`, {data['budget_decisions']:,} decisions of the learning policy",
             "", f"Track `{data['track']}`, protocol {data['protocol']}{quick}, {data['algorithm']}; "
             f"`{data['command']}`", "",
             "| seed | decisions used | teacher's decisions | learning (min) | "
             + " | ".join(f"vs {r}: win rate [95%] | margin" for r in rungs) + " |",
             "|---" * (4 + 2 * len(rungs)) + "|"]
    for run in data["seeds"]:
        teacher = run["teacher"]
        cells = [str(run["seed"]), f"{run['decisions']:,}",
                 f"{teacher['decisions']:,} ({teacher['spec']})" if teacher else "-", f"{run['learning_minutes']:.1f}"]
        for rung in rungs:
            s = run["scores"][rung]
            cells += [f"{s['win_rate']:.1%} [{s['interval'][0]:.1%}, {s['interval'][1]:.1%}]", f"{s['margin']:+.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["mean ± std", "", "", ""]
    for rung in rungs:
        s = data["spread"][rung]
        cells += [f"{s['mean']:.1%} ± {s['std']:.1%} (min {s['min']:.1%}, max {s['max']:.1%})",
                  f"{s['margin_mean']:+.1f}"]
    lines += ["| " + " | ".join(cells) + " |", "",
              f"Games per rung: {', '.join(str(data['seeds'][0]['scores'][r]['games']) for r in rungs)}; "
              f"learning curves: `{data['curves']}`."]
    return "\n".join(lines) + "\n"


def write(data: dict[str, Any], path: Path) -> None:
    """The result file ``path`` (a ``ValueError`` naming the key when a figure is NaN or infinite)."""
    atomic_write_text(path, finite_json(data, path, indent=1) + "\n")


__all__ = ["budget_label", "load_track", "markdown", "plot_curves", "result", "score_seed", "seed_scores", "spread",
           "track_rungs", "write"]
