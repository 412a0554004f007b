"""``keltis render``: one picture of a seeded position (e.g. the README's ``docs/board.png``).

The position is reached by a seeded game between bots (random by default, so the
picture never changes unless the rules or the drawing do), taken after ``--turns``
turns are complete, or taken from a game record after ``--upto`` decisions. Any game of
the package that draws pictures can be rendered (``--game``; a record names its own
game). The bots play the game through the match loop
(:func:`keltis_env.core.match.play_game`). The output path is checked before anything is
played or drawn, and the PNG file is written atomically (:mod:`keltis_env.core.output_files`).
"""

from __future__ import annotations

import argparse
import io
from typing import Any

from keltis_env.cli.arguments import print_error

HELP = "draw one position as a PNG picture (a seeded game between bots, or a record)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.cli.replay import HAND_CHOICES
    from keltis_env.core.game import game_names

    p.add_argument("--out", required=True, metavar="PATH", help="the PNG file to write (missing folders are created)")
    p.add_argument(
        "--game", choices=game_names(), help="which game (default: keltis, or the record's game with --record)"
    )
    p.add_argument("--seed", type=int, default=0, help="the deal and the bots' seeds (default 0)")
    p.add_argument("--players", type=int, default=2, help="number of players (default 2)")
    p.add_argument("--bots", nargs="+", metavar="AGENT", help="one agent spec per seat (default: random)")
    p.add_argument("--turns", type=int, default=20, help="play this many turns first (default 20)")
    p.add_argument("--record", metavar="RECORD", help="draw a position of this game record instead")
    p.add_argument("--upto", type=int, metavar="K", help="with --record: the position after K decisions")
    p.add_argument(
        "--hands",
        choices=list(HAND_CHOICES),
        default="current",
        help="whose hands to show, in games with hidden hands (default: the player to act)",
    )


def run(args: argparse.Namespace) -> int:
    from keltis_env.cli.replay import HAND_CHOICES, ReplayError
    from keltis_env.cli.screen import call_supported
    from keltis_env.core.output_files import atomic_write_bytes, check_output_file
    from keltis_env.core.render_image import RenderUnavailableError, save_png
    from keltis_env.core.text import terminal_text

    try:
        out = check_output_file(args.out, "the picture (--out)")
        state, spec, names = _position(args)
        if not spec.has_pictures:
            raise ReplayError(f"the game {spec.name!r} has no picture")
        image = call_supported(spec.board_image, state, show_hands=HAND_CHOICES[args.hands], names=names)
        png = io.BytesIO()
        save_png(image, png)
        atomic_write_bytes(out, png.getvalue())
    except (ValueError, RenderUnavailableError, OSError) as exc:
        print_error("keltis render", exc)
        return 2
    print(terminal_text(f"wrote {out} ({image.shape[1]}x{image.shape[0]}): the position after {state.turn} turns, "
                        f"{state!r}"))
    return 0


def _position(args: argparse.Namespace) -> tuple[Any, Any, list[str] | None]:
    """The position to draw, its game's descriptor and the seats' names; ``ValueError``
    (with the reason) for options that do not fit together."""
    from keltis_env.bots import make_bot
    from keltis_env.cli.replay import ReplayError, load
    from keltis_env.core.game import get_game
    from keltis_env.core.match import Match

    if args.record is not None:
        _, record = load(args.record)
        if args.game is not None and args.game != record.GAME:
            raise ReplayError(f"{args.record} is a record of the game {record.GAME!r}, not {args.game!r}")
        total = len(record.actions)
        if args.upto is not None and not 0 <= args.upto <= total:
            raise ReplayError(f"--upto must be from 0 to {total} (the record's decisions), got {args.upto}")
        return record.replay(args.upto), get_game(record.GAME), record.players
    if args.upto is not None:
        raise ReplayError("--upto needs --record (a seeded game is cut with --turns)")
    if args.turns < 0:
        raise ReplayError(f"--turns must be 0 or more, got {args.turns}")
    spec = get_game(args.game or "keltis")
    names = args.bots or ["random"] * args.players
    spec.make_config(num_players=args.players)  # a wrong player count names the allowed range
    if len(names) != args.players:
        raise ReplayError(f"--bots needs {args.players} agent specs (one per seat), got {len(names)}")
    bots = [
        make_bot(s, seed=args.seed * 100 + i, game=spec.name, num_players=args.players) for i, s in enumerate(names)
    ]
    # The bots play until ``--turns`` turns are complete (or the game ends): the first
    # position with that many turns behind it.
    turns = args.turns
    match = Match(spec, spec.new_state(spec.make_config(num_players=args.players), args.seed), bots)
    match.play(stop=lambda state: state.turn >= turns)
    return match.state, spec, names
