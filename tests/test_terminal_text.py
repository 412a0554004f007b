"""Text from files, records and the command line reaches the terminal with its control
characters escaped (:mod:`keltis_env.core.text`): a record's player names, a path or a
config key cannot retitle, clear or recolour the terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from keltis_env.cli import build_parser
from keltis_env.cli import main as keltis_main
from keltis_env.cli import play as play_cli
from keltis_env.cli import replay as replay_cli
from keltis_env.core.text import is_plain_text, terminal_text
from keltis_env.games.keltis import GameConfig, GameRecord

#: what a hostile record put in a player's name: set the title, then clear the screen
HOSTILE = "\x1b]0;HACKED\x07\x1b[2J"
#: the characters a terminal acts on (ESC, BEL, CSI of C1, DEL, CR, BS)
ACTING = ("\x1b", "\x07", "\x9b", "\x7f", "\r", "\x08")


def _no_acting_characters(text: str) -> None:
    assert not any(c in text for c in ACTING), repr(text)


def test_terminal_text_escapes_c0_c1_del_lone_surrogates_and_bidi_overrides() -> None:
    assert terminal_text("a\x1bb\x07c\x7fd\x9be\ud800f\u202eg") == "a\\x1bb\\x07c\\x7fd\\x9be\\ud800f\\u202eg"
    assert terminal_text("line 1\nline 2") == "line 1\\x0aline 2"
    assert terminal_text("line 1\nline 2\r", multiline=True) == "line 1\nline 2\\x0d"
    plain = "Ärger über «Keltis» — 7 ♠ 🂡"
    assert terminal_text(plain) == plain and is_plain_text(plain)
    assert not is_plain_text("x\ud800") and not is_plain_text("a\nb")
    terminal_text("x\udcff").encode("utf-8")  # a lone surrogate no longer stops the output


def _hostile_record(tmp_path: Path) -> Path:
    record, _ = GameRecord.start(GameConfig(num_players=2), 3, players=[HOSTILE, "random"])
    path = tmp_path / "hostile.json"
    record.save(path)
    return path


def _replay(argv: list[str]) -> tuple[int, str, str]:
    args = build_parser().parse_args(["replay", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = replay_cli.run(args, stdin=io.StringIO(), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_replay_does_not_send_a_records_escape_sequences_to_the_terminal(tmp_path: Path) -> None:
    code, out, err = _replay([str(_hostile_record(tmp_path))])
    assert code == 0, err
    _no_acting_characters(out)
    assert "\\x1b]0;HACKED\\x07\\x1b[2J" in out  # shown, visibly, as what the file holds


def test_replay_frames_header_does_not_send_escape_sequences(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    code, out, err = _replay([str(_hostile_record(tmp_path)), "--frames", str(tmp_path / "frames"), "--upto", "1"])
    assert code == 0, err
    _no_acting_characters(out)


def test_replay_error_does_not_send_escape_sequences_from_a_path(tmp_path: Path) -> None:
    code, _, err = _replay([str(tmp_path / f"{HOSTILE}.json")])
    assert code == 2
    _no_acting_characters(err)
    assert "no game record at" in err and err.count("\n") == 1


def test_render_error_does_not_send_escape_sequences_from_a_record(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "keltis-record", "version": 1, HOSTILE: 1}))
    code = keltis_main(["render", "--record", str(bad), "--out", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert code == 2
    _no_acting_characters(err)
    assert "unknown key" in err


def test_render_error_does_not_send_escape_sequences_from_a_path(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = keltis_main(["render", "--record", str(tmp_path / f"{HOSTILE}.json"), "--out", str(tmp_path / "x.png")])
    err = capsys.readouterr().err
    assert code == 2
    _no_acting_characters(err)
    assert "no game record at" in err


@pytest.mark.parametrize("name", [HOSTILE, "bad\udcffname", "two\nlines"])
def test_play_refuses_a_name_that_would_command_the_terminal(name: str) -> None:
    args = build_parser().parse_args(["play", "--name", name, "--seed", "1"])
    out = io.StringIO()
    code = play_cli.run(args, stdin=io.StringIO(""), stdout=out)
    text = out.getvalue()
    assert code == 2
    assert "--name must be a name of printable characters" in text
    _no_acting_characters(text)
    text.encode("utf-8")


def test_training_config_error_does_not_send_escape_sequences(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from training.train.__main__ import main as train_main

    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({HOSTILE: 1}))
    code = train_main(["--config", str(config)])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown key" in err
    _no_acting_characters(err)
