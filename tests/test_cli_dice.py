"""``keltis demo``, ``keltis render`` and ``keltis replay --frames`` for every game (the dice
game included), and the commands' output paths: checked before any work, written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from keltis_env.bots import make_bot
from keltis_env.cli import main
from keltis_env.core.game import game_names, load_record
from keltis_env.core.match import play_game
from keltis_env.core.output_files import (
    OutputPathError,
    atomic_write_bytes,
    atomic_write_text,
    check_output_dir,
    check_output_file,
)


def _dice_record(tmp_path: Path, seed: int = 4, players: int = 3) -> Path:
    path = tmp_path / "dice.json"
    assert main(["demo", "--game", "dice", "--players", str(players), "--seed", str(seed), "--record", str(path)]) == 0
    return path


# ---------------------------------------------------------------- keltis demo
def test_demo_plays_a_dice_game_and_saves_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "game.json"
    code = main(["demo", "--game", "dice", "--seed", "3", "--bots", "heuristic", "random", "--record", str(path)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("Demo of Keltis, the dice game") and "seats: 0=heuristic, 1=random" in out
    assert "Keltis dice, 2 players | turn 0" in out and "\nturn 1: player " in out
    record = load_record(path)
    final = record.replay()
    assert record.GAME == "dice" and record.players == ["heuristic", "random"] and final.is_over
    assert f"Scores: {final.scores()}" in out and f"record saved to {path}" in out
    # The demo's game is the match loop's game with the same seeded bots.
    bots = [make_bot(spec, seed=300 + i, game="dice") for i, spec in enumerate(["heuristic", "random"])]
    _, result = play_game("dice", bots, 3, record=True)
    assert record.actions == list(result.actions)
    assert json.loads(path.read_text())["final_scores"] == list(result.scores)


def test_demo_is_the_same_for_the_same_seed_and_every_end_prints_no_turns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--game", "dice", "--players", "4", "--seed", "9"]) == 0
    first = capsys.readouterr().out
    assert main(["demo", "--game", "dice", "--players", "4", "--seed", "9"]) == 0
    assert capsys.readouterr().out == first
    assert main(["demo", "--game", "dice", "--players", "4", "--seed", "9", "--every", "end"]) == 0
    end = capsys.readouterr().out
    assert "\nturn " not in end and end.splitlines()[-1] == first.splitlines()[-1]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--players", "5"], "dice is for 2 to 4 players, got num_players=5"),
        (["--bots", "random"], "--bots needs 2 agent specs (one per seat), got 1"),
        (["--bots", "random", "nosuchbot"], "unknown bot 'nosuchbot' for game 'dice'"),
    ],
)
def test_demo_refuses_bad_options_clearly(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--game", "dice", *argv]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("keltis demo: error:") and message in err and not out


@pytest.mark.parametrize("game", game_names())
def test_demo_checks_the_record_path_before_playing(
    game: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    impossible = blocker / "dir" / "x.json"
    assert main(["demo", "--game", game, "--record", str(impossible)]) == 2
    out, err = capsys.readouterr()
    assert not out, "nothing is played"
    assert err == (f"keltis demo: error: cannot write the game record (--record) to {impossible}: "
                   f"{blocker} is not a folder\n")
    assert main(["demo", "--game", game, "--record", str(tmp_path)]) == 2
    assert "it is a folder; give a file name" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    missing = tmp_path / "missing" / "dir" / "x.json"  # folders that can be created are
    assert main(["demo", "--game", game, "--every", "end", "--record", str(missing)]) == 0
    assert load_record(missing).to_dict()["game"] == game


def test_demo_interrupted_while_saving_leaves_the_old_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "game.json"
    path.write_text("the old record")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    assert main(["demo", "--game", "dice", "--record", str(path)]) == 130
    assert path.read_text() == "the old record"
    assert [p.name for p in tmp_path.iterdir()] == ["game.json"], "no temporary file is left"


@pytest.mark.parametrize("command", ["demo", "render"])
def test_bots_learn_the_game_and_player_count_where_they_play(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = Path(__file__).resolve().parents[1] / "policies" / "keltis_2p.zip"
    if not policy.is_file():
        pytest.skip("the shipped policy is not in this checkout")
    out = ["--out", str(tmp_path / "x.png")] if command == "render" else []
    assert main([command, "--game", "dice", "--bots", "random", f"ppo:{policy}", *out]) == 2
    assert "is a 2-player keltis policy; this is a 2-player dice game" in capsys.readouterr().err
    three = ["--players", "3", "--bots", "random", "random", f"ppo:{policy}"]
    assert main([command, *three, *out]) == 2
    assert "is a 2-player keltis policy; this is a 3-player keltis game" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


# ---------------------------------------------------------------- keltis render
def test_render_draws_a_dice_position(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT

    out = tmp_path / "dice.png"
    argv = ["render", "--game", "dice", "--players", "3", "--seed", "2", "--turns", "6", "--out", str(out)]
    assert main(argv) == 0
    assert "the position after 6 turns, DiceState(players=3, turn=6" in capsys.readouterr().out
    with Image.open(out) as img:
        assert img.size == DEFAULT_LAYOUT.size(3) and img.mode == "RGB"
    again = tmp_path / "again.png"
    assert main([*argv[:-1], str(again)]) == 0
    assert out.read_bytes() == again.read_bytes(), "the same command draws the same picture"
    later = tmp_path / "later.png"
    assert main([*argv[:-3], "20", "--out", str(later)]) == 0
    assert later.read_bytes() != out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.png", "dice.png", "later.png"]


def test_render_draws_a_position_of_a_dice_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT

    record = _dice_record(tmp_path)
    capsys.readouterr()
    out = tmp_path / "start.png"
    assert main(["render", "--record", str(record), "--upto", "0", "--out", str(out)]) == 0
    assert "the position after 0 turns" in capsys.readouterr().out
    with Image.open(out) as img:
        assert img.size == DEFAULT_LAYOUT.size(3)
    assert main(["render", "--game", "dice", "--record", str(record), "--out", str(out)]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--game", "keltis", "--record", "{record}"], "is a record of the game 'dice', not 'keltis'"),
        (["--record", "{record}", "--upto", "-1"], "--upto must be from 0 to"),
        (["--game", "dice", "--upto", "3"], "--upto needs --record"),
        (["--game", "dice", "--turns", "-2"], "--turns must be 0 or more"),
        (["--game", "dice", "--players", "1"], "dice is for 2 to 4 players"),
        (["--game", "dice", "--players", "3", "--bots", "random"], "--bots needs 3 agent specs"),
    ],
)
def test_render_refuses_bad_options_clearly(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = _dice_record(tmp_path)
    capsys.readouterr()
    out = tmp_path / "x.png"
    argv = [a.replace("{record}", str(record)) for a in argv]
    assert main(["render", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("keltis render: error:") and message in err
    assert not out.exists()


def test_render_checks_the_output_path_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "board.png"
    assert main(["render", "--game", "dice", "--record", str(tmp_path / "no-record.json"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"keltis render: error: cannot write the picture (--out) to {out}: {blocker} is not a folder\n"
    assert "no game record" not in err, "the output path is checked before the record is read"


# ---------------------------------------------------------------- keltis replay --frames
def test_replay_writes_the_frames_of_a_dice_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from PIL import Image

    from keltis_env.cli.replay import positions
    from keltis_env.games.dice.render_image import DEFAULT_LAYOUT

    record = _dice_record(tmp_path, players=2)
    frames = tmp_path / "frames" / "dice"
    argv = ["replay", str(record), "--game", "dice", "--frames", str(frames), "--every", "turn", "--upto", "9"]
    assert main(argv) == 0
    expected = [k for k, *_ in positions(load_record(record), "turn", 9)]  # the start, then one per turn
    assert f"wrote {len(expected)} frames (positions 0..{expected[-1]})" in capsys.readouterr().out
    written = sorted(frames.iterdir())
    assert [p.name for p in written] == [f"position_{k:04d}.png" for k in expected], "only the frames"
    with Image.open(written[-1]) as img:
        assert img.size == DEFAULT_LAYOUT.size(2)
    assert len({p.read_bytes() for p in written}) == len(written)


def test_replay_refuses_a_record_of_another_game(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = _dice_record(tmp_path)
    capsys.readouterr()
    frames = tmp_path / "frames"
    assert main(["replay", str(record), "--game", "keltis", "--frames", str(frames)]) == 2
    assert "is a record of the game 'dice', not 'keltis'" in capsys.readouterr().err
    assert not frames.exists()


# ---------------------------------------------------------------- keltis_env.core.output_files
def test_check_output_file_names_the_problem(tmp_path: Path) -> None:
    assert check_output_file(tmp_path / "a.json", "the record") == tmp_path / "a.json"
    assert check_output_file(tmp_path / "new" / "a.json", "the record") == tmp_path / "new" / "a.json"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputPathError, match="file is not a folder"):
        check_output_file(blocker / "a.json", "the record")
    with pytest.raises(OutputPathError, match="file is not a folder"):
        check_output_file(blocker / "deeper" / "a.json", "the record")
    with pytest.raises(OutputPathError, match="it is a folder"):
        check_output_file(tmp_path, "the record")
    with pytest.raises(OutputPathError, match="the path is empty"):
        check_output_file("", "the record")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"], "checking creates nothing"


def test_check_output_dir_accepts_a_folder_it_can_create_without_creating_it(tmp_path: Path) -> None:
    folder = check_output_dir(tmp_path / "a" / "b", "the frames folder")
    assert folder == tmp_path / "a" / "b" and not (tmp_path / "a").exists()  # the writers create it
    folder.mkdir(parents=True)
    assert check_output_dir(folder, "the frames folder") == folder  # an existing folder is fine
    assert list(folder.iterdir()) == []  # the check's trial file is gone
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputPathError, match=r"cannot create the frames folder .*file: a file of that name exists"):
        check_output_dir(blocker, "the frames folder")
    with pytest.raises(OutputPathError, match="cannot create the frames folder"):
        check_output_dir(blocker / "sub", "the frames folder")


def test_atomic_writes_replace_the_file_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out.txt"
    atomic_write_text(path, "first")
    assert path.read_text() == "first"
    atomic_write_text(tmp_path / "made" / "x.txt", "in a new folder")
    assert (tmp_path / "made" / "x.txt").read_text() == "in a new folder"
    (tmp_path / "made" / "x.txt").unlink()
    (tmp_path / "made").rmdir()
    os.chmod(path, 0o640)
    atomic_write_bytes(path, b"second")
    assert path.read_bytes() == b"second" and path.stat().st_mode & 0o777 == 0o640, "the old file's permissions"

    def failing(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(path, "third")
    assert path.read_bytes() == b"second"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"], "the temporary file is removed"
