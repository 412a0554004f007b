"""The benchmark ladder: the frozen protocol, the rating, the scorecard's determinism
across worker counts, resuming an interrupted run, and the command's errors."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from benchmark_helpers import ROOT, tiny_protocol

from keltis_env.benchmark import (
    BenchmarkError,
    Outcome,
    RatingError,
    Scorecard,
    comparable,
    fit_rating,
    fit_ratings,
    load_protocol,
    protocol_folder,
    score,
    sha256_file,
    win_probability,
)
from keltis_env.cli import main
from keltis_env.policy import read_policy_info

#: the frozen files of protocol v1: a change to one of them is a new protocol version
FROZEN_V1 = {
    "protocol.yaml": "5e224d3c5222e98726e1963541266eacb1b054493a4bdc55b2e2ba309d54691d",
    "calibration.json": "8d7a65e83a1c354fca5441b3a1a9943bf13b49f63c8e69a396ce3adce0331edb",
}

TRACKS = ["keltis-2p", "keltis-3p", "keltis-4p", "dice-2p", "dice-3p", "dice-4p"]


def test_protocol_v1_is_frozen() -> None:
    folder = protocol_folder("v1")
    for name, digest in FROZEN_V1.items():
        assert sha256_file(folder / name) == digest, f"benchmarks/v1/{name} changed: make a v2 instead"
    protocol = load_protocol()  # checks every frozen policy against its name
    assert protocol.version == "v1" and list(protocol.tracks) == TRACKS
    ratings = json.loads((folder / "calibration.json").read_text())["tracks"]
    for name, track in protocol.tracks.items():  # every rung of every track is rated, random = 0
        assert sorted(ratings[name]["ratings"]) == sorted(track.rungs), name
        assert ratings[name]["ratings"]["random"]["rating"] == 0.0
    for name, track in protocol.tracks.items():
        game = name.split("-")[0]
        assert track.game == game and track.players == int(name[-2])
        assert 1090 <= track.games_for(False) <= 1110 and 195 <= track.games_for(True) <= 205
        expected = ["random", "heuristic"] + (["planner"] if game == "keltis" else []) + ["ismcts", "policy"]
        assert list(track.rungs) == expected
        # the policy rung is the track's policy as shipped when v1 was frozen: a later shipped
        # policy (policies/keltis_2p.zip, keltis_3p.zip, keltis_4p.zip since) leaves v1 as it is
        policy = Path(track.rungs["policy"].partition(":")[2])
        assert sha256_file(policy) == policy.stem
        info = read_policy_info(policy)
        assert (info.game, info.num_players) == (game, track.players) and not info.inferred


def test_altered_frozen_policy_is_refused(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", policy=True)
    load_protocol(folder)
    frozen = next((folder / "policies").iterdir())
    frozen.write_bytes(frozen.read_bytes()[:-1] + b"x")
    with pytest.raises(BenchmarkError, match="altered or corrupt: its SHA-256 is"):
        load_protocol(folder)


def test_equal_player_wins_one_in_n() -> None:
    for n in (2, 3, 4):
        assert win_probability(120.0, 120.0, n) == pytest.approx(1 / n)
    assert win_probability(400.0, 0.0, 2) == pytest.approx(10 / 11)


def test_rating_recovers_known_strengths() -> None:
    rng = np.random.default_rng(5)
    rungs = {"random": 0.0, "heuristic": 500.0, "planner": 800.0}
    for players, truth in ((2, 650.0), (3, 300.0), (4, 900.0)):
        values, covered = [], 0
        for _ in range(100):
            outcomes = [Outcome(name, players, float(rng.binomial(1000, win_probability(truth, r, players))), 1000)
                        for name, r in rungs.items()]
            fitted = fit_rating(outcomes, rungs)
            assert fitted.value is not None and fitted.low is not None and fitted.high is not None
            assert fitted.low < fitted.value < fitted.high and fitted.high - fitted.low < 150
            values.append(fitted.value)
            covered += fitted.low < truth < fitted.high
        assert abs(np.mean(values) - truth) < 10, players  # unbiased
        assert 88 <= covered <= 100, players  # the 95% interval covers the truth about 95 times in 100
    # a perfect record has no finite maximum: a lower bound only
    top = fit_rating([Outcome("random", 2, 50.0, 50)], rungs)
    assert top.value is None and top.bound == "above" and top.low is not None and top.low > 0


def test_calibration_fit_recovers_known_strengths() -> None:
    rng = np.random.default_rng(11)
    truth = {"random": 0.0, "heuristic": 450.0, "planner": 700.0, "ismcts": 950.0}
    outcomes = []
    for players in (2, 4):
        names = list(truth)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                p = win_probability(truth[a], truth[b], players)
                wins = rng.binomial(4000, p)
                outcomes.append(Outcome(b, players, float(wins), 4000, player=a))
    fitted = fit_ratings(outcomes)
    assert fitted["random"] == (0.0, 0.0)
    for name, value in truth.items():
        rating, se = fitted[name]
        assert abs(rating - value) <= max(4 * se, 1e-9), name
    with pytest.raises(RatingError, match="'heuristic' never loses"):
        fit_ratings([Outcome("heuristic", 2, 0.0, 20, player="random")])
    # one virtual game per table: the same ratings within a point or two of these 4,000-game tables...
    for name, (rating, _) in fit_ratings(outcomes, prior_games=1.0).items():
        assert abs(rating - fitted[name][0]) < 2, name
    # ...and a finite rating for a player that never wins (random against the card game's rungs)
    swept = [Outcome("heuristic", 2, 0.0, 400, player="random"), Outcome("planner", 2, 0.0, 400, player="random"),
             Outcome("planner", 2, 150.0, 400, player="heuristic")]
    with pytest.raises(RatingError):
        fit_ratings(swept)
    prior = fit_ratings(swept, prior_games=1.0)
    assert 800 < prior["heuristic"][0] < prior["planner"][0] < 2000
    with pytest.raises(RatingError, match="prior_games must be a finite number >= 0"):
        fit_ratings(swept, prior_games=-1.0)


def test_scorecard_is_the_same_for_one_and_two_workers(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=2, players=3)
    cards = [score("heuristic", "dice-3p", protocol=folder, workers=w, progress=False).to_dict() for w in (1, 2)]
    assert comparable(cards[0]) == comparable(cards[1])
    card = cards[0]
    assert card["protocol"] == "test" and card["quick"] is False and card["partial"] is False
    assert [r["games"] for r in card["rungs"]] == [6, 6]
    assert card["rating"]["value"] is not None or card["rating"]["bound"] is not None
    rung = card["rungs"][1]
    assert rung["rung"] == "heuristic" and 0 <= rung["win_rate_ci"][0] <= rung["win_rate"] <= rung["win_rate_ci"][1]
    assert Scorecard.from_dict(card).to_dict() == card  # the JSON round-trips


def test_agent_file_hash_and_rung_subset(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=1, policy=True)
    policy = ROOT / "policies" / "dice_2p.zip"
    card = score(f"ppo:{policy}", "dice-2p", rungs=["heuristic"], quick=True, protocol=folder, workers=1,
                 progress=False)
    assert card.agent_sha256 == sha256_file(policy) and card.quick
    assert [r.rung for r in card.rungs] == ["heuristic"] and card.rungs[0].games == 2
    assert "QUICK" in card.markdown()
    with pytest.raises(BenchmarkError, match="has no rung 'planner'; its rungs are random, heuristic, policy"):
        score("random", "dice-2p", rungs=["planner"], protocol=folder, progress=False)
    with pytest.raises(BenchmarkError, match="unknown track 'keltis-5p'"):
        score("random", "keltis-5p", protocol=folder, progress=False)
    with pytest.raises(BenchmarkError, match="is a 3-player dice policy; this is a 2-player dice game"):
        score(f"ppo:{ROOT / 'policies' / 'dice_3p.zip'}", "dice-2p", protocol=folder, progress=False)


def test_an_external_agent_is_scored_with_the_hash_of_its_code(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=1)
    code = ROOT / "examples" / "my_agent.py"
    card = score(f"py:{code}:first_legal", "dice-2p", rungs=["random"], protocol=folder, workers=1, progress=False)
    # the scorecard names the code relative to the repository, as it names every path
    assert card.agent == "py:examples/my_agent.py:first_legal" and card.agent_sha256 == sha256_file(code)
    assert card.rungs[0].games == 2


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "keltis_env", "ladder", *args]


def test_resume_plays_only_the_missing_games(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=4)
    run = tmp_path / "run"
    whole = score("heuristic", "dice-2p", protocol=folder, workers=1, out=run, progress=False)
    # as an interrupted run leaves it: some games missing, the last line cut short
    lines = (run / "heuristic.jsonl").read_text().splitlines()
    (run / "heuristic.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])
    (run / "random.jsonl").write_text("")
    resumed = score("heuristic", "dice-2p", protocol=folder, workers=2, out=run, resume=True, progress=False)
    assert comparable(resumed.to_dict()) == comparable(whole.to_dict())
    assert len((run / "random.jsonl").read_text().splitlines()) == 8
    alien = {**json.loads(lines[0]), "seed": 12345}  # a game of other deals: refused
    (run / "random.jsonl").write_text(json.dumps(alien) + "\n")
    with pytest.raises(BenchmarkError, match="played with other deals or seats"):
        score("heuristic", "dice-2p", protocol=folder, out=run, resume=True, progress=False)


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_scorecard(tmp_path: Path) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=60)
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    common = ["heuristic", "--track", "dice-2p", "--protocol", str(folder), "--workers", "1", "--quiet"]
    proc = subprocess.Popen(_cli(*common, "--out", str(run), "--json", str(tmp_path / "a.json")), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    store = run / "random.jsonl"
    deadline = time.monotonic() + 60
    while not (store.exists() and len(store.read_text().splitlines()) >= 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    partial = json.loads((tmp_path / "a.partial.json").read_text())
    assert partial["partial"] is True and not (tmp_path / "a.json").exists()
    kept = sum(r["games"] for r in partial["rungs"])
    assert 3 <= kept < 240 and f"--resume {run}" in out

    resumed = subprocess.run(_cli(*common, "--resume", str(run), "--json", str(tmp_path / "a.json")), env=env,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    whole = score("heuristic", "dice-2p", protocol=folder, workers=1, progress=False).to_dict()
    card = json.loads((tmp_path / "a.json").read_text())
    assert comparable({**card, "command": None}) == comparable(whole)
    assert "--workers" not in card["command"] and "--resume" not in card["command"]


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=1)
    base = ["ladder", "--protocol", str(folder), "--quiet"]
    assert main([*base, "random", "--track", "dice-9p"]) == 2
    assert "unknown track 'dice-9p'" in capsys.readouterr().err
    assert main([*base, "random", "--track", "dice-2p", "--resume", str(tmp_path / "none")]) == 2
    assert "no run.json there" in capsys.readouterr().err
    assert main([*base, "nobot", "--track", "dice-2p"]) == 2
    assert "unknown bot 'nobot'" in capsys.readouterr().err
    run = tmp_path / "run"
    assert main([*base, "random", "--track", "dice-2p", "--out", str(run), "--json", str(tmp_path / "c.json")]) == 0
    assert main([*base, "heuristic", "--track", "dice-2p", "--resume", str(run)]) == 2
    assert "that run differs: agent 'random' (now 'heuristic')" in capsys.readouterr().err
    assert main([*base, "random", "--track", "dice-2p", "--out", str(run)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert main([*base, "random", "--track", "dice-2p", "--rungs", "random,,x"]) == 2
    assert "give rung names separated by commas" in capsys.readouterr().err
    assert not math.isnan(json.loads((tmp_path / "c.json").read_text())["rungs"][0]["win_rate"])
