"""``keltis replay``: text stepping, PNG frames, and clear errors for bad records."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from keltis_env.bots import make_bot
from keltis_env.cli import build_parser
from keltis_env.cli import replay as replay_cli
from keltis_env.games.keltis import GameConfig, GameRecord, GameState

Finished = tuple[Path, GameRecord, GameState]


def _game(seed: int = 7, players: int = 2) -> tuple[GameRecord, GameState]:
    bots = [make_bot("random", seed=seed * 10 + i) for i in range(players)]
    record, state = GameRecord.start(GameConfig(num_players=players), seed, players=["random"] * players)
    while not state.is_over:
        action = bots[state.current].act(state.view(state.current))
        state.apply(action)
        record.actions.append(action)
    return record, state


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    record, state = _game()
    path = tmp_path_factory.mktemp("records") / "game.json"
    record.save(path)
    return path, record, state


def run_replay(argv: list[str], lines: list[str] | None = None) -> tuple[int, str, str]:
    args = build_parser().parse_args(["replay", *argv])
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO("".join(f"{line}\n" for line in lines or []))
    code = replay_cli.run(args, stdin=stdin, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_text_replay_of_every_decision_verifies_the_final_state(finished: Finished) -> None:
    path, record, state = finished
    code, out, err = run_replay([str(path)])
    assert code == 0 and not err
    assert out.count("\n=== position ") == len(record.actions)
    assert "=== start (position 0 of" in out
    assert f"=== position {len(record.actions)} of {len(record.actions)}" in out
    assert "The replay reproduces the record's final state." in out
    scores = state.scores()
    assert f"player 0 (random) {scores[0]}, player 1 (random) {scores[1]}" in out


def test_every_turn_shows_one_position_per_turn(finished: Finished) -> None:
    path, _, state = finished
    code, out, _ = run_replay([str(path), "--every", "turn"])
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("=== position")]
    turns = state.turn
    assert turns <= len(headers) <= turns + 1  # + the final, unfinished turn of a goal ending (R8.1)
    assert all("; draw " in h for h in headers[:turns])  # a whole turn: play (bonus...) then draw


def test_step_waits_for_enter_and_q_stops(finished: Finished) -> None:
    path, _, _ = finished
    code, out, _ = run_replay([str(path), "--step"], ["", "", "q"])
    assert code == 0
    assert out.count("Enter: next position, q: stop>") == 3
    assert out.count("\n=== ") == 3 and "stopped at position 2 of" in out


def test_step_stops_at_end_of_input(finished: Finished) -> None:
    path, _, _ = finished
    code, out, _ = run_replay([str(path), "--step", "--every", "turn"], [""])
    assert code == 0 and out.count("\n=== ") == 2 and "stopped at position" in out


def test_upto_stops_early(finished: Finished) -> None:
    path, record, _ = finished
    code, out, _ = run_replay([str(path), "--upto", "5", "--hands", "none"])
    assert code == 0
    assert out.count("\n=== ") == 6 and f"stopped at position 5 of {len(record.actions)}" in out
    assert "  hand:" not in out


def test_frames_are_written_as_pngs(finished: Finished, tmp_path: Path) -> None:
    Image = pytest.importorskip("PIL.Image")  # noqa: N806
    from keltis_env.games.keltis.render_image import DEFAULT_LAYOUT

    path, _, _ = finished
    frames = tmp_path / "frames"
    code, out, _ = run_replay([str(path), "--frames", str(frames), "--every", "turn", "--upto", "12"])
    assert code == 0 and "wrote" in out
    written = sorted(frames.glob("position_*.png"))
    assert written[0].name == "position_0000.png" and written[-1].name == "position_0012.png"
    assert 7 <= len(written) <= 13  # the start, then one per turn (a turn is 2 or more decisions)
    with Image.open(written[-1]) as img:
        assert img.size == DEFAULT_LAYOUT.size(2)
    first, last = (p.read_bytes() for p in (written[0], written[-1]))
    assert first != last


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda d: "{not json", "is not a JSON game record"),
        (lambda d: [1, 2, 3], "expected a JSON object"),
        (lambda d: {**d, "format": "chess"}, "not a Keltis game record"),
        (lambda d: {**d, "game": "go"}, "unknown game 'go'"),
        (lambda d: {**d, "final_scores": [s + 1 for s in d["final_scores"]]}, "replaying it gives"),
        (lambda d: {**d, "end": "goal" if d["end"] != "goal" else "deck"}, "the game ended by"),
        (lambda d: {**d, "actions": ["draw deck", *d["actions"]]}, "does not replay"),
        (lambda d: {**d, "actions": ["fly to the moon"]}, "cannot read action"),
        (lambda d: {k: v for k, v in d.items() if k != "setup"}, "the record lacks the key(s) setup"),
    ],
)
def test_corrupt_records_give_clear_errors(
    finished: Finished, tmp_path: Path, corrupt: Callable[[dict[str, Any]], object], message: str
) -> None:
    path, _, _ = finished
    bad = _write(tmp_path, "bad.json", corrupt(json.loads(path.read_text())))
    code, out, err = run_replay([str(bad)])
    assert code == 2
    assert err.startswith("keltis replay: error:") and message in err
    assert "Traceback" not in err + out


def test_missing_record_and_directory(tmp_path: Path) -> None:
    code, _, err = run_replay([str(tmp_path / "nope.json")])
    assert code == 2 and "no game record at" in err
    code, _, err = run_replay([str(tmp_path)])
    assert code == 2 and "is a folder, not a game record; give a record file (JSON)" in err


def test_frames_folder_that_cannot_be_created(finished: Finished, tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    path, _, _ = finished
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run_replay([str(path), "--frames", str(blocker / "frames")])
    assert code == 2 and "cannot create the frames folder" in err


def test_positions_reproduce_the_record_step_by_step(finished: Finished) -> None:
    _, record, state = finished
    seen = [(k, mover, list(moves)) for k, _, mover, moves in replay_cli.positions(record, "decision", 4)]
    assert [k for k, _, _ in seen] == [0, 1, 2, 3, 4]
    assert all(len(moves) == 1 for _, _, moves in seen[1:])
    *_, (k, final, _, _) = replay_cli.positions(record)
    assert k == len(record.actions) and final == state
