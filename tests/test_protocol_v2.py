"""Protocol v2: its frozen files, its scale anchored on heuristic = 1000, the standard
errors of neighbouring rungs' rating differences, and the protocol's anchor options."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from benchmark_helpers import tiny_protocol

from keltis_env.benchmark import BenchmarkError, load_protocol, protocol_folder, sha256_file
from keltis_env.benchmark.calibrate import PRIOR_GAMES, main, neighbour_errors
from keltis_env.benchmark.ladder import _public_spec
from keltis_env.benchmark.protocol import FROZEN_SHA256
from keltis_env.benchmark.rating import _C, Outcome, fit_joint, fit_ratings, win_probability

#: the SHA-256 of v2's ratings: a change is a new protocol version
CALIBRATION_SHA256 = "89a2200fb1352340a8228c5abc74c5fefba705b476f92bdc13243808890badd2"
TRACKS = ["keltis-2p", "keltis-3p", "keltis-4p", "dice-2p", "dice-3p", "dice-4p"]


def _calibration() -> dict:
    return json.loads((protocol_folder("v2") / "calibration.json").read_text(encoding="utf-8"))["tracks"]


def test_protocol_v2_is_frozen_and_its_file_is_the_known_v2() -> None:
    folder = protocol_folder("v2")
    assert sha256_file(folder / "protocol.yaml") == FROZEN_SHA256["v2"], "benchmarks/v2 changed: make a v3 instead"
    assert sha256_file(folder / "calibration.json") == CALIBRATION_SHA256, "v2's ratings changed: make a v3 instead"
    protocol = load_protocol(folder)  # checks every frozen policy against its name
    assert protocol.version == "v2" and not protocol.custom and list(protocol.tracks) == TRACKS
    assert (protocol.anchor, protocol.anchor_rating) == ("heuristic", 1000.0)
    for track in protocol.tracks.values():
        assert "random" not in track.rungs and 1090 <= track.games_for(False) <= 1110
        if track.game == "keltis":  # the card game's search rung is the compiled one
            assert track.rungs["ismcts"] == "ismcts:backend=compiled"


def test_v2_policy_rungs_are_v1s_frozen_policies_shown_relative_to_the_protocol() -> None:
    v1, v2 = load_protocol(protocol_folder("v1")), load_protocol(protocol_folder("v2"))
    for name, track in v2.tracks.items():
        assert track.rungs["policy"] == v1.tracks[name].rungs["policy"]
        assert _public_spec(track.rungs["policy"], v2).startswith("ppo:../v1/policies/")
        assert _public_spec(v1.tracks[name].rungs["policy"], v1).startswith("ppo:policies/")


def test_every_v2_track_is_anchored_on_heuristic_at_1000_with_every_rung_rated() -> None:
    protocol = load_protocol(protocol_folder("v2"))
    calibration = _calibration()
    for name, track in protocol.tracks.items():
        ratings = calibration[name]["ratings"]
        assert sorted(ratings) == sorted(track.rungs), name
        assert ratings["heuristic"] == {"rating": 1000.0, "se": 0.0}
        assert track.ratings["heuristic"] == 1000.0


def test_every_neighbouring_pair_of_v2_rungs_has_a_difference_standard_error_of_at_most_30() -> None:
    for name, entry in _calibration().items():
        outcomes = [Outcome(t["table"], entry["players"], t["solo_wins"], t["games"], player=t["solo"])
                    for t in entry["tables"]]
        fit = fit_joint(outcomes, anchor="heuristic", prior_games=entry["prior_games"])
        recomputed = neighbour_errors(fit, list(entry["ratings"]))
        assert recomputed == entry["neighbours"], name  # the recorded errors are those of the recorded tables
        assert len(recomputed) == len(entry["ratings"]) - 1
        for pair in recomputed:
            assert pair["se"] <= 30.0, (name, pair)
            assert pair["difference"] >= 0


def test_a_difference_standard_error_counts_the_covariance_of_the_two_ratings() -> None:
    # one table: the difference's error is the table's own, 1 / (c sqrt(g p (1 - p)))
    games, wins = 400, 120.0
    fit = fit_joint([Outcome("b", 2, wins, games, player="a")], anchor="a")
    p = wins / games
    assert fit.difference_se("a", "b") == pytest.approx(1 / (_C * math.sqrt(games * p * (1 - p))), rel=1e-6)
    # two rungs far from the anchor move together: their difference is known better than either rating
    rng = np.random.default_rng(3)
    truth = {"random": 0.0, "x": 900.0, "y": 950.0}
    outcomes = [Outcome("x", 2, 0.0, 300, player="random"), Outcome("y", 2, 0.0, 300, player="random")]
    outcomes.append(Outcome("y", 2, float(rng.binomial(2000, win_probability(truth["x"], truth["y"], 2))), 2000,
                            player="x"))
    far = fit_joint(outcomes, anchor="random", prior_games=PRIOR_GAMES)
    assert far.difference_se("x", "y") < 0.5 * min(far.rating("x")[1], far.rating("y")[1])
    assert far.difference_se("x", "y") == pytest.approx(far.difference_se("y", "x"))


def test_fit_ratings_keeps_its_answer_as_the_joint_fit_moves_into_fit_joint() -> None:
    outcomes = [Outcome("h", 2, 20.0, 200, player="random"), Outcome("p", 2, 60.0, 200, player="h"),
                Outcome("p", 2, 5.0, 100, player="random")]
    fitted = fit_ratings(outcomes, prior_games=1.0)
    fit = fit_joint(outcomes, prior_games=1.0)
    assert list(fitted) == ["random", "h", "p"] and fitted["random"] == (0.0, 0.0)
    for name in ("h", "p"):
        assert fitted[name] == fit.rating(name)
    assert fit.rating("h", 1000.0)[0] == pytest.approx(fitted["h"][0] + 1000.0)


def _anchored(folder: Path, anchor: str, rating: object) -> Path:
    tiny_protocol(folder, deals=1)
    text = (folder / "protocol.yaml").read_text()
    anchored = text.replace("tracks:", f"anchor: {anchor}\nanchor_rating: {rating}\ntracks:")
    (folder / "protocol.yaml").write_text(anchored)
    return folder


def test_a_protocol_whose_anchor_is_not_a_rung_of_a_track_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="the ladder must have the rung 'planner', the anchor"):
        load_protocol(_anchored(tmp_path / "p", "planner", 1000))


def test_an_anchor_rating_that_is_not_a_finite_number_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="anchor_rating must be a finite number"):
        load_protocol(_anchored(tmp_path / "p", "heuristic", ".nan"))
    with pytest.raises(BenchmarkError, match="anchor must be the name of a rung"):
        load_protocol(_anchored(tmp_path / "q", "'two words'", 0))


def test_a_protocol_without_anchor_keeps_v1s_scale_random_at_0(tmp_path: Path) -> None:
    protocol = load_protocol(tiny_protocol(tmp_path / "p"))
    assert (protocol.anchor, protocol.anchor_rating) == ("random", 0.0)


def test_calibrate_anchors_on_the_protocols_rung_and_prints_each_neighbouring_pairs_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _anchored(tmp_path / "p", "heuristic", 1000)
    assert main(["--protocol", str(folder), "--track", "dice-2p", "--deals", "1", "--search-deals", "1",
                 "--workers", "1", "--out", str(tmp_path / "games"), "--quiet"]) == 0
    out = capsys.readouterr().out
    entry = json.loads((folder / "calibration.json").read_text())["tracks"]["dice-2p"]
    assert entry["ratings"]["heuristic"] == {"rating": 1000.0, "se": 0.0}
    pair = entry["neighbours"][0]
    assert {pair["low"], pair["high"]} == {"random", "heuristic"}
    assert f"dice-2p {pair['high']} - {pair['low']}: {pair['difference']:.1f}, standard error {pair['se']:.1f}" in out
    assert entry["command"].startswith(f"python -m keltis_env.benchmark.calibrate --protocol {folder} --track dice-2p")


def test_the_leaderboard_shows_a_later_protocols_scorecards_in_a_section_of_its_own(tmp_path: Path) -> None:
    from keltis_env.benchmark import score
    from keltis_env.benchmark.leaderboard import render

    first = tiny_protocol(tmp_path / "v1", deals=1)
    later = _anchored(tmp_path / "v2", "heuristic", 1000)
    results = tmp_path / "results"
    (results / "dice-2p").mkdir(parents=True)
    without = render(first, results)
    assert "# Protocol test" not in without  # no later section without its folder
    card = score("random", "dice-2p", protocol=later, workers=1, progress=False, command="keltis ladder random")
    card.write_json(results / "v2" / "dice-2p" / "random.json")
    text = render(first, results)  # a v1 table never reads the v2 folder's scorecards
    assert text.startswith(without.split("## Learning-budget track")[0])
    section = text.split("# Protocol test")[1]
    assert "anchored on heuristic = 1000" in section and "| `random` |" in section
    assert "| `random` |" not in text.split("# Protocol test")[0]


def test_a_v2_scorecard_names_heuristic_1000_as_its_scale_and_a_v1_one_random_0() -> None:
    from keltis_env.benchmark import Scorecard

    results = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
    v2 = Scorecard.from_dict(json.loads((results / "v2" / "keltis-2p" / "random.json").read_text()))
    v1 = Scorecard.from_dict(json.loads((results / "keltis-2p" / "random.quick.json").read_text()))
    assert "(95% interval; heuristic = 1000)" in v2.summary() and "(95% interval; random = 0)" in v1.summary()
    assert "(95% interval; heuristic = 1000)" in v2.markdown()
