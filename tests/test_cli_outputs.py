"""``keltis evaluate`` and ``keltis play`` with their output files, run as users run them:
every path is checked before any game is played (a clear message, exit status 2), files
are written atomically, and Ctrl-C during an evaluation stops its workers and reports
the finished games as a partial result, leaving no file that looks complete."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from keltis_env import evaluation
from keltis_env.cli import build_parser, main
from keltis_env.cli import play as play_cli
from keltis_env.core.game import load_record

ROOT = Path(__file__).resolve().parents[1]
EVALUATE = ["evaluate", "random", "random", "--games", "2", "--workers", "1", "--quiet"]


def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a folder\n")
    return path


# ---------------------------------------------------------------------- keltis evaluate
@pytest.mark.parametrize("option", ["--json", "--csv"])
def test_evaluate_refuses_an_output_file_under_a_file_before_any_game(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    target = a_file(tmp_path) / "missing" / "out.txt"
    assert main([*EVALUATE, option, str(target), "--records", str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert f"keltis evaluate: error: {option}: cannot write" in err and "is not a folder" in err
    assert not (tmp_path / "rec").exists()  # nothing was started


@pytest.mark.parametrize("option", ["--json", "--csv"])
def test_evaluate_refuses_an_output_file_that_is_a_folder(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    assert main([*EVALUATE, option, str(tmp_path)]) == 2
    assert f"{option}: cannot write" in capsys.readouterr().err


def test_evaluate_refuses_the_same_file_for_json_and_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    out = tmp_path / "out.txt"
    assert main([*EVALUATE, "--json", str(out), "--csv", str(tmp_path / "." / "out.txt")]) == 2
    assert "--json and --csv name the same file" in capsys.readouterr().err


def test_evaluate_refuses_a_records_path_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    existing = a_file(tmp_path)
    assert main([*EVALUATE, "--records", str(existing)]) == 2
    err = capsys.readouterr().err
    assert f"cannot create the game records folder {existing}: a file of that name exists" in err
    assert existing.read_text() == "not a folder\n"


def test_evaluate_refuses_a_records_folder_that_holds_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_games: None
) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "game_00000.json").write_text("{}")
    assert main([*EVALUATE, "--records", str(folder)]) == 2
    assert "already holds game records" in capsys.readouterr().err
    assert (folder / "game_00000.json").read_text() == "{}"


def test_evaluate_creates_missing_folders_and_writes_complete_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, games, rec = tmp_path / "a" / "out.json", tmp_path / "b" / "games.csv", tmp_path / "c" / "rec"
    assert main([*EVALUATE, "--json", str(out), "--csv", str(games), "--records", str(rec)]) == 0
    data = json.loads(out.read_text())
    assert data["games"] == data["planned_games"] == 2 and data["partial"] is False
    assert len(list(csv.DictReader(games.open()))) == 2
    assert len(list(rec.glob("game_*.json"))) == 2
    assert "PARTIAL" not in capsys.readouterr().out
    assert not [p for p in tmp_path.rglob(".*")]  # no temporary file left


def test_results_are_written_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = evaluation.evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False)
    out, games = tmp_path / "out.json", tmp_path / "games.csv"
    out.write_text("previous summary\n")
    games.write_text("previous games\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)  # Ctrl-C in the middle of writing the file
    for write, path, before in ((result.write_json, out, "previous summary\n"), (result.write_csv, games,
                                                                                  "previous games\n")):
        with pytest.raises(KeyboardInterrupt):
            write(path)
        assert path.read_text() == before  # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["games.csv", "out.json"]  # no temporary file left


def _wait_for(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("workers", [2, 1])
def test_ctrl_c_stops_the_workers_and_reports_the_finished_games_as_partial(tmp_path: Path, workers: int) -> None:
    out, games, rec, run = tmp_path / "out.json", tmp_path / "games.csv", tmp_path / "rec", tmp_path / "run"
    argv = ["evaluate", "random", "random", "--games", "100000", "--workers", str(workers), "--json", str(out),
            "--csv", str(games), "--records", str(rec), "--out", str(run)]
    # A session of its own, so that SIGINT goes to the whole process group, as Ctrl-C in
    # a terminal does: the main process and its workers.
    # SIGINT as a terminal leaves it: a shell starts background jobs with it ignored, and an
    # ignored signal is inherited (a test suite run in the background would never see it).
    proc = subprocess.Popen([sys.executable, "-m", "keltis_env", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert _wait_for(lambda: len(list(rec.glob("game_*.json"))) >= 3, 120), "no game finished"
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr
    assert _wait_for(lambda: _group_is_gone(proc.pid), 10), "a worker process outlived the evaluation"
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert "PARTIAL RESULT, interrupted after" in stdout and "of 100000 games" in stdout
    # Nothing that looks complete: the files named by the options are not written, the
    # partial results are named as partial and say so.
    assert not out.exists() and not games.exists()
    data = json.loads((tmp_path / "out.partial.json").read_text())
    assert data["partial"] is True and data["planned_games"] == 100000 and data["games"] >= 1
    rows = list(csv.DictReader((tmp_path / "games.partial.csv").open()))
    assert len(rows) == data["games"]
    # The records folder holds exactly the finished games, each one whole.
    records = sorted(rec.iterdir())
    assert [p.name for p in records] == [f"game_{int(row['game']):05d}.json" for row in rows]
    for path in records:
        assert load_record(path).replay().is_over
    assert f"summary written to {tmp_path / 'out.partial.json'}" in stdout
    # --out kept the same finished games, for --resume
    kept = sorted(json.loads(line)["index"] for line in (run / "games.jsonl").read_text().splitlines())
    assert kept == sorted(int(row["game"]) for row in rows)
    assert f"the finished games are kept in {run}; continue with --resume {run}" in stderr


# ---------------------------------------------------------------------- keltis play
def run_play(argv: list[str], lines: list[str]) -> tuple[int, str]:
    args = build_parser().parse_args(["play", *argv])
    out = io.StringIO()
    code = play_cli.run(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)), stdout=out)
    return code, out.getvalue()


def test_play_refuses_an_unwritable_save_path_before_the_game(tmp_path: Path) -> None:
    target = a_file(tmp_path) / "x.json"
    code, out = run_play(["--seed", "1", "--bots", "random", "--save", str(target)], ["1"] * 50)
    assert code == 2
    assert out == f"keltis play: error: --save: cannot write the game record to {target}: {tmp_path / 'a-file'} " \
        "is not a folder\n"  # no board, no prompt: the game did not start
    code, out = run_play(["--seed", "1", "--bots", "random", "--save", str(tmp_path)], [])
    assert code == 2 and "it is a folder; give a file name" in out


def test_play_saves_into_a_missing_folder_at_the_end(tmp_path: Path) -> None:
    target = tmp_path / "new" / "game.json"
    code, out = run_play(["--seed", "2", "--bots", "random", "--max-turns", "3", "--save", str(target)], ["1"] * 50)
    assert code == 0 and f"Game record saved to {target}" in out
    assert load_record(target).replay().is_over
    assert [p.name for p in target.parent.iterdir()] == ["game.json"]  # no temporary file left
