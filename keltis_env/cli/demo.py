"""``keltis demo``: play and print one seeded game between bots, of any game of the package.

The game is found by name in the registry (:func:`keltis_env.core.game.get_game`) and
played to its end by the match loop (:func:`keltis_env.core.match.play_game`); the moves
are then printed turn by turn from the game's record, and the record is saved with
``--record``. The output path is checked before the game starts and the record is written
atomically (:mod:`keltis_env.core.output_files`).
"""

from __future__ import annotations

import argparse
import json

from keltis_env.cli.arguments import print_error

HELP = "play and print one seeded game between random players (or other bots)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.core.game import game_names

    p.add_argument("--game", choices=game_names(), default="keltis", help="which game (default: keltis)")
    p.add_argument("--players", type=int, default=2, help="number of players (default 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bots", nargs="+", metavar="AGENT", help="one agent spec per seat (default: random)")
    p.add_argument(
        "--every", choices=["turn", "end"], default="turn", help="print the moves every turn or only the end"
    )
    p.add_argument("--record", metavar="PATH", help="save the game record (JSON) here")


def run(args: argparse.Namespace) -> int:
    from keltis_env.bots import make_bot
    from keltis_env.cli.replay import positions
    from keltis_env.cli.screen import call_supported
    from keltis_env.core.game import get_game
    from keltis_env.core.match import play_game
    from keltis_env.core.output_files import atomic_write_text, check_output_file

    spec = get_game(args.game)
    specs = args.bots or ["random"] * args.players
    try:
        record_path = check_output_file(args.record, "the game record (--record)") if args.record is not None else None
        spec.make_config(num_players=args.players)  # a wrong player count names the allowed range
        if len(specs) != args.players:
            raise ValueError(f"--bots needs {args.players} agent specs (one per seat), got {len(specs)}")
        bots = [
            make_bot(s, seed=args.seed * 100 + i, game=spec.name, num_players=args.players) for i, s in enumerate(specs)
        ]
    except ValueError as exc:
        print_error("keltis demo", exc)
        return 2

    state, result = play_game(spec, bots, args.seed, record=True)
    record = spec.record_cls(config=state.config, seed=args.seed, actions=list(result.actions), players=specs)

    print(f"Demo of {spec.long_name}: seed {args.seed}, seats: {', '.join(f'{i}={s}' for i, s in enumerate(specs))}\n")
    for k, position, mover, moves in positions(record, "turn"):
        if k == 0:
            print(call_supported(spec.board_text, position, show_hands="all"))
        elif args.every == "turn":
            print(f"\nturn {position.turn}: player {mover}: {'; '.join(moves)}")
    if args.every == "turn":
        print()
    print(call_supported(spec.board_text, state, show_hands=None))
    kind = "truncated" if state.truncated else f"ended ({state.end.name.lower()})"
    print(f"\nGame {kind} after {state.turn} turns. Scores: {list(result.scores)}. Winner(s): {state.winners()}")
    if record_path is not None:
        atomic_write_text(record_path, json.dumps(record.to_dict(), indent=1))
        print(f"record saved to {record_path}")
    return 0
