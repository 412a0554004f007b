"""``keltis replay``: step through a recorded game, as text or as PNG frames, or write it
as one self-contained HTML file (``--html FILE``: the board, the moves, a slider and the
arrow keys; it opens offline, the same file ``keltis serve`` exports). With ``--search`` the
file holds the search's answer at every decision too, each move marked against its choice,
as ``keltis serve``'s whole-game search marks them (:func:`keltis_env.web.analysis.search_game`).

The record (``keltis play --save``, ``keltis demo --record``, evaluation runs) is loaded
with :func:`keltis_env.core.game.load_record`, which knows every game of the package. The
positions are printed as text boards (``--step`` waits for Enter between them) or
written as pictures (``--frames DIR``, for every game that draws pictures; the folder is
checked, or created, before anything is replayed and each frame is written atomically,
:mod:`keltis_env.core.output_files`), one per decision or one per turn. Replaying the
whole record must reproduce it exactly: the final scores and the end reason are checked
against the ones stored in the record, and the final state against an independent
replay; a mismatch, a corrupt file or a missing file is reported as a clear error (exit
status 2) instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from keltis_env.cli.arguments import add_search_iterations, print_error

HELP = "step through a recorded game as text, write its positions as PNG frames, or as one HTML file"

HAND_CHOICES = {"all": "all", "current": "current", "none": None}


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.core.game import game_names

    p.add_argument("record", metavar="RECORD", help="a game record (JSON), e.g. from keltis play --save")
    p.add_argument(
        "--game", choices=game_names(), help="refuse a record of another game (default: the record names its game)"
    )
    p.add_argument("--step", action="store_true", help="wait for Enter between positions ('q' stops)")
    p.add_argument(
        "--every",
        choices=["decision", "turn"],
        default="decision",
        help="show the position after every decision (default) or after every turn",
    )
    p.add_argument("--frames", metavar="DIR", help="write the positions as PNG pictures into DIR instead of text")
    p.add_argument("--html", metavar="FILE",
                   help="write the whole game as one HTML file that opens offline in a browser, instead of text")
    p.add_argument("--search", action="store_true",
                   help="with --html: the search at every decision (every seat's), each move marked against its choice")
    add_search_iterations(p)
    p.add_argument("--upto", type=int, metavar="K", help="stop after the first K decisions")
    p.add_argument(
        "--hands",
        choices=list(HAND_CHOICES),
        default="all",
        help="whose hands the boards show (default: all; it is a finished game)",
    )


class ReplayError(ValueError):
    """The record cannot be replayed or does not reproduce its stored result."""


def load(path: str | Path) -> tuple[dict[str, Any], Any]:
    """The record's raw JSON and the loaded record; :class:`ReplayError` for a missing,
    unreadable, corrupt or inconsistent file."""
    from keltis_env.core.errors import RecordError
    from keltis_env.core.game import load_record
    from keltis_env.core.record import read_record_json

    try:
        data = read_record_json(path)  # bounded: a regular file, of limited size
    except RecordError as exc:
        raise ReplayError(str(exc)) from None
    if not isinstance(data, Mapping):
        raise ReplayError(f"{path} is not a game record: expected a JSON object")
    try:
        record = load_record(data)
    except (RecordError, ValueError) as exc:  # ValueError: an unknown game name
        raise ReplayError(f"{path}: {exc}") from None
    return data, record


def positions(
    record: Any, every: str = "decision", upto: int | None = None
) -> Iterator[tuple[int, Any, int, list[str]]]:
    """``(k, state, mover, moves)`` for the start (k = 0, no moves) and then after every
    decision or every turn, up to ``upto`` decisions: ``state`` is the position after the
    first ``k`` actions, ``moves`` the texts of the actions since the previous position
    and ``mover`` the seat that made them. The state is live: copy it to keep it."""
    state = record.initial_state()
    actions = record.actions if upto is None else record.actions[: max(upto, 0)]
    yield 0, state, state.current_player, []
    moves: list[str] = []
    mover = state.current_player
    for i, action in enumerate(actions):
        turn = getattr(state, "turn", None)
        if not moves:
            mover = state.current_player
        try:
            state.apply(action)
        except ValueError as exc:
            raise ReplayError(f"action {i} ({record.action_to_string(action)}) does not replay: {exc}") from None
        moves.append(record.action_to_string(action))
        last = i == len(actions) - 1
        if every == "decision" or last or state.is_over or getattr(state, "turn", None) != turn:
            yield i + 1, state, mover, moves
            moves = []


def verify(data: Mapping[str, Any], record: Any, final: Any) -> None:
    """The replayed ``final`` state must reproduce the record's stored result and equal an
    independent replay of the record."""
    stored = data.get("final_scores")
    if stored is not None and stored != final.scores():
        raise ReplayError(f"the record says final scores {stored}, but replaying it gives {final.scores()}")
    end = data.get("end")
    got = final.end.name.lower() if final.is_over else None
    if end is not None and end != got:
        raise ReplayError(f"the record says the game ended by {end!r}, but replaying it gives {got!r}")
    if stored is not None and not final.is_over:
        raise ReplayError("the record has final scores, but replaying it does not finish the game")
    if final != record.replay():
        raise ReplayError("replaying the record step by step and at once give different final states")


def run(
    args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    from keltis_env.cli.play import Console
    from keltis_env.cli.screen import call_supported
    from keltis_env.core.game import get_game
    from keltis_env.core.output_files import OutputPathError, check_output_dir, check_output_file

    console = Console(stdin, stdout)
    err = stderr if stderr is not None else sys.stderr
    say = console.say
    if args.upto is not None and args.upto < 0:
        print("keltis replay: error: --upto must be 0 or more", file=err)
        return 2
    try:
        data, record = load(args.record)
        if args.game is not None and args.game != record.GAME:
            raise ReplayError(f"{args.record} is a record of the game {record.GAME!r}, not {args.game!r}")
        spec = get_game(record.GAME)
        if args.frames is not None and not spec.has_pictures:
            raise ReplayError(f"the game {record.GAME!r} has no picture; replay it as text (without --frames)")
        if args.html is not None and args.frames is not None:
            raise ReplayError("--html and --frames write different outputs; give one of them")
        if args.search and args.html is None:
            raise ReplayError("--search marks the moves of the replay file: give --html FILE too")
        if args.html is not None:
            target = check_output_file(args.html, "the replay file (--html)")
            if args.search:  # a record that does not reproduce its result is refused before the search
                verify(data, record, record.replay())
            searches = _search(record, args.search_iterations, say) if args.search else None
            return _write_html(data, record, target, say, searches)
        frames = check_output_dir(args.frames, "the frames folder (--frames)") if args.frames is not None else None
        names = record.players
        hands = HAND_CHOICES[args.hands]
        total = len(record.actions)
        last = total if args.upto is None else min(args.upto, total)
        width = max(4, len(str(total)))
        say(f"{record.GAME} record {args.record}: {total} decisions, players: {_players(record, names)}")
        shown = written = 0
        state = None
        k = 0
        stopped = False
        for k, state, mover, moves in positions(record, args.every, args.upto):
            if frames is not None:
                _write_frame(spec.board_image, state, hands, names, frames / f"position_{k:0{width}d}.png")
                written += 1
                continue
            say()
            if k == 0:
                say(f"=== start (position 0 of {total})")
            else:
                say(f"=== position {k} of {total} | player {mover}{_name(names, mover)}: {'; '.join(moves)}")
            say(call_supported(spec.board_text, state, show_hands=hands))
            shown += 1
            if args.step and k < last:
                answer = console.ask("Enter: next position, q: stop> ")
                if answer is None or answer.strip().lower() in ("q", "quit"):
                    stopped = True
                    break
        if frames is not None:
            say(f"wrote {written} frames (positions 0..{k}) to {frames}/")
        assert state is not None
        if stopped or k < total:
            say(f"stopped at position {k} of {total}")
            return 0
        verify(data, record, state)
    except (ReplayError, OutputPathError) as exc:
        print_error("keltis replay", exc, err)
        return 2
    except KeyboardInterrupt:
        say()
        return 130
    scores = ", ".join(f"player {p}{_name(names, p)} {s}" for p, s in enumerate(state.scores()))
    say(f"Final scores: {scores}. The replay reproduces the record's final state.")
    return 0


#: the time the search may take at one position of ``--search`` (seconds)
SEARCH_SECONDS = 600.0


def _search(record: Any, iterations: int, say: Any) -> dict[int, dict[str, Any]]:
    """The search's answer at every decision of ``record`` (:func:`keltis_env.web.analysis.search_game`)."""
    import time

    from keltis_env.bots import bot_names
    from keltis_env.core.game import get_game
    from keltis_env.web.analysis import SEARCH_BOT, search_game, search_spec

    game = get_game(record.GAME)
    if SEARCH_BOT not in bot_names(game.name):
        raise ReplayError(f"the game {game.name!r} has no {SEARCH_BOT} bot to search with; leave out --search")
    spec = search_spec(game.name, iterations)
    found: dict[int, dict[str, Any]] = {}
    total = len(record.actions)
    began = time.perf_counter()

    def report(k: int, answer: dict[str, Any]) -> None:
        found[k] = answer
        if (k + 1) % 20 == 0 or k + 1 == total:
            say(f"searched {k + 1} of {total} positions ({time.perf_counter() - began:.1f} s)")

    try:
        search_game(game, record.states(), list(record.actions), spec, SEARCH_SECONDS, report)
    except TimeoutError as exc:
        raise ReplayError(str(exc)) from None
    failed = sum(1 for answer in found.values() if "error" in answer)
    say(f"the search ({spec}) at {total} positions took {time.perf_counter() - began:.1f} s"
        + (f"; it failed at {failed} of them" if failed else ""))
    return found


def _write_html(data: Mapping[str, Any], record: Any, target: Path, say: Any,
                searches: dict[int, dict[str, Any]] | None = None) -> int:
    """Check that ``record`` replays to its stored result, then write its replay file (with
    the search's answers ``searches``, where given)."""
    from keltis_env.core.output_files import atomic_write_text
    from keltis_env.web.export import replay_html

    verify(data, record, record.replay())
    try:
        atomic_write_text(target, replay_html(record, None, searches))
    except OSError as exc:
        raise ReplayError(f"cannot write {target}: {exc}") from None
    say(f"wrote the replay of {len(record.actions)} decisions to {target} (open it in a browser)")
    return 0


def _name(names: list[str] | None, p: int) -> str:
    return f" ({names[p]})" if names and p < len(names) else ""


def _players(record: Any, names: list[str] | None) -> str:
    n = record.config.num_players
    return ", ".join(f"{p}{_name(names, p)}" for p in range(n))


def _write_frame(board_image: Any, state: Any, hands: Any, names: list[str] | None, path: Path) -> None:
    import io

    from keltis_env.cli.screen import call_supported
    from keltis_env.core.output_files import atomic_write_bytes
    from keltis_env.core.render_image import RenderUnavailableError, save_png

    try:
        png = io.BytesIO()
        save_png(call_supported(board_image, state, show_hands=hands, names=names), png)
        atomic_write_bytes(path, png.getvalue())
    except RenderUnavailableError as exc:
        raise ReplayError(str(exc)) from None
    except OSError as exc:
        raise ReplayError(f"cannot write {path}: {exc}") from None
