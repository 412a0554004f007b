"""A run folder written by keltis-rl 0.2.0 (``tests/data/run_0_2_0``: the smoke config on the
batched collector with a heuristic imitation and its anchor) still resumes and still seeds
a new run through ``pretrain.init``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEGACY = ROOT / "tests" / "data" / "run_0_2_0"

pytestmark = pytest.mark.slow


def test_a_0_2_0_run_folder_resumes(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(LEGACY, run)
    before = json.loads((run / "checkpoints" / "state.json").read_text())["timesteps"]
    total = before + 512
    out = subprocess.run([sys.executable, "-m", "training.train", "--resume", str(run), "--set",
                          f"total_timesteps={total}", "--no-progress"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    state = json.loads((run / "checkpoints" / "state.json").read_text())
    assert state["timesteps"] == total
    assert (run / "checkpoints" / "anchor.zip").is_file()
    assert "(resume)" in (run / "command.txt").read_text()


def test_a_0_2_0_policy_seeds_a_new_run_with_pretrain_init(tmp_path):
    out = subprocess.run([sys.executable, "-m", "training.train", "--config", "configs/train/smoke.yaml",
                          "--set", f"runs_dir={tmp_path}", "--set", "workers=1",
                          "--set", f"init={LEGACY / 'policy.zip'}", "--set", "total_timesteps=256",
                          "--set", "n_envs=2", "--no-progress"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (folder,) = tmp_path.iterdir()
    assert (folder / "policy.zip").is_file()
    assert str(LEGACY / "policy.zip") in (folder / "report.md").read_text()
