"""Agents outside the package (``py:`` specs, :mod:`keltis_env.bots.external`): found by
file path or module name, as a callable or a class, seeing exactly the AEC observation of
their seat, playing in ``keltis evaluate`` (spawned workers included) and ``keltis play``,
and refused with a message naming what is wrong."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import external_agents
import numpy as np
import pytest

from keltis_env import make_env
from keltis_env.bots import bot_names, make_bot, parse_spec
from keltis_env.bots.external import ExternalAgent, ExternalAgentError, source_path
from keltis_env.cli import build_parser
from keltis_env.cli import main as cli_main
from keltis_env.cli import play as play_cli
from keltis_env.core.errors import ActionError
from keltis_env.core.game import get_game
from keltis_env.core.match import Match
from keltis_env.evaluation import EvaluationError, evaluate

ROOT = Path(__file__).resolve().parents[1]
AGENTS = Path(external_agents.__file__).resolve()  # this folder's helper, by absolute path
EXAMPLE = ROOT / "examples" / "my_agent.py"


def py(name: str, options: str = "") -> str:
    """The spec of ``name`` in the helper file, by its path."""
    return f"py:{AGENTS}:{name}{options}"


# ---------------------------------------------------------------------- the spec
def test_a_py_spec_keeps_its_target_whole_and_parses_its_options() -> None:
    assert parse_spec("py:examples/my_agent.py:first_legal") == ("py:examples/my_agent.py:first_legal", {})
    assert parse_spec("py:agents.greedy:Greedy,depth=2,path=w.pt,style=bold") == (
        "py:agents.greedy:Greedy", {"depth": 2, "path": "w.pt", "style": "bold"})
    with pytest.raises(ValueError, match="not a finite number"):
        parse_spec("py:a.py:A,x=nan")
    assert not any(name.startswith("py") for name in bot_names("keltis"))  # not a bot of a game


@pytest.mark.parametrize("spec", ["py:", "py:examples/my_agent.py", "py:examples/my_agent.py:", "py::first_legal"])
def test_a_spec_without_module_and_name_says_how_to_write_one(spec: str) -> None:
    with pytest.raises(ExternalAgentError, match=r"names no agent; write py:MODULE:NAME or py:PATH\.py:NAME"):
        make_bot(spec)


# ---------------------------------------------------------------------- what the agent sees
@pytest.mark.parametrize(("game", "players"), [("keltis", 2), ("keltis", 3), ("dice", 2), ("dice", 4)])
def test_the_agent_sees_exactly_what_the_aec_env_shows_its_seat(game: str, players: int) -> None:
    """A game played by recording py: agents, then replayed in the AEC environment: at every
    decision the arrays the agent got equal ``env.observe(agent)`` of the acting seat."""
    descriptor = get_game(game)
    seed = 5
    bots = [make_bot("py:external_agents:recorder", seed=i, game=game, num_players=players) for i in range(players)]
    config = descriptor.make_config(num_players=players)
    external_agents.SEEN.clear()
    match = Match(descriptor, descriptor.new_state(config, seed), bots, record=True)
    match.run()
    seen = list(external_agents.SEEN)
    assert len(seen) == len(match.actions) > 20
    env = make_env(game, num_players=players)
    env.reset(seed=seed)
    for (observation, mask), action in zip(seen, match.actions, strict=True):
        shown = env.observe(env.agent_selection)
        assert observation.dtype == shown["observation"].dtype == np.float32
        np.testing.assert_array_equal(observation, shown["observation"])
        np.testing.assert_array_equal(mask, shown["action_mask"])
        assert mask.dtype == np.int8
        env.step(action)
    assert all(env.terminations.values()) or all(env.truncations.values())


def test_an_immutable_view_is_encoded_like_the_live_one() -> None:
    """``keltis play`` hands bots the seat's immutable view; the agent's arrays are the same."""
    game = get_game("keltis")
    state = game.new_state(game.make_config(num_players=2), 3)
    agent = make_bot(py("recorder"), game="keltis", num_players=2)
    assert isinstance(agent, ExternalAgent)
    for _ in range(30):
        seat = state.current_player
        live_obs, live_mask = agent.observe(game.live_view(state, seat))
        obs, mask = agent.observe(state.view(seat))
        np.testing.assert_array_equal(obs, live_obs)
        np.testing.assert_array_equal(mask, live_mask)
        state.apply(agent.act(state.view(seat)))


# ---------------------------------------------------------------------- forms and runners
def test_the_example_agents_play_by_file_path_and_numpy_answers_count() -> None:
    result = evaluate([f"py:{EXAMPLE}:first_legal", f"py:{EXAMPLE}:EpsilonFirst,epsilon=0.5",
                       py("numpy_answer")], games=3, seed=1, workers=1, progress=False, max_turns=40)
    assert [a.games for a in result.agents] == [3, 3, 3]
    assert all(a.ms_per_decision > 0 for a in result.agents)


def test_a_class_gets_its_options_the_seed_and_the_player_count() -> None:
    agent = make_bot(f"py:{EXAMPLE}:EpsilonFirst,epsilon=0.25", seed=4, num_players=2)
    instance = agent.agent  # type: ignore[attr-defined]
    assert instance.epsilon == 0.25
    assert instance.rng.random() == np.random.default_rng(4).random()
    assert make_bot(py("Seeded"), num_players=3).agent.num_players == 3  # type: ignore[attr-defined]
    function = make_bot(f"py:{EXAMPLE}:first_legal", seed=4)
    assert function.agent.__name__ == "first_legal"  # type: ignore[attr-defined]


def test_reset_is_called_with_each_new_seed_or_without_one() -> None:
    forgetful = make_bot(py("Forgetful"))
    instance = forgetful.agent  # type: ignore[attr-defined]
    game = get_game("keltis")
    state = game.new_state(game.make_config(num_players=2), 0)
    forgetful.act(state.view(state.current_player))
    assert (instance.decisions, instance.resets) == (1, 0)
    forgetful.seed(7)
    assert (instance.decisions, instance.resets) == (0, 1)
    seeded = make_bot(py("Seeded"), seed=1)
    seeded.seed(9)
    assert seeded.agent.rng.random() == np.random.default_rng(9).random()  # type: ignore[attr-defined]


def test_spawned_workers_load_a_file_by_its_path(tmp_path: Path) -> None:
    log = tmp_path / "pids.txt"
    specs = [py("Seeded", f",log={log}"), "random"]
    two = evaluate(specs, games=4, seed=2, workers=2, progress=False, max_turns=60)
    pids = {int(line) for line in log.read_text().split()}
    assert pids - {os.getpid()}, "the workers made the agent themselves (the main process makes it once to check it)"
    one = evaluate(specs, games=4, seed=2, workers=1, progress=False, max_turns=60)

    def outcome(result):  # everything but the measured times
        return sorted((g.index, g.seats, g.scores, g.turns, g.decisions) for g in result.results)

    assert outcome(one) == outcome(two)
    assert [(a.wins, a.mean_score) for a in one.agents] == [(a.wins, a.mean_score) for a in two.agents]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="BLAS runs one thread anyway on one core")
def test_the_agents_play_with_one_blas_thread_in_workers_and_in_process(tmp_path: Path) -> None:
    """A network's layers multiplied by one observation on several BLAS threads per worker
    slowed evaluations several times over; every process that plays runs BLAS on one
    thread, and an evaluation in this process gives the caller its own limits back."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):
        before = external_agents._blas_threads()
        assert before and max(before) == 2, "the test needs a BLAS that can run two threads"
        for workers in (2, 1):
            log = tmp_path / f"threads_{workers}.txt"
            evaluate([py("BlasThreads", f",log={log}"), "random"], games=4, seed=3, workers=workers,
                     progress=False, max_turns=20)
            lines = [line.split() for line in log.read_text().splitlines()]
            pids = {int(line[0]) for line in lines}
            assert (os.getpid() in pids) == (workers == 1)
            assert all(int(n) == 1 for line in lines for n in line[1:]), lines
            assert all(len(line) > 1 for line in lines), "numpy's BLAS is loaded where the agent plays"
        assert external_agents._blas_threads() == before


def test_spawned_workers_import_a_module_from_the_current_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "tmp_user_agent.py").write_text(AGENTS.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the current folder joins the path: undo it after the test
    rc = cli_main(["evaluate", "py:tmp_user_agent:Seeded,log=pids.txt", "py:tmp_user_agent:recorder", "--games", "2",
                   "--seed", "3", "--workers", "2", "--quiet", "--json", "out.json"])
    assert rc == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "out.json").read_text())
    assert [a["spec"] for a in summary["agents"]] == ["py:tmp_user_agent:Seeded,log=pids.txt",
                                                     "py:tmp_user_agent:recorder"]
    assert sum(a["games"] for a in summary["agents"]) == 4
    assert (tmp_path / "pids.txt").read_text().split(), "the workers made the agent"
    assert "py:tmp_user_agent:Seeded,log=pids.txt" in capsys.readouterr().out


def test_the_documented_command_runs_from_the_project_folder(monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    rc = cli_main(["evaluate", "py:examples/my_agent.py:first_legal", "heuristic", "--games", "2", "--workers", "1",
                   "--quiet", "--max-turns", "30"])
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"^py:examples/my_agent\.py:first_legal +2 ", out, re.MULTILINE), out


def test_a_person_plays_against_a_py_agent() -> None:
    args = build_parser().parse_args(["play", "--bots", f"py:{EXAMPLE}:EpsilonFirst,epsilon=0.3", "--seed", "4",
                                      "--max-turns", "6"])
    out = io.StringIO()
    code = play_cli.run(args, stdin=io.StringIO("1\n" * 100 + "n\n"), stdout=out)
    text = out.getvalue()
    assert code == 0, text
    assert f"(py:{EXAMPLE}:EpsilonFirst,epsilon=0.3)" in text
    assert "The game was truncated after 6 turns." in text


def test_source_path_names_the_file_of_the_code() -> None:
    assert source_path(f"py:{EXAMPLE}:first_legal,x=1") == EXAMPLE
    assert source_path("py:external_agents:recorder") == AGENTS
    assert source_path("heuristic") is None
    with pytest.raises(ExternalAgentError, match="no module named 'no_such_agents'"):
        source_path("py:no_such_agents:f")


# ---------------------------------------------------------------------- errors made when the agent is made
@pytest.mark.parametrize(("spec", "message"), [
    ("py:nowhere/agent.py:f", r"'py:nowhere/agent\.py:f': no file nowhere/agent\.py "
                              r"\(looked for .*nowhere/agent\.py\)"),
    ("py:no_such_agents:Agent", r"no module named 'no_such_agents' \(searched sys\.path and the current folder .*\); "
                                r"for a file write its path"),
    ("py:no_such_pkg.sub:Agent", r"no module named 'no_such_pkg\.sub'"),
    (py("missing"), r"has no 'missing'; it defines ActTakesOne, BlasThreads, Forgetful, NoAct, Seeded, Strict, "
                    r"a_bool, a_float, "),
    (py("Strict.nothing"), r"has no 'Strict\.nothing'"),
    (py("one_argument"), r"one_argument\(observation\) has the wrong signature; a callable "
                         r"agent takes \(observation, action_mask\)"),
    (py("ActTakesOne"), r"ActTakesOne\.act\(observation\) has the wrong signature; it must "
                        r"take \(observation, action_mask\)"),
    (py("NoAct"), r"class NoAct has no act\(observation, action_mask\) method"),
    (py("NOT_AN_AGENT"), r"NOT_AN_AGENT = 3 \(int\) is neither a class with act\(observation, action_mask\) nor "
                         r"a callable \(observation, action_mask\) -> action"),
    (py("AN_INSTANCE"), r"AN_INSTANCE = <.*> \(Strict\) is neither .*; it is an instance of Strict: "
                        r"name its class instead"),
    (py("Strict", ",width=3"), r"class Strict has no option 'width'; its options are depth \(the keyword arguments of "
                               r"Strict\(depth=1\)\)"),
    (py("Strict", ",depth=0"), r"Strict\(depth=0\) failed: ValueError: depth must be an integer >= 1, got 0"),
    (py("recorder", ",depth=2"), r"recorder is a function, which takes no options \(got depth\)"),
    (py("Seeded", ",seed=3"), r"'seed' is not an agent option; the seed, the game and the number of players come"),
])
def test_each_mistake_is_named_when_the_agent_is_made(spec: str, message: str) -> None:
    with pytest.raises(ExternalAgentError, match=message) as caught:
        make_bot(spec, seed=0)
    assert f"agent spec {spec!r}" in str(caught.value)


def test_code_that_fails_to_load_is_named_with_its_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken_agent.py"
    broken.write_text("import numpy\nraise RuntimeError('no weights found')\n")
    with pytest.raises(ExternalAgentError, match=r"loading .*broken_agent\.py failed: RuntimeError: no weights found"):
        make_bot(f"py:{broken}:Agent")
    assert not [m for m in sys.modules if m.startswith("keltis_py_agent_broken_agent")]  # a retry loads it again
    (tmp_path / "needs_missing.py").write_text("import no_such_dependency_xyz\n")
    with pytest.raises(ExternalAgentError, match=r"loading .* failed: ModuleNotFoundError: No module named "
                                                 r"'no_such_dependency_xyz'"):
        make_bot(f"py:{tmp_path / 'needs_missing.py'}:f")
    with pytest.raises(ExternalAgentError, match=r"is a folder, not a file"):
        make_bot(f"py:{tmp_path}/:f")


def test_evaluate_and_play_report_a_bad_spec_before_any_game(capsys) -> None:
    with pytest.raises(EvaluationError, match=r"bad agent spec 'py:no_such_agents:A': .*no module named"):
        evaluate(["py:no_such_agents:A", "random"], games=2, seed=0, workers=1, progress=False)
    args = build_parser().parse_args(["play", "--bots", py("missing"), "--seed", "1"])
    out = io.StringIO()
    assert play_cli.run(args, stdin=io.StringIO(""), stdout=out) == 2
    assert "keltis play: error: agent spec" in out.getvalue() and "has no 'missing'" in out.getvalue()


# ---------------------------------------------------------------------- errors made at a decision
@pytest.mark.parametrize(("name", "message"), [
    ("illegal", r"at seat (\d) \(player_\1\) returned action \d+ \([a-z0-9 ]+\), which is not legal now; the "
                r"legal actions are \d+ \(play "),
    ("out_of_range", r"at seat \d \(player_\d\) returned action 192, which is not an action id of keltis \(0\.\.186\); "
                     r"the legal actions are"),
    ("a_float", r"returned \d+\.0 \(a float\), not an action id: an agent returns an integer in 0\.\.186 whose "
                r"action_mask entry is 1"),
    ("a_bool", r"returned True \(a bool\), not an action id"),
    ("text", r"returned 'draw deck' \(a str\), not an action id"),
])
def test_a_wrong_answer_names_the_seat_the_action_and_what_was_legal(name: str, message: str) -> None:
    game = get_game("keltis")
    state = game.new_state(game.make_config(num_players=2), 1)
    bots = [make_bot("random", seed=0, game="keltis"), make_bot(py(name), game="keltis")]
    with pytest.raises(ActionError, match=message) as caught:
        Match(game, state, bots).run()
    assert f"py:{AGENTS}:{name} at seat 1 (player_1)" in str(caught.value)
    assert state.current_player == 1  # the offender is still to move: its answer changed nothing


def test_an_evaluation_names_the_agent_that_broke_the_rules() -> None:
    with pytest.raises(EvaluationError, match=r"agent 1 \(py:.*:illegal\) at seat \d in game \d+ chose an illegal "
                                              r"action: .*:illegal at seat \d \(player_\d\) returned action \d+ .*the "
                                              r"legal actions are"):
        evaluate(["random", py("illegal")], games=2, seed=0, workers=1, progress=False)


def test_ladder_reports_an_agent_that_broke_the_rules_and_keeps_the_games(tmp_path, capsys) -> None:
    run = tmp_path / "run"
    code = cli_main(["ladder", py("illegal"), "--track", "keltis-2p", "--quick", "--rungs", "random",
                     "--workers", "1", "--quiet", "--out", str(run)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert re.search(r"keltis ladder: error: agent 0 \(py:.*:illegal\) at seat \d in game \d+ chose an illegal action: "
                     r".*:illegal at seat \d \(player_\d\) returned action .*\nthe finished games are kept in "
                     rf"{re.escape(str(run))}", err)
