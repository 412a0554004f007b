"""``keltis play`` driven by scripted input: bad input never crashes, the game runs to
its end against random bots, hands stay private (R10), and saved records replay."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from keltis_env.cli import build_parser
from keltis_env.cli import play as play_cli
from keltis_env.core.game import get_game, load_record
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


def run_play(argv: list[str], lines: list[str]) -> tuple[int, str, str]:
    """``keltis play ARGV`` with ``lines`` typed: exit status, standard output, standard error."""
    args = build_parser().parse_args(["play", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = play_cli.run(args, stdin=io.StringIO("".join(f"{line}\n" for line in lines)), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def session(lines: list[str] | io.StringIO, **kwargs: object) -> tuple[play_cli.PlaySession, io.StringIO]:
    """A session reading ``lines``; its output and error messages in one stream."""
    out = io.StringIO()
    stdin = lines if isinstance(lines, io.StringIO) else io.StringIO("".join(f"{line}\n" for line in lines))
    options = {"game": "keltis", "num_players": 2, "bot_specs": ["random"], "seat": 0, "seed": 11}
    options.update(kwargs)
    console = play_cli.Console(stdin, out)
    return play_cli.PlaySession(console=console, **options), out  # type: ignore[arg-type]


def test_bad_input_then_legal_moves_to_the_end_of_a_game(tmp_path: Path) -> None:
    path = tmp_path / "game.json"
    code, out, err = run_play(
        ["--seed", "5", "--bots", "random", "--max-turns", "8", "--save", str(path)], BAD_INPUT + ["1"] * 200
    )
    assert code == 0
    err = " ".join(err.split())  # messages are wrapped at 80 columns
    assert "There is no move number 99" in err and "There is no move number 0" in err
    assert "Not understood: cannot read action 'play red 11'" in err
    assert "'draw green' is not a legal move now: drawing happens in the draw step" in err
    assert err.count("Nothing typed") == 2
    assert "Not understood: cannot read action 'frobnicate'" in err
    assert "'play' could be several moves" in err
    assert "save [PATH]" in out  # the help
    assert "player 1 (random): " in out  # the bot's moves are printed
    assert "The game was truncated after 8 turns." in out and "Final scores: you (player 0)" in out
    assert out.count(f"Game record saved to {path}") == 2  # by the save command, then at the end
    data = json.loads(path.read_text())
    assert data["players"] == ["human", "random"] and data["end"] == "truncated"
    record = load_record(path)
    final = record.replay()
    assert final.is_over and final.scores() == data["final_scores"]
    assert f"you (player 0) {final.scores()[0]}, player 1 (random) {final.scores()[1]}" in " ".join(out.split())


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
    assert not [line for line in lines if line.startswith("  hand:")]  # the board shows no hand in play
    assert [line for line in lines if line.startswith("Your hand: ")]  # the person's own, under the board
    final = game.state
    for p in (0, 1):
        other = ", ".join(card_name(k) for k in final.hands[p])
        assert other not in out.getvalue()


def test_end_of_input_stops_cleanly_and_saves_the_game_so_far(tmp_path: Path) -> None:
    path = tmp_path / "partial.json"
    code, out, _ = run_play(["--seed", "1", "--bots", "random", "--save", str(path)], ["1", "1", "1"])
    assert code == 0
    assert "Game stopped (end of input)" in out and "Scores so far" in out
    record = load_record(path)
    assert len(record.actions) >= 3 and not record.replay().is_over
    assert json.loads(path.read_text())["final_scores"] is None


def test_quit_offers_to_save(tmp_path: Path) -> None:
    path = tmp_path / "quit.json"
    code, out, _ = run_play(["--seed", "1", "--bots", "random"], ["1", "q", "yes", str(path)])
    assert code == 0 and "Game stopped (you quit)" in out
    assert f"Game record saved to {path}" in out
    assert len(load_record(path).actions) >= 1


def test_save_command_mid_game_and_unwritable_path(tmp_path: Path) -> None:
    path = tmp_path / "mid.json"
    (tmp_path / "a-file").write_text("")
    bad = tmp_path / "a-file" / "x.json"  # a file where the folder should be
    missing = tmp_path / "new" / "folder" / "y.json"  # missing folders are created
    lines = ["save", f"save {path}", f"save {bad}", f"save {missing}", "quit", "n"]
    code, out, err = run_play(["--seed", "3", "--bots", "random"], lines)
    assert code == 0
    assert "Save where? Type 'save PATH'" in err
    assert f"Game record saved to {path}" in out and f"Game record saved to {missing}" in out
    assert f"Could not save the game record: cannot write the game record to {bad}: " in err
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
def test_bad_arguments_are_reported_on_stderr(argv: list[str], message: str) -> None:
    code, out, err = run_play(argv, [])
    assert code == 2 and message in err and err.startswith("keltis play: error: ") and out == ""


def test_one_bot_spec_fills_every_other_seat_and_seed_is_printed() -> None:
    code, out, _ = run_play(["--players", "4", "--seat", "3", "--bots", "random", "--seed", "9"], ["quit", "n"])
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
    code, out, err = run_play(["--seed", "1", "--seat", "1", "--bots", f"py:{agents}:{name}", "--save", str(path)],
                              ["1", "1", "1"])
    assert code == 1
    assert f"Game stopped (player 0 (py:{agents}:{name}) failed)" in out
    assert f"keltis play: error: player 0 (py:{agents}:{name})" in err + out and message in err + out
    assert "Traceback" not in out + err
    assert not load_record(path).replay().is_over  # the game so far, saved


# ---------------------------------------------------------------------- an 80x24 terminal
def random_states(game: str, players: int, count: int, seed: int) -> list[Any]:
    """``count`` positions of random play of ``game``: from the start to the end, truncated
    games included, so that every step of a turn and every board mark comes up."""
    spec = get_game(game)
    rng = random.Random(seed)
    states = []
    for _ in range(count):
        options = {"max_turns": rng.choice([20, 500])}
        state = spec.new_state(spec.make_config(num_players=players, **options), rng.randrange(10**6))
        for _ in range(rng.randrange(0, 600)):
            if state.is_over:
                break
            state.apply(rng.choice(state.legal_actions()))
        states.append(state)
    return states


def turn_screen(game: str, state: Any) -> tuple[list[str], str]:
    """What the person at ``state``'s seat to act sees: board, hand, moves and prompt,
    as ``keltis play`` prints them (standard output), and its error stream."""
    out, err = io.StringIO(), io.StringIO()
    players = state.num_players
    game_session = play_cli.PlaySession(game, players, ["random"] * (players - 1), seat=state.current, seed=0,
                                        console=play_cli.Console(io.StringIO(), out, err))
    game_session.state = state
    game_session.show_board()
    game_session.show_moves(state.legal_actions())
    out.write(game_session.prompt())
    return out.getvalue().splitlines()[1:], err.getvalue()  # [0]: the blank line before the board


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_a_turn_screen_fits_80_columns_and_24_rows(game: str, players: int) -> None:
    for state in random_states(game, players, 60, seed=players):
        if state.is_over:
            continue
        screen, err = turn_screen(game, state)
        assert not err
        assert max(len(line) for line in screen) <= play_cli.WIDTH, "\n".join(screen)
        assert len(screen) <= play_cli.ROWS, "\n".join(screen)
        assert screen[-1].startswith("your move (")


@pytest.mark.parametrize("players", [2, 4])
@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_a_whole_game_prints_no_line_wider_than_80_columns(game: str, players: int) -> None:
    stdin = _Answers(lambda state: "keep" if game == "dice" and state.phase == 0 else "1")
    game_session, out = session(stdin, game=game, num_players=players, bot_specs=["random"] * (players - 1), seed=7)
    stdin.session = game_session
    assert game_session.play() == 0 and game_session.state.is_over
    wide = [line for line in out.getvalue().splitlines() if len(line) > play_cli.WIDTH]
    assert not wide


def test_the_play_step_moves_are_a_table_when_a_list_would_not_fit() -> None:
    spec = get_game("keltis")
    state = spec.new_state(spec.make_config(num_players=4), 3)  # eight cards: play, play large or discard each
    assert len(state.legal_actions()) == 24
    screen, _ = turn_screen("keltis", state)
    legal = state.legal_actions()
    rows = {line.split()[0] + (" large" if "large" in line else ""): line for line in screen
            if line.startswith(("play _", "discard _"))}
    assert set(rows) == {"play", "play large", "discard"}
    numbers = [int(n) for line in rows.values() for n in line.split() if n.isdigit()]
    assert sorted(numbers) == list(range(1, len(legal) + 1)), "every legal move has its number in the table"
    # the numbers are those of the list that `moves` prints and that the person types
    assert play_cli.numbered_list([action_to_string(a) for a in legal])[0].split()[0] == "1"


def test_moves_command_lists_every_legal_move_numbered() -> None:
    game_session, out = session(["moves", "quit", "n"], num_players=4, bot_specs=["random"] * 3, seed=3)
    assert game_session.play() == 0
    legal_texts = [f"play {card_name(k)}" for k in sorted(game_session.state.hands[0])]
    text = out.getvalue()
    assert all(f"  {t}" in text for t in legal_texts)


class _Answers(io.StringIO):
    """Answers every move prompt with ``answer(state)``; 'n' when asked to save."""

    def __init__(self, answer: Any) -> None:
        super().__init__()
        self.answer = answer
        self.session: play_cli.PlaySession | None = None
        self.prompts = 0

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        assert self.session is not None
        self.prompts += 1
        if self.session.state.is_over or self.prompts > 2000:
            return "n\n" if self.session.state.is_over else ""
        return f"{self.answer(self.session.state)}\n"


def test_a_move_that_is_the_only_legal_one_is_played_without_asking() -> None:
    asked: list[int] = []

    def first_legal(state: Any) -> str:
        asked.append(len(state.legal_actions()))
        return "1"

    stdin = _Answers(first_legal)
    game_session, out = session(stdin, seed=4)
    stdin.session = game_session
    assert game_session.play() == 0
    assert asked and min(asked) >= 2, "the person was asked for a move that had no alternative"
    forced = [line for line in out.getvalue().splitlines() if "(your only legal move, played for you)" in line]
    assert forced and all(line.startswith("you: ") for line in forced)
    record = game_session.record
    assert record.replay() == game_session.state  # forced moves are in the record


def dice_session(lines: list[str], **kwargs: Any) -> tuple[play_cli.PlaySession, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    stdin = io.StringIO("".join(f"{line}\n" for line in lines))
    options: dict[str, Any] = {"num_players": 2, "bot_specs": ["random"], "seat": 0, "seed": 5}
    options.update(kwargs)
    return play_cli.PlaySession("dice", console=play_cli.Console(stdin, out, err), **options), out, err


@pytest.mark.parametrize(("typed", "rerolled"), [
    ("keep", []), ("keep 2 4", [1, 3, 5]), ("keep 1,2,3,4,5", []), ("keep none", [1, 2, 3, 4, 5]),
    ("reroll 4 1", [1, 4]), ("reroll", [1, 2, 3, 4, 5]), ("reroll all", [1, 2, 3, 4, 5]), ("KEEP  5", [1, 2, 3, 4]),
])
def test_dice_are_kept_or_rerolled_by_naming_them(typed: str, rerolled: list[int]) -> None:
    from keltis_env.games.dice.actions import action_to_string, reroll_action

    game_session, out, err = dice_session([typed, "quit", "n"])
    assert game_session.play() == 0, err.getvalue()
    assert not err.getvalue()
    text = out.getvalue()
    assert f"> you: {action_to_string(reroll_action(rerolled))}\n" in text
    assert reroll_action(rerolled) in game_session.record.actions
    assert "reroll 1,2" not in text.split("you: ")[0], "the 32 re-roll choices are not listed"
    assert "'keep 3 5' keeps dice 3 and 5" in " ".join(text.split())


@pytest.mark.parametrize(("typed", "message"), [
    ("keep 6", "'6' is not a die; dice are 1, 2, 3, 4, 5"),
    ("reroll 0", "'0' is not a die"),
    ("keep 2 2", "die 2 is named twice"),
    ("reroll red", "'red' is not a die"),
    ("3", "'3' names no move here: name dice to keep or re-roll"),
    ("move red", "is not a legal move now"),
])
def test_bad_dice_are_refused_on_stderr_naming_what_is_allowed(typed: str, message: str) -> None:
    game_session, out, err = dice_session([typed, "quit", "n"])
    assert game_session.play() == 0
    assert message in " ".join(err.getvalue().split())
    assert message not in out.getvalue()
    assert "> you: " not in out.getvalue()  # no move was made for the person


def test_errors_and_unknown_commands_go_to_stderr_and_the_board_to_stdout() -> None:
    code, out, err = run_play(["--seed", "2", "--bots", "random"], ["frobnicate", "99", "", "save", "quit", "n"])
    assert code == 0
    for message in ("Not understood", "There is no move number 99", "Nothing typed", "Save where?"):
        assert message in err and message not in out
    assert "Keltis, 2 players" in out and "Keltis, 2 players" not in err


def test_the_game_record_can_be_saved_at_the_end_of_a_game(tmp_path: Path) -> None:
    path = tmp_path / "end.json"
    for game in ("keltis", "dice"):
        stdin = _Answers(lambda state, game=game: "reroll" if game == "dice" and state.phase == 0 else "1")
        game_session, out = session(stdin, game=game, seed=9)
        stdin.session = game_session
        stdin.answer = lambda state, game=game: "reroll" if game == "dice" and state.phase == 0 else "1"
        game_session.offer_save = lambda g=game_session: g.save(str(path))  # type: ignore[method-assign]
        assert game_session.play() == 0
        assert f"Game record saved to {path}" in out.getvalue()
        record = load_record(path)
        assert game == record.GAME and record.replay() == game_session.state and game_session.state.is_over


def test_save_answer_at_the_end_writes_the_record(tmp_path: Path) -> None:
    path = tmp_path / "asked.json"
    answers = ["y", str(path)]
    stdin = _Answers(lambda state: "1")
    game_session, out = session(stdin, seed=6, options={"max_turns": 6})
    stdin.session = game_session
    stdin.readline = lambda size=-1: (answers.pop(0) if game_session.state.is_over else "1") + "\n"  # type: ignore
    assert game_session.play() == 0 and "The game was truncated after 6 turns." in out.getvalue()
    assert f"Game record saved to {path}" in out.getvalue() and not answers
    assert load_record(path).replay().truncated


def help_text(game: str, players: int = 2) -> str:
    out = io.StringIO()
    game_session = play_cli.PlaySession(game, players, ["random"] * (players - 1), seat=0, seed=1,
                                        console=play_cli.Console(io.StringIO(), out, io.StringIO()))
    game_session.command("help", "", game_session.state.legal_actions())
    return out.getvalue()


def marks(text: str) -> set[str]:
    """The marks of a text board or legend: tiles such as ``[W]``, symbols (``*``, ``^``,
    ``..``, ``x``, ``-``, ``(``) and words, each number taken out (``S4*`` gives ``S`` and ``*``)."""
    found = set(re.findall(r"\[\w\]", text))
    text = re.sub(r"\[\w\]", " ", text)
    for token in re.split(r"[\s|,:;']+", text):
        token = re.sub(r"[+-]?\d+", " ", token)
        found.update(re.findall(r"[A-Za-z]+|\.\.|[^\w\s.]", token))
    return found


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_help_has_a_legend_with_every_mark_the_board_shows(game: str) -> None:
    from keltis_env.games.dice.constants import FACE_NAMES

    legend = marks(help_text(game).split("Board:", 1)[1])
    shown: set[str] = set()
    for players in (2, 3, 4):
        for state in random_states(game, players, 40, seed=10 + players):
            for line in get_game(game).board_text(state, **({"show_hands": "all"} if game == "keltis" else {}))\
                    .splitlines()[1:]:  # the first line is the status, in words
                shown |= marks(line)
    missing = shown - legend - set(FACE_NAMES)
    assert not missing, f"marks of the board the help does not explain: {sorted(missing)}"
    for mark in ("[W]", "[C]", "[1]", "[3]", "*", "^", "v", "x") if game == "keltis" else ("[S]", "[X]"):
        assert mark in shown and mark in legend


@pytest.mark.parametrize("game", ["keltis", "dice"])
def test_help_fits_80_columns(game: str) -> None:
    lines = help_text(game).splitlines()
    assert max(len(line) for line in lines) <= play_cli.WIDTH and len(lines) <= play_cli.ROWS
