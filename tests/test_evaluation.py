"""Evaluation: duplicate deals with seat rotation, win counting, intervals, outputs, CLI."""

from __future__ import annotations

import csv
import json
import math
import re

import numpy as np
import pytest

from keltis_env.cli import main as cli_main
from keltis_env.evaluation import (
    EvaluationError,
    GameResult,
    aggregate,
    derive_seed,
    evaluate,
    mean_interval,
    wilson_interval,
)
from keltis_env.games.keltis import GameRecord


# ---------------------------------------------------------------------- statistics
def test_wilson_interval_hand_computed() -> None:
    # 8 of 10, z = 1.96: centre (0.8 + 1.96^2/20) / (1 + 1.96^2/10) = 0.716738,
    # half-width 1.96 / 1.38416 * sqrt(0.016 + 0.009604) = 0.226581
    lo, hi = wilson_interval(8, 10, z=1.96)
    assert lo == pytest.approx(0.490157, abs=1e-6)
    assert hi == pytest.approx(0.943319, abs=1e-6)
    # 0 of 10: [0, z^2/(n + z^2)] = [0, 3.8416/13.8416]
    lo, hi = wilson_interval(0, 10, z=1.96)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(3.8416 / 13.8416, abs=1e-9)
    lo, hi = wilson_interval(10, 10, z=1.96)
    assert lo == pytest.approx(10 / 13.8416, abs=1e-9) and hi == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    # shared wins are fractional successes: 5.5 of 11 is centred on one half
    lo, hi = wilson_interval(5.5, 11)
    assert lo + hi == pytest.approx(1.0)


def test_mean_interval_hand_computed() -> None:
    # mean 3, sample sd sqrt(2.5), standard error sqrt(0.5); 1.96 * 0.707107 = 1.385929
    lo, hi = mean_interval([1, 2, 3, 4, 5], z=1.96)
    assert lo == pytest.approx(3 - 1.385929, abs=1e-6)
    assert hi == pytest.approx(3 + 1.385929, abs=1e-6)
    assert mean_interval([10, 10, 10]) == (10.0, 10.0)
    assert mean_interval([7]) is None


def _game(index: int, deal: int, rotation: int, seats: tuple[int, ...], scores: tuple[int, ...]) -> GameResult:
    from keltis_env.core.rewards import win_shares

    n = len(seats)
    return GameResult(index, deal, rotation, 1, seats, scores, tuple(win_shares(scores)), 60, "deck", False,
                      (10,) * n, (0.01,) * n)


def test_ties_share_the_win() -> None:
    """A k-way tie for the highest score gives each tied agent 1/k win (rewards.win_shares)."""
    games = [
        _game(0, 0, 0, (0, 1), (30, 30)),  # tie: 1/2 each
        _game(1, 0, 1, (1, 0), (20, 25)),  # agent 0 (seat 1) wins
    ]
    result = aggregate(["a", "b"], games)
    a, b = result.agents
    assert a.wins == pytest.approx(1.5) and b.wins == pytest.approx(0.5)
    assert a.win_rate == pytest.approx(0.75) and a.games == 2
    assert a.mean_score == pytest.approx(27.5) and b.mean_score == pytest.approx(25.0)
    three = aggregate(["x", "y", "z"], [_game(0, 0, 0, (0, 1, 2), (9, 9, 9)), _game(1, 0, 1, (2, 0, 1), (5, 8, 8))])
    x, y, z = three.agents
    # game 0: a 3-way tie, 1/3 each; game 1: x (seat 1) and y (seat 2) tie for first
    assert x.wins == pytest.approx(1 / 3 + 1 / 2)
    assert y.wins == pytest.approx(1 / 3 + 1 / 2)
    assert z.wins == pytest.approx(1 / 3)
    assert sum(a.wins for a in three.agents) == pytest.approx(2.0)
    assert three.ratings is not None and {r["label"] for r in three.ratings} == {"x", "y", "z"}


def test_duplicate_specs_get_distinct_labels() -> None:
    result = aggregate(["heuristic", "random", "random"], [_game(0, 0, 0, (0, 1, 2), (10, 5, 1))])
    assert [a.label for a in result.agents] == ["heuristic", "random #1", "random #2"]
    assert result.ratings is None  # fewer than three distinct agents


# ---------------------------------------------------------------------- playing
@pytest.mark.parametrize("specs", [["heuristic", "random"], ["heuristic", "random", "heuristic:paths=3"]])
def test_seat_rotation_over_duplicate_deals(specs: list[str]) -> None:
    n = len(specs)
    result = evaluate(specs, games=2 * n, seed=7, workers=1, progress=False)
    assert result.games == 2 * n and result.deals == 2
    for agent in result.agents:
        assert agent.games == 2 * n
        assert agent.seat_games == [2] * n  # every agent sits every seat once per deal
    for deal in range(2):
        games = [r for r in result.results if r.deal == deal]
        assert len(games) == n
        assert len({r.seed for r in games}) == 1  # one deal, one game seed
        assert sorted(r.rotation for r in games) == list(range(n))
        for r in games:
            assert sorted(r.seats) == list(range(n))
            assert all(r.seats[(i + r.rotation) % n] == i for i in range(n))
    assert result.results[0].seed != result.results[n].seed
    assert result.results[0].seed == derive_seed(7, "deal", 0)


def test_games_round_up_to_whole_deals() -> None:
    result = evaluate(["random", "random", "random"], games=4, seed=1, workers=1, progress=False)
    assert result.games == 6 and result.deals == 2


def test_reproducible_from_seed_whatever_the_workers() -> None:
    specs = ["heuristic", "ismcts:iterations=3,top_k=2"]
    one = evaluate(specs, games=4, seed=3, workers=1, progress=False, max_turns=40)
    again = evaluate(specs, games=4, seed=3, workers=1, progress=False, max_turns=40)
    two = evaluate(specs, games=4, seed=3, workers=2, progress=False, max_turns=40)

    def outcome(r):  # everything but the measured times
        return [(g.index, g.seed, g.seats, g.scores, g.shares, g.turns, g.end, g.decisions) for g in r.results]

    assert outcome(one) == outcome(again) == outcome(two)
    other = evaluate(specs, games=4, seed=4, workers=1, progress=False, max_turns=40)
    assert outcome(other) != outcome(one)


def test_truncation_and_game_length() -> None:
    result = evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, max_turns=5)
    assert result.truncation_rate == 1.0 and result.mean_turns == 5.0
    assert result.end_reasons() == {"truncated": 2}
    finished = result.finished(0)
    assert finished["games"] == 0 and finished["truncated_games"] == 2
    assert finished["truncated_wins"] == result.agents[0].wins
    assert "the 0 games that ended by the rules, the 2 truncated ones apart" in result.summary()


def test_finished_games_counted_apart_from_truncated() -> None:
    """Win rates over the games that ended by the rules leave the truncated games out,
    and the two parts add up to the agent's total."""
    result = evaluate(["heuristic", "random"], games=8, seed=5, workers=1, progress=False, max_turns=100)
    cut = sum(g.truncated for g in result.results)
    assert 0 < cut < result.games  # the limit cuts some of these games, not all
    for agent in result.agents:
        f = result.finished(agent.index)
        assert f["games"] == result.games - cut and f["truncated_games"] == cut
        assert f["wins"] + f["truncated_wins"] == pytest.approx(agent.wins)
        wins = sum(g.shares[g.seat_of(agent.index)] for g in result.results if not g.truncated)
        assert f["win_rate"] == pytest.approx(wins / f["games"])
    assert [f["games"] for f in result.to_dict()["finished"]] == [result.games - cut] * 2


def test_json_csv_and_records(tmp_path) -> None:
    result = evaluate(
        ["heuristic", "random"], games=2, seed=2, workers=1, progress=False, records_dir=tmp_path / "rec"
    )
    result.write_json(tmp_path / "out.json")
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["games"] == 2 and data["players"] == 2 and data["seed"] == 2
    for agent in data["agents"]:
        assert 0.0 <= agent["win_rate"] <= 1.0
        lo, hi = agent["win_rate_ci"]
        assert lo <= agent["win_rate"] <= hi
        assert isinstance(agent["mean_score"], float)
    assert {"mean_turns", "truncation_rate", "ratings"} <= set(data)
    result.write_csv(tmp_path / "games.csv")
    rows = list(csv.DictReader((tmp_path / "games.csv").open()))
    assert len(rows) == 2
    assert rows[0]["agent0"] == "heuristic" and rows[0]["agent1"] == "random"
    assert {rows[0]["agent0_seat"], rows[1]["agent0_seat"]} == {"0", "1"}
    for row, game in zip(rows, result.results, strict=True):
        assert int(row["agent0_score"]) == game.scores[game.seat_of(0)]
        assert math.isclose(float(row["agent0_win"]) + float(row["agent1_win"]), 1.0)
    records = sorted((tmp_path / "rec").glob("*.json"))
    assert len(records) == 2
    for path, game in zip(records, result.results, strict=True):
        record = GameRecord.load(path)
        assert record.replay().scores() == list(game.scores)
        assert record.players == [("heuristic", "random")[a] for a in game.seats]


def test_each_game_is_the_match_loops_game_with_the_derived_seeds() -> None:
    from keltis_env.bots import RandomBot
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    game = get_game("keltis")
    result = evaluate(["random", "random"], games=4, seed=5, workers=1, progress=False)
    for r in result.results:
        bots = [RandomBot(derive_seed(5, "bot", r.deal, r.rotation, agent)) for agent in r.seats]
        played = Match(game, game.new_state(game.make_config(num_players=2), r.seed), bots).run()
        assert (played.scores, played.turns, played.decisions, played.end) == (r.scores, r.turns, r.decisions, r.end)


def test_an_illegal_action_names_the_agent(monkeypatch) -> None:
    from keltis_env.bots import Bot
    from keltis_env.evaluation import play

    class Cheater(Bot):
        def act(self, view):
            return next(a for a in range(187) if a not in view.legal_actions)

    real_bot = play._bot
    monkeypatch.setattr(play, "_bot", lambda game, spec, agent, *rest: Cheater(0) if agent == 1
                        else real_bot(game, spec, agent, *rest))
    with pytest.raises(EvaluationError, match=r"agent 1 \(random\) at seat \d in game \d+ chose an illegal action: "
                                              r".*illegal action"):
        evaluate(["heuristic", "random"], games=2, seed=0, workers=1, progress=False)


def test_api_errors() -> None:
    with pytest.raises(EvaluationError, match="2 to 4 agents"):
        evaluate(["heuristic"], games=2, seed=0, progress=False)
    with pytest.raises(EvaluationError, match="2 to 4 agents"):
        evaluate(["random"] * 5, games=2, seed=0, progress=False)
    with pytest.raises(EvaluationError, match="nosuchbot"):
        evaluate(["nosuchbot", "random"], games=2, seed=0, progress=False)
    with pytest.raises(EvaluationError, match="bad agent spec"):
        evaluate(["ismcts:iterations=x=1", "random"], games=2, seed=0, progress=False)
    with pytest.raises(EvaluationError, match="games"):
        evaluate(["random", "random"], games=0, seed=0, progress=False)
    with pytest.raises(EvaluationError, match="unknown game"):
        evaluate(["random", "random"], games=2, seed=0, game="chess", progress=False)


# ---------------------------------------------------------------------- command line
def test_cli_evaluate(tmp_path, capsys) -> None:
    out = tmp_path / "r.json"
    rc = cli_main(["evaluate", "heuristic", "random", "random", "--games", "3", "--seed", "1", "--workers", "1",
                   "--quiet", "--json", str(out), "--csv", str(tmp_path / "g.csv")])
    assert rc == 0
    text = capsys.readouterr().out
    assert "win rate" in text and "heuristic" in text and "openskill" not in text
    assert json.loads(out.read_text())["agents"][0]["spec"] == "heuristic"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["heuristic"], "2 to 4 agents"),
        (["random"] * 5, "2 to 4 agents"),
        (["heuristic", "wizard"], "unknown bot 'wizard'"),
        (["heuristic", "random", "--games", "0"], "games must be a positive integer"),
    ],
)
def test_cli_errors(argv: list[str], message: str, capsys) -> None:
    rc = cli_main(["evaluate", *argv, "--quiet", "--workers", "1"])
    assert rc == 2
    assert message in capsys.readouterr().err


def test_other_games_through_their_spec() -> None:
    """The evaluation builds states through the game registry, so it runs every game."""
    from keltis_env.core.game import game_names

    assert "dice" in game_names()
    result = evaluate(["random", "random"], games=2, seed=0, game="dice", workers=1, progress=False)
    assert result.game == "dice" and result.games == 2
    assert all(a.seat_games == [1, 1] for a in result.agents)


def test_game_options_reach_every_game_and_the_summary(tmp_path) -> None:
    """``options`` (a training run's ``env.options``) are the games' options: every record
    was played with them, and the summary says so."""
    result = evaluate(["heuristic", "random"], games=4, seed=5, workers=2, progress=False,
                      records_dir=tmp_path / "rec", options={"tile_layout": "random"}, max_turns=300)
    records = [GameRecord.load(p) for p in sorted((tmp_path / "rec").iterdir())]
    assert len(records) == 4
    assert {(r.config.tile_layout, r.config.max_turns) for r in records} == {("random", 300)}
    assert result.options == {"tile_layout": "random", "max_turns": 300}
    assert result.to_dict()["options"] == {"tile_layout": "random", "max_turns": 300}
    assert "game options: tile_layout=random, max_turns=300" in result.summary()
    default = evaluate(["heuristic", "random"], games=4, seed=5, workers=1, progress=False, max_turns=300)
    assert [g.scores for g in default.results] != [g.scores for g in result.results]
    assert default.to_dict()["options"] == {"max_turns": 300}


@pytest.mark.parametrize(("options", "message"), [
    ({"tile_layout": "zigzag"}, r"tile_layout must be 'default', 'random' .* \(options of keltis: tile_layout, "
                                r"max_turns\)"),
    ({"colour": 1}, r"unexpected keyword argument 'colour' \(options of keltis: tile_layout, max_turns\)"),
    ({"num_players": 3}, r"options must not hold num_players"),
    ({"max_turns": 10}, r"max_turns 20 and options max_turns 10 disagree"),
])
def test_bad_game_options_are_refused_before_any_game(tmp_path, options, message) -> None:
    with pytest.raises(EvaluationError, match=message):
        evaluate(["heuristic", "random"], games=2, seed=0, workers=1, progress=False, max_turns=20,
                 options=options, records_dir=tmp_path / "rec")
    assert not (tmp_path / "rec").exists() or not any((tmp_path / "rec").iterdir())


def test_cli_game_options(tmp_path, capsys) -> None:
    out = tmp_path / "o.json"
    assert cli_main(["evaluate", "heuristic", "random", "--games", "2", "--workers", "1", "--quiet",
                     "--option", "tile_layout=random", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["options"] == {"tile_layout": "random"}
    layout = "[[1,2,3,4],[1,2,3,4],[1,2,3,4],[1,2,3,4],[1,2,3,4]]"
    assert cli_main(["evaluate", "heuristic", "random", "--games", "2", "--workers", "1", "--quiet",
                     "--option", f"tile_layout={layout}"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli_main(["evaluate", "heuristic", "random", "--option", "tile_layout"])
    assert "expected KEY=VALUE" in capsys.readouterr().err
    assert cli_main(["evaluate", "heuristic", "random", "--games", "2", "--quiet", "--option", "colour=red"]) == 2
    assert "options of keltis: tile_layout, max_turns" in capsys.readouterr().err


# ---------------------------------------------------------------------- integer arguments
def test_numpy_integers_are_accepted_where_an_int_is(tmp_path) -> None:
    """Counts and seeds from numpy (a config array, a sweep) play exactly the games of the
    same plain ints, and the result holds plain ints (its JSON is written)."""
    import dataclasses

    plain = evaluate(["heuristic", "random"], games=4, seed=3, workers=1, progress=False, max_turns=60)
    numpy = evaluate(["heuristic", "random"], games=np.int64(4), seed=np.int64(3), workers=np.int64(1),
                     progress=False, max_turns=np.int32(60))
    def untimed(result):  # everything but the measured decision times
        summary = result.to_dict()
        for agent in summary["agents"]:
            del agent["ms_per_decision"]
        return summary, [dataclasses.replace(r, think_seconds=()) for r in result.results]

    assert untimed(numpy) == untimed(plain)
    assert type(numpy.seed) is int and numpy.options == {"max_turns": 60} and type(numpy.options["max_turns"]) is int
    numpy.write_json(tmp_path / "r.json")
    assert json.loads((tmp_path / "r.json").read_text())["seed"] == 3
    again = aggregate(["heuristic", "random"], plain.results, seed=np.uint8(3), deals=np.int64(2),
                      planned_games=np.int16(4))
    assert untimed(again) == untimed(aggregate(["heuristic", "random"], plain.results, seed=3, deals=2,
                                               planned_games=4))
    assert (type(again.seed), type(again.deals), type(again.planned_games)) == (int, int, int)


@pytest.mark.parametrize(("argument", "value", "message"), [
    ("games", True, "games must be a positive integer, got True"),
    ("games", np.True_, "games must be a positive integer, got np.True_"),
    ("games", 4.0, "games must be a positive integer, got 4.0"),
    ("games", np.float64(4.0), r"games must be a positive integer, got np.float64\(4.0\)"),
    ("games", np.int64(0), r"games must be a positive integer, got np.int64\(0\)"),
    ("workers", False, "workers must be a positive integer, got False"),
    ("workers", 1.5, "workers must be a positive integer, got 1.5"),
    ("max_turns", np.bool_(True), "max_turns must be a positive integer, got np.True_"),
    ("seed", 3.0, "seed must be an integer, got 3.0"),
    ("seed", "3", "seed must be an integer, got '3'"),
    ("seed", True, "seed must be an integer, got True"),
], ids=repr)
def test_bools_and_non_integral_numbers_are_refused(argument, value, message) -> None:
    arguments = {"games": 2, "seed": 0, "workers": 1, "max_turns": None, argument: value}
    with pytest.raises(EvaluationError, match=f"^{message}$"):
        evaluate(["heuristic", "random"], progress=False, **arguments)
    with pytest.raises(EvaluationError, match=r"^deals must be an integer >= 0, got 2\.0$"):
        aggregate(["heuristic", "random"], [], deals=2.0)


# ---------------------------------------------------------------------- resuming (--out / --resume)
def _outcome(result):  # everything of each game but the measured times
    return [(g.index, g.seed, g.seats, g.scores, g.shares, g.turns, g.end, g.decisions) for g in result.results]


def test_a_resumed_evaluation_plays_only_the_missing_games_and_ends_as_one_never_stopped(tmp_path) -> None:
    specs = ["heuristic", "random"]
    whole = evaluate(specs, games=8, seed=4, workers=1, progress=False, max_turns=200)
    run = tmp_path / "run"
    evaluate(specs, games=8, seed=4, workers=1, progress=False, max_turns=200, out=run)
    store = run / "games.jsonl"
    lines = store.read_text().splitlines()
    assert len(lines) == 8
    # a run stopped after 3 games, the 4th cut short in the middle of its line
    store.write_text("".join(f"{line}\n" for line in lines[:3]) + lines[3][:40])
    kept = {json.loads(line)["index"]: json.loads(line)["think_seconds"] for line in lines[:3]}
    resumed = evaluate(specs, games=8, seed=4, workers=2, progress=False, max_turns=200, out=run, resume=True)
    assert _outcome(resumed) == _outcome(whole)
    assert {g.index: list(g.think_seconds) for g in resumed.results if g.index in kept} == kept, \
        "the games kept were played again"
    assert len(store.read_text().splitlines()) == 8


@pytest.mark.parametrize(("change", "message"), [
    ({"games": 10}, "that run differs: deals 4 (now 5)"),
    ({"seed": 5}, "that run differs: seed 4 (now 5)"),
    ({"agent_specs": ["heuristic", "heuristic"]}, "that run differs: agents"),
    ({"max_turns": 100}, "that run differs: options {'max_turns': 200} (now {'max_turns': 100})"),
])
def test_resume_refuses_another_evaluation(tmp_path, change, message) -> None:
    args = {"agent_specs": ["heuristic", "random"], "games": 8, "seed": 4, "workers": 1, "progress": False,
            "max_turns": 200}
    evaluate(**args, out=tmp_path / "run")
    before = (tmp_path / "run" / "games.jsonl").read_text()
    with pytest.raises(EvaluationError, match=re.escape(message)):
        evaluate(**{**args, **change}, out=tmp_path / "run", resume=True)
    assert (tmp_path / "run" / "games.jsonl").read_text() == before


def test_run_folder_errors(tmp_path) -> None:
    args = {"agent_specs": ["random", "random"], "games": 2, "seed": 0, "workers": 1, "progress": False}
    with pytest.raises(EvaluationError, match=r"no run\.json there; give the --out folder of an earlier run"):
        evaluate(**args, out=tmp_path, resume=True)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(EvaluationError, match="is not empty; give a new or empty folder"):
        evaluate(**args, out=tmp_path / "full")
    with pytest.raises(EvaluationError, match="resume needs the folder"):
        evaluate(**args, resume=True)
    evaluate(**args, out=tmp_path / "run")
    with pytest.raises(EvaluationError, match="records cannot be kept for a resumed evaluation"):
        evaluate(**args, out=tmp_path / "run", resume=True, records_dir=tmp_path / "rec")


def test_cli_out_then_resume(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    common = ["evaluate", "heuristic", "random", "--games", "4", "--seed", "2", "--workers", "1", "--quiet"]
    assert cli_main([*common, "--out", str(run), "--json", str(tmp_path / "a.json")]) == 0
    assert cli_main([*common, "--resume", str(run), "--json", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a["agents"][0]["wins"] == b["agents"][0]["wins"] and a["games"] == b["games"] == 4
    capsys.readouterr()
    assert cli_main([*common, "--resume", str(run), "--json", str(run / "c.json")]) == 2
    assert "lies in the run folder" in capsys.readouterr().err
