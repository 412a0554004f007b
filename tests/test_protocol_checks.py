"""A protocol file given with ``--protocol`` is checked as strictly as a state dict: whole
numbers are ints (not floats, bools or strings) within their ranges, games are known and
match the track's name, rung specs are non-empty strings, ratings are finite numbers; each
error is one line naming the file, the track and the field. An edited copy of a frozen
protocol is labelled custom wherever it shows, and no NaN reaches a JSON file."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from benchmark_helpers import ROOT

from keltis_env.benchmark import BenchmarkError, Scorecard, load_protocol
from keltis_env.benchmark.calibrate import write_entry
from keltis_env.benchmark.leaderboard import load_scorecards
from keltis_env.benchmark.protocol import FROZEN_SHA256
from keltis_env.benchmark.rating import Outcome, Rating, fit_rating
from keltis_env.cli import main

V1 = ROOT / "benchmarks" / "v1"


def v1_copy(folder: Path, edit: str = "", old: str = "", ratings: str | None = None) -> Path:
    """A copy of protocol v1 in ``folder`` (its frozen policies linked, not copied), with the
    first ``old`` in the keltis-2p track replaced by ``edit``; ``ratings`` replaces the
    calibration file's text."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (V1 / "protocol.yaml").read_text()
    if old:
        head, _, track = text.partition("  keltis-2p:\n")
        assert old in track, old
        text = head + "  keltis-2p:\n" + track.replace(old, edit, 1)
    (folder / "protocol.yaml").write_text(text)
    (folder / "calibration.json").write_text(ratings if ratings is not None else (V1 / "calibration.json").read_text())
    (folder / "policies").symlink_to(V1 / "policies")
    return folder


def refused(folder: Path, *fragments: str) -> str:
    """The one-line error of loading ``folder``, checked to name each of ``fragments``."""
    with pytest.raises(BenchmarkError) as caught:
        load_protocol(folder)
    message = str(caught.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


@pytest.mark.parametrize("field,old", [("players", "players: 2"), ("seed", "seed: 2101"), ("deals", "deals: 550"),
                                       ("quick_deals", "quick_deals: 100")])
@pytest.mark.parametrize("value", ["2.9", "2101.7", "2.0", "true", "'2'", "null", "[2]", "1e2"])
def test_a_count_or_seed_that_is_not_a_whole_number_is_refused_naming_file_track_and_field(tmp_path, field, old,
                                                                                          value):
    folder = v1_copy(tmp_path / "p", f"{field}: {value}", old)
    refused(folder, str(folder / "protocol.yaml"), "track 'keltis-2p'", f"{field} must be")


@pytest.mark.parametrize("old,new,field", [
    ("players: 2", "players: 1", "players"), ("players: 2", "players: 5", "players"),
    ("seed: 2101", "seed: -1", "seed"), ("seed: 2101", "seed: 99999999999999999999", "seed"),
    ("deals: 550", "deals: 0", "deals"), ("quick_deals: 100", "quick_deals: 0", "quick_deals"),
    ("quick_deals: 100", "quick_deals: 551", "quick_deals"),
])
def test_a_number_out_of_range_is_refused_naming_the_field_and_its_range(tmp_path, old, new, field):
    folder = v1_copy(tmp_path / "p", new, old)
    refused(folder, "track 'keltis-2p'", f"{field} must be", "from")


@pytest.mark.parametrize("game,says", [("dice", "the track's name says 'keltis'"), ("chess", "game must be one of"),
                                       ("1", "game must be one of"), ("null", "game must be one of"),
                                       ("[keltis]", "game must be one of")])
def test_a_track_s_game_must_be_known_and_the_one_its_name_says(tmp_path, game, says):
    folder = v1_copy(tmp_path / "p", f"game: {game}", "game: keltis")
    refused(folder, str(folder / "protocol.yaml"), "track 'keltis-2p'", says)


def test_a_track_s_players_must_be_the_n_of_its_name(tmp_path):
    folder = v1_copy(tmp_path / "p", "players: 3", "players: 2")
    refused(folder, "track 'keltis-2p'", "players is 3 but the track's name says 2")


@pytest.mark.parametrize("spec", ["''", "'   '", "null", "5", "[random]", "{a: 1}", "'random:x'"])
def test_a_rung_spec_must_be_a_non_empty_agent_spec_string(tmp_path, spec):
    folder = v1_copy(tmp_path / "p", f"heuristic: {spec}", "heuristic: heuristic")
    refused(folder, str(folder / "protocol.yaml"), "track 'keltis-2p'", "rungs.heuristic")


@pytest.mark.parametrize("old,new,says", [
    ("heuristic: heuristic", "'../x': heuristic", "the rung name '../x'"),
    ("      random: random\n", "", "the rung 'random'"),
    ("quick_deals: 100", "quick_deal: 100", "lacks quick_deals"),
    ("seed: 2101", "seed: 2101\n    seeds: 3", "unknown key 'seeds'"),
])
def test_rung_names_and_track_keys_are_checked(tmp_path, old, new, says):
    folder = v1_copy(tmp_path / "p", new, old)
    refused(folder, "track 'keltis-2p'", says)


def test_a_file_that_is_not_yaml_is_refused_in_one_line(tmp_path):
    folder = v1_copy(tmp_path / "p", "game: [keltis", "game: keltis")
    refused(folder, f"cannot read the protocol {folder / 'protocol.yaml'}")


@pytest.mark.parametrize("version", ["1", "1.0", "''", "null", "'v1 '", "[v1]"])
def test_the_version_must_be_a_name(tmp_path, version):
    folder = v1_copy(tmp_path / "p")
    path = folder / "protocol.yaml"
    path.write_text(path.read_text().replace("version: v1", f"version: {version}"))
    refused(folder, str(path), "version must be")


@pytest.mark.parametrize("rating", ["NaN", "Infinity", "-Infinity", "\"1290.7\"", "true", "null"])
def test_a_rung_rating_that_is_not_a_finite_number_is_refused(tmp_path, rating):
    text = (V1 / "calibration.json").read_text()
    text, count = re.subn(r'("planner": \{\s*"rating": )[-0-9.]+', rf"\g<1>{rating}", text, count=1)
    assert count == 1
    folder = v1_copy(tmp_path / "p", ratings=text)
    refused(folder, str(folder / "calibration.json"))


def test_the_shipped_protocol_is_v1_not_custom():
    protocol = load_protocol()
    assert protocol.sha256 == FROZEN_SHA256["v1"]
    assert not protocol.custom and protocol.label == "v1"


def test_an_edited_copy_of_v1_is_labelled_custom_in_the_output_and_the_scorecard(tmp_path, capsys):
    folder = v1_copy(tmp_path / "p", "quick_deals: 3", "quick_deals: 100")
    protocol = load_protocol(folder)
    assert protocol.custom and protocol.label == f"v1 (custom, sha256 {protocol.sha256[:8]}…)"
    out = tmp_path / "card.json"
    assert main(["ladder", "random", "--track", "keltis-2p", "--quick", "--rungs", "random", "--workers", "1",
                 "--protocol", str(folder), "--json", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert f"protocol v1 (custom, sha256 {protocol.sha256[:8]}…), QUICK" in printed
    assert "protocol v1," not in printed and "protocol v1)" not in printed
    card = json.loads(out.read_text())
    assert card["custom_protocol"] is True and card["protocol"].startswith("v1 (custom")
    assert Scorecard.read(out).custom_protocol


def test_a_copy_of_v1_that_is_byte_for_byte_the_same_is_v1(tmp_path):
    assert load_protocol(v1_copy(tmp_path / "p")).label == "v1"


# ---------------------------------------------------------------------- no NaN in JSON
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_rating_that_is_not_finite_cannot_be_made_or_read(bad):
    with pytest.raises(ValueError, match="finite"):
        Rating(bad, 0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        Rating.from_dict({"value": 10.0, "ci": [bad, 20.0], "bound": None})
    with pytest.raises(ValueError, match="'heuristic' must be a finite number"):
        fit_rating([Outcome("heuristic", 2, 3.0, 10)], {"heuristic": bad})


def test_a_scorecard_with_nan_is_not_written(tmp_path):
    card = Scorecard.read(next((ROOT / "benchmarks" / "results" / "keltis-2p").glob("*.json")))
    card.rungs[0].win_rate = math.nan
    with pytest.raises(ValueError):
        card.write_json(tmp_path / "card.json")
    assert not (tmp_path / "card.json").exists()


def test_the_leaderboard_refuses_a_result_holding_nan(tmp_path):
    source = next((ROOT / "benchmarks" / "results" / "keltis-2p").glob("*.json"))
    (tmp_path / "keltis-2p").mkdir()
    text = re.sub(r'"win_rate": [-0-9.e]+', '"win_rate": NaN', source.read_text(), count=1)
    (tmp_path / "keltis-2p" / "card.json").write_text(text)
    with pytest.raises(BenchmarkError, match="NaN is not a JSON number"):
        load_scorecards(tmp_path)


def test_calibration_refuses_to_write_a_rating_that_is_not_finite(tmp_path):
    ratings = tmp_path / "calibration.json"
    ratings.write_text((V1 / "calibration.json").read_text())
    before = ratings.read_bytes()
    with pytest.raises(BenchmarkError, match="not all finite"):
        write_entry(ratings, "keltis-2p", {"ratings": {"random": {"rating": 0.0, "se": math.nan}}})
    assert ratings.read_bytes() == before
    ratings.write_text(before.decode().replace('"rating": 0.0', '"rating": NaN', 1))
    with pytest.raises(BenchmarkError, match="NaN is not a JSON number"):
        write_entry(ratings, "keltis-2p", {"ratings": {"random": {"rating": 0.0, "se": 0.0}}})
