"""Tiny benchmark protocols for tests that must take seconds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from keltis_env.benchmark import sha256_file

ROOT = Path(__file__).resolve().parents[1]


def tiny_protocol(folder: Path, deals: int = 2, players: int = 2, policy: bool = False) -> Path:
    """A protocol of one dice track with a few deals, for tests that must take seconds."""
    folder.mkdir(parents=True, exist_ok=True)
    rungs = {"random": "random", "heuristic": "heuristic"}
    if policy:
        shipped = ROOT / "policies" / f"dice_{players}p.zip"
        digest = sha256_file(shipped)
        (folder / "policies").mkdir(exist_ok=True)
        shutil.copy(shipped, folder / "policies" / f"{digest}.zip")
        rungs["policy"] = f"ppo:policies/{digest}.zip"
    lines = ["version: test", "tracks:", f"  dice-{players}p:", "    game: dice", f"    players: {players}",
             "    seed: 7", f"    deals: {deals}", "    quick_deals: 1", "    rungs:"]
    lines += [f"      {k}: {v}" for k, v in rungs.items()]
    (folder / "protocol.yaml").write_text("\n".join(lines) + "\n")
    ratings = {"random": {"rating": 0.0}, "heuristic": {"rating": 450.0}, "policy": {"rating": 500.0}}
    (folder / "calibration.json").write_text(json.dumps({"tracks": {f"dice-{players}p": {"ratings": ratings}}}))
    return folder


def budget_protocol(folder: Path, deals: int = 2) -> Path:
    """A protocol of one keltis-2p track with the learning-budget rungs (heuristic, planner)
    and ``deals`` deals (the quick variant: one), for the learning-budget tests."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["version: tiny", "tracks:", "  keltis-2p:", "    game: keltis", "    players: 2", "    seed: 5",
             f"    deals: {deals}", "    quick_deals: 1", "    rungs:", "      random: random",
             "      heuristic: heuristic", "      planner: planner"]
    (folder / "protocol.yaml").write_text("\n".join(lines) + "\n")
    return folder
