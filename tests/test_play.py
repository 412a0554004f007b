"""``keltis play`` driven by scripted input: bad input never crashes, the game runs to
its end against random bots, hands stay private (R10), and saved records replay."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from keltis_env.cli import build_parser
from keltis_env.cli import play as play_cli
from keltis_env.core.game import load_record
from keltis_env.games.keltis import action_to_string
from keltis_env.games.keltis.constants import card_name

BAD_INPUT = [
    "99",  # a number that is not in the list
    "0",
    "play red 11",  # not a card
    "draw green",  # a readable move, but not legal in the play step
    "",  # empty line
    "   ",
    "frobnicate",  # nothing like a move
    "play",  # the beginning of several moves
    "help",
    "board",
    "moves",
    "save",  # saves to --save's path
]


def run_play(argv: list[str], lines: list[str]) -> tuple[int, str]:
    args = build_parser().parse_args(["play", *argv])
    out = io.StringIO()
    code = play_cli.run(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)), stdout=out)
    return code, out.getvalue()


def session(lines: list[str] | io.StringIO, **kwargs: object) -> tuple[play_cli.PlaySession, io.StringIO]:
    out = io.StringIO()
    stdin = lines if isinstance(lines, io.StringIO) else io.StringIO("".join(f"{line}\n" for line in lines))
    options = {"game": "keltis", "num_players": 2, "bot_specs": ["random"], "seat": 0, "seed": 11}
    options.update(kwargs)
    console = play_cli.Console(stdin, out)
    return play_cli.PlaySession(console=console, **options), out  # type: ignore[arg-type]


def test_bad_input_then_legal_moves_to_the_end_of_a_game(tmp_path: Path) -> None:
    path = tmp_path / "game.json"
    code, out = run_play(
        ["--seed", "5", "--bots", "random", "--max-turns", "8", "--save", str(path)], BAD_INPUT + ["1"] * 200
    )
    assert code == 0
    assert "There is no move number 99" in out and "There is no move number 0" in out
    assert "Not understood: cannot read action 'play red 11'" in out
    assert "'draw green' is not a legal move now: drawing happens in the draw step" in out
    assert out.count("Nothing typed") == 2
    assert "Not understood: cannot read action 'frobnicate'" in out
    assert "'play' could be several moves" in out
    assert "save [PATH]" in out  # the help
    assert "player 1 (random): " in out  # the bot's moves are printed
    assert "The game was truncated after 8 turns." in out and "Final scores: you (player 0)" in out
    assert out.count(f"Game record saved to {path}") == 2  # by the save command, then at the end
    data = json.loads(path.read_text())
    assert data["players"] == ["human", "random"] and data["end"] == "truncated"
    record = load_record(path)
    final = record.replay()
    assert final.is_over and final.scores() == data["final_scores"]
    assert f"you (player 0) {final.scores()[0]}, player 1 (random) {final.scores()[1]}" in out


class _Reactive(io.StringIO):
    """Answers every prompt with the text of a legal move of the session's state (the
    last one in the list): exercises text input in every step (play, bonus, draw)."""

    def __init__(self) -> None:
        super().__init__()
        self.session: play_cli.PlaySession | None = None
        self.answers: list[str] = []

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        assert self.session is not None
        state = self.session.state
        if state.is_over:
            return "n\n"
        text = action_to_string(state.legal_actions()[-1])
        self.answers.append(text)
        return f"  {text.upper()}  \n"  # case and spaces do not matter


def test_readable_move_text_plays_a_whole_game_and_record_round_trips(tmp_path: Path) -> None:
    stdin = _Reactive()
    game, out = session(stdin, num_players=3, bot_specs=["random", "random"], seat=1, seed=2)
    stdin.session = game
    assert game.play() == 0
    state = game.state
    assert state.is_over and not state.truncated  # a real end (R8)
    assert stdin.answers and any(a.startswith("draw") for a in stdin.answers)
    text = out.getvalue()
    assert "Save the game record? [y/N]" in text and "saved" not in text  # declined
    path = tmp_path / "r.json"
    game.record.save(path)
    again = load_record(path)
    assert again.players == ["random", "human", "random"]
    assert again.replay() == state, "the saved record replays to the identical final state"


def test_other_players_hands_are_never_shown() -> None:
    game, out = session(["1"] * 400, num_players=3, bot_specs=["random", "random"], seat=2, seed=4)
    assert game.play() == 0
    lines = out.getvalue().splitlines()
    hand_lines = [i for i, line in enumerate(lines) if line.startswith("  hand:")]
    assert hand_lines
    for i in hand_lines:  # the text board prints a hand right under its player's line
        assert lines[i - 1].startswith("player 2:"), lines[i - 1]
    final = game.state
    for p in (0, 1):
        other = ", ".join(card_name(k) for k in final.hands[p])
        assert other not in out.getvalue()


def test_end_of_input_stops_cleanly_and_saves_the_game_so_far(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    code, out = run_play(["--seed", "1", "--bots", "random", "--save", str(path)], ["1", "1", "1"])
    assert code == 0
    assert "Game stopped (end of input)" in out and "Scores so far" in out
    record = load_record(path)
    assert len(record.actions) >= 3 and not record.replay().is_over
    assert json.loads(path.read_text())["final_scores"] is None


def test_quit_offers_to_save(tmp_path: Path) -> None:
    path = tmp_path / "quit.json"
    code, out = run_play(["--seed", "1", "--bots", "random"], ["1", "q", "yes", str(path)])
    assert code == 0 and "Game stopped (you quit)" in out
    assert f"Game record saved to {path}" in out
    assert len(load_record(path).actions) >= 1


def test_save_command_mid_game_and_unwritable_path(tmp_path: Path) -> None:
    path = tmp_path / "mid.json"
    (tmp_path / "a-file").write_text("")
    bad = tmp_path / "a-file" / "x.json"  # a file where the folder should be
    missing = tmp_path / "new" / "folder" / "y.json"  # missing folders are created
    lines = ["save", f"save {path}", f"save {bad}", f"save {missing}", "quit", "n"]
    code, out = run_play(["--seed", "3", "--bots", "random"], lines)
    assert code == 0
    assert "Save where? Type 'save PATH'" in out
    assert f"Game record saved to {path}" in out and f"Game record saved to {missing}" in out
    assert f"Could not save the game record: cannot write the game record to {bad}: " in out
    assert load_record(path).actions is not None and load_record(missing).actions is not None
    assert not bad.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


class _CtrlC(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt
        return "1\n" if self.calls == 1 else ""  # then end of input at the save offer


def test_ctrl_c_stops_cleanly() -> None:
    game, out = session(_CtrlC())
    assert game.play() == 130
    text = out.getvalue()
    assert "Game stopped (interrupted)" in text and "Save the game record?" in text


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--players", "3", "--bots", "random", "random", "random"], "--bots needs one agent spec"),
        (["--bots", "no-such-bot"], "unknown bot"),
        (["--players", "2", "--seat", "2"], "--seat must be 0..1"),
        (["--max-turns", "0"], "max_turns"),
    ],
)
def test_bad_arguments_are_reported(argv: list[str], message: str) -> None:
    code, out = run_play(argv, [])
    assert code == 2 and message in out


def test_one_bot_spec_fills_every_other_seat_and_seed_is_printed() -> None:
    code, out = run_play(["--players", "4", "--seat", "3", "--bots", "random", "--seed", "9"], ["quit", "n"])
    assert code == 0
    assert "seed 9" in out and "player 2 (random)" in out and "you (player 3)" in out


AGENTS = '''
calls = 0


def illegal(observation, action_mask):
    return len(action_mask) + 5


def breaks_on_its_second_move(observation, action_mask):
    global calls
    calls += 1
    if calls == 2:
        raise RuntimeError("my agent broke")
    return int(action_mask.nonzero()[0][0])
'''


@pytest.mark.parametrize(("name", "message"), [
    ("illegal", "returned action"),
    ("breaks_on_its_second_move", "RuntimeError: my agent broke"),
])
def test_a_failing_bot_stops_the_game_cleanly_and_the_record_is_kept(tmp_path: Path, name: str,
                                                                     message: str) -> None:
    agents = tmp_path / "agents.py"
    agents.write_text(AGENTS)
    path = tmp_path / "game.json"
    code, out = run_play(["--seed", "1", "--seat", "1", "--bots", f"py:{agents}:{name}", "--save", str(path)],
                         ["1", "1", "1"])
    assert code == 1
    assert f"Game stopped (the bot at seat 0 (py:{agents}:{name}) failed: " in out and message in out
    assert "Traceback" not in out
    assert not load_record(path).replay().is_over  # the game so far, saved
