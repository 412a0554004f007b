"""Writes the golden results that pin behaviour across refactors: ``python tests/golden/make_golden.py``.

For each case, ``keltis_env.evaluation.evaluate`` plays a few duplicate deals with game
records; the file keeps the evaluation's JSON summary (timings left out) and every game's
seed, seats, scores and list of actions. ``tests/test_golden.py`` plays the same cases and
asks for the same files. Rewrite them only for a change meant to change play.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: (file stem, game, agent specs, games, seed, options)
CASES = [
    ("keltis_2p_bots", "keltis", ["heuristic", "random"], 4, 11, {}),
    ("keltis_2p_search", "keltis", ["ismcts:iterations=8", "planner"], 2, 12, {}),
    ("keltis_3p_bots", "keltis", ["planner", "heuristic", "random"], 3, 13, {}),
    ("keltis_4p_layout", "keltis", ["heuristic", "random", "heuristic", "random"], 4, 14, {"tile_layout": "random"}),
    ("dice_2p_bots", "dice", ["heuristic", "random"], 4, 21, {}),
    ("dice_2p_search", "dice", ["ismcts:iterations=8", "heuristic"], 2, 22, {}),
    ("dice_3p_layout", "dice", ["heuristic", "random", "heuristic"], 3, 23, {"bonus_layout": "random"}),
    ("ppo_keltis_2p", "keltis", ["ppo:policies/keltis_2p.zip", "heuristic"], 4, 31, {}),
    ("ppo_keltis_3p", "keltis", ["ppo:policies/keltis_3p.zip", "heuristic", "random"], 3, 32, {}),
    ("ppo_keltis_4p", "keltis", ["ppo:policies/keltis_4p.zip", "heuristic", "random", "heuristic"], 4, 33, {}),
    ("ppo_dice_2p", "dice", ["ppo:policies/dice_2p.zip", "heuristic"], 4, 34, {}),
    ("ppo_dice_3p", "dice", ["ppo:policies/dice_3p.zip", "heuristic", "random"], 3, 35, {}),
    ("ppo_dice_4p", "dice", ["ppo:policies/dice_4p.zip", "heuristic", "random", "heuristic"], 4, 36, {}),
    ("ppo_sampled", "keltis", ["ppo:policies/keltis_2p.zip,sample=1,temperature=0.7", "random"], 2, 37, {}),
]

#: fields of the summary that depend on the machine's speed
TIMING_KEYS = ("ms_per_decision",)


def play(game: str, specs: list[str], games: int, seed: int, options: dict) -> dict:
    """The golden form of one case: the evaluation summary and every game's actions."""
    from keltis_env.evaluation import evaluate

    with tempfile.TemporaryDirectory() as folder:
        result = evaluate(specs, games=games, seed=seed, workers=1, game=game, progress=False,
                          records_dir=folder, options=dict(options))
        summary = result.to_dict()
        for agent in summary["agents"]:
            for key in TIMING_KEYS:
                agent.pop(key, None)
        games_out = []
        for r in result.results:
            record = json.loads((Path(folder) / f"game_{r.index:05d}.json").read_text())
            games_out.append({"index": r.index, "seed": r.seed, "seats": list(r.seats), "scores": list(r.scores),
                              "actions": record["actions"]})
    return {"summary": summary, "games": games_out}


def main() -> None:
    sys.path.insert(0, str(ROOT))
    import os

    os.chdir(ROOT)
    for stem, game, specs, games, seed, options in CASES:
        out = play(game, specs, games, seed, options)
        (HERE / f"{stem}.json").write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
        print(stem, [a["wins"] for a in out["summary"]["agents"]])


if __name__ == "__main__":
    main()
