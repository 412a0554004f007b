"""``keltis render``: one picture of a seeded position (e.g. the README's ``docs/board.png``).

The position is reached by a seeded game between bots (random by default, so the
picture never changes unless the rules or the drawing do), played until ``--turns``
turns are complete, or taken from a game record after ``--upto`` decisions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "draw one position as a PNG picture (a seeded game between bots, or a record)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.cli.replay import HAND_CHOICES

    p.add_argument("--out", required=True, metavar="PATH", help="the PNG file to write")
    p.add_argument("--seed", type=int, default=0, help="the deal and the bots' seeds (default 0)")
    p.add_argument("--players", type=int, default=2, choices=[2, 3, 4])
    p.add_argument("--bots", nargs="+", metavar="AGENT", help="one agent spec per seat (default: random)")
    p.add_argument("--turns", type=int, default=20, help="play this many turns first (default 20)")
    p.add_argument("--record", metavar="RECORD", help="draw a position of this game record instead")
    p.add_argument("--upto", type=int, metavar="K", help="with --record: the position after K decisions")
    p.add_argument(
        "--hands",
        choices=list(HAND_CHOICES),
        default="current",
        help="whose hands to show (default: the player to act)",
    )


def run(args: argparse.Namespace) -> int:
    from keltis_env.bots import make_bot
    from keltis_env.cli.play import call_supported
    from keltis_env.cli.replay import HAND_CHOICES, ReplayError, load
    from keltis_env.core.game import get_game
    from keltis_env.core.pictures import RenderUnavailableError, save_png
    from keltis_env.games.keltis import GameConfig, GameState

    try:
        if args.record:
            _, record = load(args.record)
            state = record.replay(args.upto)
            names = record.players
            spec = get_game(record.GAME)
        else:
            names = args.bots or ["random"] * args.players
            if len(names) != args.players:
                raise ReplayError(f"--bots needs {args.players} agent specs (one per seat), got {len(names)}")
            bots = [make_bot(s, seed=args.seed * 100 + i) for i, s in enumerate(names)]
            state = GameState.new_game(GameConfig(num_players=args.players), args.seed)
            while not state.is_over and state.turn < args.turns:
                state.apply(bots[state.current].act(state.view(state.current)))
            spec = get_game("keltis")
        if not spec.has_pictures:
            raise ReplayError(f"the game {spec.name!r} has no picture")
        image = call_supported(spec.board_image, state, show_hands=HAND_CHOICES[args.hands], names=names)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        save_png(image, out)
    except (ValueError, RenderUnavailableError, OSError) as exc:
        print(f"keltis render: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({image.shape[1]}x{image.shape[0]}): the position after {state.turn} turns, {state!r}")
    return 0
