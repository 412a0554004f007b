"""No tracked file outside ``tests/`` names a machine's absolute path, and what writes such
files records paths relative to the repository (:mod:`keltis_env.core.recorded_paths`):
scorecards, budget results, evaluation results and run folders' commands."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from keltis_env.core.recorded_paths import recorded_path, recorded_text, repository_root

ROOT = Path(__file__).resolve().parents[1]

#: an absolute path under a folder that holds one machine's or one user's files, after the
#: start of a line or a character that ends a word in text, JSON, YAML or a command line
MACHINE_PATH = re.compile(r"(?:^|[\s'\"`(\[:=,>])(/(?:home|root|work|tmp|Users|mnt|opt|srv|private|var/folders)/"
                          r"[^\s'\"`)\]]*)", re.M)


def tracked_files() -> list[Path]:
    """Every file git tracks outside ``tests/`` (whose fixtures may name paths on purpose)."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    names = [name for name in out.decode().split("\0") if name and not name.startswith("tests/")]
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def machine_paths(text: str) -> list[str]:
    return [m.group(1) for m in MACHINE_PATH.finditer(text)]


def test_no_tracked_file_names_a_machines_absolute_path() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    found = []
    for path in tracked_files():
        data = path.read_bytes()
        if b"\0" in data:  # a picture, a zip: no text to read
            continue
        text = data.decode("utf-8", errors="replace")
        for line_no, line in enumerate(text.splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{line_no}: {hit}" for hit in machine_paths(line)]
    assert not found, "tracked files name absolute paths of a machine (write them relative to the repository):\n" \
        + "\n".join(found[:40])


def test_the_scan_sees_absolute_paths_in_commands_specs_and_json_and_not_urls_or_relative_paths() -> None:
    assert machine_paths('"agent": "ppo:/work/runs/x/policy.zip"') == ["/work/runs/x/policy.zip"]
    assert machine_paths("keltis ladder random --json /home/me/out.json") == ["/home/me/out.json"]
    assert machine_paths("PYTHONPATH=/tmp/pz keltis bench") == ["/tmp/pz"]
    assert machine_paths("/root/.venv/bin/python -m training.train") == ["/root/.venv/bin/python"]
    assert machine_paths("https://example.com/work/x, ../runs/x, runs/tmp/x, > /dev/null") == []


def test_recorded_paths_are_relative_to_the_repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    root = repository_root()
    assert root == ROOT  # a checkout: its root, whatever the working folder
    assert recorded_path(ROOT / "runs" / "x" / "policy.zip") == "runs/x/policy.zip"
    assert recorded_path(ROOT.parent / "runs" / "budget") == "../runs/budget"
    assert recorded_path("/dev/null") == "/dev/null"
    monkeypatch.chdir(ROOT)
    assert recorded_path("runs/x") == "runs/x"
    monkeypatch.chdir(ROOT / "docs")  # a relative path is taken from the working folder
    assert recorded_path("x.md") == "docs/x.md"


def test_recorded_text_rewrites_every_absolute_path_of_a_command_or_an_agent_spec() -> None:
    runs = ROOT / "runs"
    command = f"keltis ladder ppo:{runs}/a.zip,symmetry=none --track keltis-2p --json={ROOT}/b.json --out /dev/null"
    assert recorded_text(command) == "keltis ladder ppo:runs/a.zip,symmetry=none --track keltis-2p --json=b.json " \
                                     "--out /dev/null"
    assert recorded_text(f"py:{ROOT}/examples/bot.py:Bot") == "py:examples/bot.py:Bot"
    assert recorded_text(f"'{ROOT.parent}/other/python' -m training.train") == "'../other/python' -m training.train"
    assert recorded_text("ppo:policies/keltis_2p.zip see https://example.com/x") == \
        "ppo:policies/keltis_2p.zip see https://example.com/x"


def test_a_scorecard_records_its_agent_and_command_relative_to_the_repository(tmp_path: Path) -> None:
    from keltis_env.benchmark.ladder import make_scorecard
    from keltis_env.benchmark.protocol import load_protocol

    protocol = load_protocol(None)
    track = protocol.track("keltis-2p")
    policy = ROOT / "policies" / "keltis_2p.zip"
    card = make_scorecard(protocol, track, f"ppo:{policy}", None, True, {},
                          f"keltis ladder ppo:{policy} --track keltis-2p --json {ROOT}/benchmarks/results/x.json")
    data = card.to_dict()
    assert data["agent"] == "ppo:policies/keltis_2p.zip"
    assert data["command"] == "keltis ladder ppo:policies/keltis_2p.zip --track keltis-2p --json " \
                              "benchmarks/results/x.json"
    assert not machine_paths(json.dumps(data))


def test_a_run_folders_command_names_its_paths_relative_to_the_repository(tmp_path: Path) -> None:
    pytest.importorskip("sb3_contrib")
    from training.sb3.config import load_config
    from training.sb3.run_folder import write_session

    config = load_config(ROOT / "configs" / "train" / "smoke.yaml", [f"runs_dir={tmp_path}"])
    run = tmp_path / "run"
    run.mkdir()
    write_session(run, config, f"{ROOT}/.venv/bin/python -m training.train --config {ROOT}/configs/train/smoke.yaml",
                  resumed=False)
    assert (run / "command.txt").read_text().splitlines()[1] == \
        ".venv/bin/python -m training.train --config configs/train/smoke.yaml"
    assert json.loads((run / "run.json").read_text())["sessions"][0]["command"].startswith(".venv/bin/python ")
