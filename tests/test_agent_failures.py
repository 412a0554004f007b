"""An agent that misbehaves never hangs a run, never ends it silently and never crashes its
checker: a dying, exiting or raising agent ends the run with one line naming it, its seat
and the game (the same with one worker or two), an agent over the per-move time limit
loses that game on time, and SIGTERM always ends the run with exit status 143."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keltis_env.bots import Bot
from keltis_env.cli import main as cli_main
from keltis_env.core.errors import ControllerError, StopRequest, describe_value
from keltis_env.core.game import get_game
from keltis_env.core.match import Match
from keltis_env.evaluation import AgentPlayError, EvaluationError, evaluate

HERE = Path(__file__).resolve().parent
AGENTS = HERE / "misbehaving_agents.py"
KELTIS = [sys.executable, "-m", "keltis_env"]


def py(name: str) -> str:
    return f"py:{AGENTS}:{name}"


def no_workers_left() -> bool:
    return not multiprocessing.active_children()


# ---------------------------------------------------------------------- an agent's failure
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("name", "what"), [
    ("Exits", r"called sys\.exit\(0\)"),
    ("Interrupts", r"raised KeyboardInterrupt \(not a Ctrl-C of the run\)"),
    ("RaisesUnpicklable", r"raised TwoArgumentError: 1/2"),
])
def test_an_agent_that_exits_or_raises_ends_the_run_naming_itself_its_seat_and_game(name, what, workers) -> None:
    with pytest.raises(AgentPlayError, match=rf"^agent 0 \(py:.*:{name}\) at seat \d in game \d+ {what}$") as caught:
        evaluate([py(name), "random"], games=2, seed=0, workers=workers, progress=False)
    assert caught.value.agent == 0 and caught.value.seat in (0, 1)
    assert name in caught.value.trace or "act" in caught.value.trace  # the agent's traceback, as text
    assert no_workers_left()


def test_a_worker_killed_by_its_agent_ends_the_run_promptly_naming_the_agent() -> None:
    start = time.monotonic()
    with pytest.raises(AgentPlayError, match=r"agent 1 \(py:.*:Dies\) at seat \d in game \d+ while deciding: its "
                                             r"worker process ended \(exit status 7\)"):
        evaluate(["random", py("Dies")], games=4, seed=0, workers=2, progress=False)
    assert time.monotonic() - start < 60
    assert no_workers_left()


def test_an_agents_error_message_is_bounded() -> None:
    with pytest.raises(AgentPlayError) as caught:
        evaluate([py("RaisesHuge"), "random"], games=2, seed=0, workers=2, progress=False)
    assert len(str(caught.value)) < 400
    assert "characters)" in str(caught.value)


@pytest.mark.parametrize("name", ["HostileAnswer", "HugeAnswer"])
def test_the_answer_checker_survives_hostile_answers_and_bounds_what_it_prints(name) -> None:
    with pytest.raises(AgentPlayError, match=r"chose an illegal action: .* returned .*not an action id") as caught:
        evaluate([py(name), "random"], games=2, seed=0, workers=1, progress=False)
    assert len(str(caught.value)) < 600


def test_describe_value_survives_a_raising_repr_and_cuts_a_huge_one() -> None:
    class Bad:
        def __repr__(self):
            raise RuntimeError("no")

    assert describe_value(Bad()) == "<Bad whose repr() raised RuntimeError>"
    assert len(describe_value("x" * 10**6)) < 200


def test_both_workers_failing_at_once_never_hangs() -> None:
    # the pool has no task-handler thread to block (keltis_env.evaluation.workers): repeated
    # simultaneous failures end every run promptly
    for _ in range(5):
        start = time.monotonic()
        with pytest.raises(AgentPlayError, match="chose an illegal action"):
            evaluate([py("HostileAnswer"), py("HostileAnswer")], games=4, seed=0, workers=2, progress=False)
        assert time.monotonic() - start < 60
        assert no_workers_left()


def test_the_guard_passes_the_users_stop_request_through() -> None:
    class Stopped(Bot):
        def act(self, view):
            raise StopRequest

    spec = get_game("keltis")
    state = spec.new_state(spec.make_config(num_players=2), 0)
    match = Match(spec, state, [Stopped(0), Stopped(0)], guard=True)
    with pytest.raises(StopRequest):
        match.run()


def test_the_guard_reports_a_controllers_failure_as_plain_text_that_pickles() -> None:
    import pickle

    class Exploding(Bot):
        def act(self, view):
            raise SystemExit(3)

    spec = get_game("keltis")
    match = Match(spec, spec.new_state(spec.make_config(num_players=2), 0), [Exploding(0), Exploding(0)], guard=True)
    first = match.to_move
    with pytest.raises(ControllerError, match=rf"^Exploding\(\) at seat {first} failed: SystemExit: 3$") as caught:
        match.run()
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.seat, copy.kind, copy.detail) == (first, "SystemExit", "3") and "SystemExit" in copy.trace
    assert match.decisions == [0, 0]  # nothing changed


# ---------------------------------------------------------------------- the command line
def test_evaluate_reports_an_agents_failure_in_one_line_with_exit_1(capsys) -> None:
    code = cli_main(["evaluate", py("RaisesUnpicklable"), "random", "--games", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    assert re.search(r"keltis evaluate: error: agent 0 \(py:.*:RaisesUnpicklable\) at seat \d in game \d+ raised "
                     r"TwoArgumentError: 1/2\n", err)
    assert "--traceback shows the agent's traceback" in err


def test_traceback_option_prints_the_agents_traceback(capsys) -> None:
    code = cli_main(["evaluate", py("RaisesUnpicklable"), "random", "--games", "2", "--quiet", "--workers", "1",
                     "--traceback"])
    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback (most recent call last)" in err and "misbehaving_agents.py" in err


def test_sys_exit_at_import_is_reported_not_a_silent_exit(capsys) -> None:
    code = cli_main(["evaluate", f"py:{HERE / 'exits_at_import.py'}:Never", "random", "--games", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "exits_at_import.py failed: it called sys.exit(5)" in err


def test_keyboard_interrupt_at_import_is_the_agents_not_the_users_ctrl_c(capsys) -> None:
    code = cli_main(["evaluate", f"py:{HERE / 'interrupts_at_import.py'}:Never", "random", "--games", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "KeyboardInterrupt raised by the agent's code (not a Ctrl-C)" in err


def test_sys_exit_in_act_with_one_worker_writes_no_json_and_exits_1(tmp_path, capsys) -> None:
    out = tmp_path / "x.json"
    code = cli_main(["evaluate", py("Exits"), "random", "--games", "2", "--quiet", "--workers", "1",
                     "--json", str(out)])
    assert code == 1 and not out.exists()
    assert "called sys.exit(0)" in capsys.readouterr().err


def test_ladder_reports_an_agents_failure_without_a_traceback(capsys) -> None:
    code = cli_main(["ladder", py("Exits"), "--track", "keltis-2p", "--quick", "--rungs", "random", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert re.search(r"keltis ladder: error: agent 0 \(py:.*:Exits\) at seat \d in game \d+ called sys\.exit\(0\)", err)


# ---------------------------------------------------------------------- the per-move time limit
@pytest.mark.parametrize("workers", [1, 2])
def test_an_agent_over_the_time_limit_loses_the_game_on_time(workers) -> None:
    result = evaluate([py("Sleeps"), "random"], games=2, seed=0, workers=workers, progress=False, move_seconds=0.5)
    assert result.games == 2
    for game in result.results:
        sleeper = game.seat_of(0)
        assert game.end == "time" and game.forfeit == sleeper and not game.truncated
        assert game.shares[sleeper] == 0 and game.shares[1 - sleeper] == 1
    assert result.agents[0].time_forfeits == 2 and result.agents[1].time_forfeits == 0
    assert result.agents[1].wins == 2
    assert "lost on time" in result.summary() and result.to_dict()["time_forfeits"] == 2
    assert no_workers_left()


def test_an_agent_that_ignores_the_interruption_is_stopped_and_loses_on_time(tmp_path) -> None:
    records = tmp_path / "records"
    start = time.monotonic()
    result = evaluate([py("IgnoresTheLimit"), "random"], games=2, seed=0, workers=2, progress=False,
                      move_seconds=0.3, records_dir=records)
    assert time.monotonic() - start < 60
    assert [g.end for g in result.results] == ["time", "time"]
    assert all(g.forfeit == g.seat_of(0) for g in result.results)
    assert len(list(records.glob("game_*.json"))) == 2  # rebuilt from the actions the worker logged
    assert no_workers_left()


def test_a_slow_move_mid_game_forfeits_and_the_game_is_rebuilt_exactly() -> None:
    # with one worker the move is interrupted in process; with two its worker is stopped
    # from outside only if it ignores that, so both runs agree on the forfeited games
    one = evaluate([py("SlowOnce"), "random"], games=2, seed=3, workers=1, progress=False, move_seconds=0.5)
    two = evaluate([py("SlowOnce"), "random"], games=2, seed=3, workers=2, progress=False, move_seconds=0.5)
    key = [(g.index, g.scores, g.shares, g.turns, g.end, g.forfeit, g.decisions) for g in one.results]
    assert key == [(g.index, g.scores, g.shares, g.turns, g.end, g.forfeit, g.decisions) for g in two.results]
    assert all(g.end == "time" and g.turns > 0 for g in one.results)


def test_time_forfeits_are_kept_in_the_run_folder_and_resume(tmp_path) -> None:
    out = tmp_path / "run"
    first = evaluate([py("Sleeps"), "random"], games=2, seed=0, workers=1, progress=False, move_seconds=0.3, out=out)
    lines = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    assert [line["forfeit"] for line in lines] == [g.forfeit for g in first.results]
    again = evaluate([py("Sleeps"), "random"], games=2, seed=0, workers=1, progress=False, move_seconds=0.3, out=out,
                     resume=True)
    assert again.to_dict()["agents"] == first.to_dict()["agents"]
    with pytest.raises(EvaluationError, match="move_seconds"):
        evaluate([py("Sleeps"), "random"], games=2, seed=0, workers=1, progress=False, move_seconds=1.0, out=out,
                 resume=True)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "1", True])
def test_a_bad_time_limit_is_refused(bad) -> None:
    with pytest.raises(EvaluationError, match="move_seconds must be a positive number of seconds or None"):
        evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, move_seconds=bad)


def test_the_ladder_plays_under_the_protocols_limit_and_records_it(tmp_path) -> None:
    from keltis_env.benchmark import score
    from keltis_env.benchmark.ladder import MOVE_SECONDS

    card = score("random", "keltis-2p", rungs=["random"], quick=True, workers=1, progress=False)
    assert card.move_seconds == MOVE_SECONDS["v1"] == card.to_dict()["move_seconds"]
    assert card.rungs[0].time_forfeits == 0
    assert "per-move time limit 10 s" in card.summary()


def test_a_learner_opponent_over_the_limit_loses_on_time() -> None:
    from keltis_env.envs.episode import LearnerEpisode, OpponentPool

    class Slow(Bot):
        slow = False  # set once the learner has started

        def act(self, view):
            if Slow.slow:
                time.sleep(5)
            return view.legal_actions[0]

    spec = get_game("keltis")
    config = spec.make_config(num_players=2)
    pool = OpponentPool("keltis", 2)
    pool.add(Slow(0))
    episode = LearnerEpisode(spec, config, pool, spec.make_encoder(2), seat=0, move_seconds=0.2)
    import numpy as np

    episode.start(np.random.default_rng(0))
    Slow.slow = True
    over = False
    while not over:
        over = episode.step(episode.legal_actions()[0])
    reward, info, truncated = episode.result()
    assert over and info["end"] == "time" and info["forfeit"] == 1 and reward == 0.0 and not truncated
    assert episode.legal_actions() == []


# ---------------------------------------------------------------------- bot objects
class PicklableFirst(Bot):
    name = "first-legal"

    def act(self, view):
        return view.legal_actions[0]


def test_evaluate_takes_bot_objects_in_worker_processes() -> None:
    result = evaluate([PicklableFirst(0), "random"], games=4, seed=0, workers=2, progress=False)
    assert result.games == 4 and result.agents[0].spec == "first-legal"


def test_an_unpicklable_bot_object_plays_in_this_process_with_a_warning() -> None:
    import threading

    bot = PicklableFirst(0)
    bot.lock = threading.Lock()  # locks do not pickle
    with pytest.warns(RuntimeWarning, match=r"agent 0 \(first-legal\) cannot be pickled for a worker process"):
        result = evaluate([bot, "random"], games=2, seed=0, workers=2, progress=False)
    assert result.games == 2


def test_bot_objects_cannot_name_a_run_folder(tmp_path) -> None:
    with pytest.raises(EvaluationError, match="every agent must be a spec string"):
        evaluate([PicklableFirst(0), "random"], games=2, seed=0, workers=1, progress=False, out=tmp_path / "run")
    with pytest.raises(EvaluationError, match="an agent must be a spec string or a bot object with act"):
        evaluate([object(), "random"], games=2, seed=0, workers=1, progress=False)


# ---------------------------------------------------------------------- signals
@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_ends_a_run_with_a_hanging_agent_with_exit_143(tmp_path, workers) -> None:
    process = subprocess.Popen([*KELTIS, "evaluate", py("Sleeps"), "random", "--games", "4", "--quiet",
                                "--move-seconds", "0", "--workers", workers],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               start_new_session=True)
    time.sleep(8)  # the workers are started and the agent is asleep in its move
    process.send_signal(signal.SIGTERM)
    try:
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 143, err
    assert "terminated" in err
    deadline = time.monotonic() + 10  # multiprocessing's resource tracker ends when it sees its parent gone
    while True:
        leftover = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
        if not leftover or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert leftover == []


# ---------------------------------------------------------------------- keltis play
def run_play(argv: list[str], lines: list[str]) -> tuple[int, str, str]:
    import io

    from keltis_env.cli import build_parser
    from keltis_env.cli import play as play_cli

    args = build_parser().parse_args(["play", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = play_cli.run(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_play_reports_a_bot_that_exits_naming_it_and_its_seat() -> None:
    code, out, err = run_play(["--seed", "1", "--bots", py("Exits")], ["n"])
    assert code == 1
    assert re.search(r"keltis play: error: player 1 \(py:.*:Exits\) called sys\.exit\(0\)", err)
    assert "Traceback" not in err + out


def test_play_traceback_option_prints_the_bots_traceback() -> None:
    code, _, err = run_play(["--seed", "1", "--bots", py("RaisesUnpicklable"), "--traceback"], ["n"])
    assert code == 1 and "Traceback (most recent call last)" in err and "TwoArgumentError" in err


def test_play_a_bot_over_the_time_limit_loses_on_time() -> None:
    code, out, _ = run_play(["--seed", "1", "--seat", "1", "--bots", py("Sleeps"), "--move-seconds", "0.3"],
                            ["1", "1", "n"])
    assert code == 0
    text = re.sub(r"\n\s+", " ", out)  # the messages are wrapped at 80 columns
    assert re.search(r"player 0 \(py:.*:Sleeps\) took 0\.\d\d s on a move, over the limit of 0\.3 s", text)
    assert "it loses the game on time" in text


def test_the_learner_view_ends_the_episode_when_an_opponent_runs_over_its_limit() -> None:
    from keltis_env.envs.learner import KeltisLearnerEnv

    class SlowLater(Bot):
        name = "slow-later"
        slow = False

        def act(self, view):
            if SlowLater.slow:
                time.sleep(5)
            return view.legal_actions[0]

    env = KeltisLearnerEnv(opponents=SlowLater(0), seat=0, move_seconds=0.2)
    env.reset(seed=0)
    SlowLater.slow = True
    terminated = truncated = False
    start = time.monotonic()
    while not (terminated or truncated):
        legal = env.action_masks().nonzero()[0]
        _, reward, terminated, truncated, info = env.step(int(legal[0]))
    assert time.monotonic() - start < 10
    assert terminated and info["end"] == "time" and info["forfeit"] == 1 and reward == 0.0
    with pytest.raises(ValueError, match="move_seconds must be a positive number of seconds or None"):
        KeltisLearnerEnv(move_seconds=-1)


def test_a_ctrl_c_while_a_finished_game_is_kept_waits_until_it_is_kept_everywhere(
        python_default_signal_handlers) -> None:
    from keltis_env.evaluation.play import Interrupted, sigterm_interrupts, stops_deferred

    kept = []
    with sigterm_interrupts(), pytest.raises(Interrupted):
        with stops_deferred():
            os.kill(os.getpid(), signal.SIGINT)  # arrives between "counted" and "written"
            time.sleep(0.05)
            kept.append("counted")
            kept.append("written")
        kept.append("after")  # never: the stop is raised when the block ends
    assert kept == ["counted", "written"]
