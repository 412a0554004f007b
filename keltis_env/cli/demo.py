"""``keltis demo``: play and print one seeded game between bots."""

from __future__ import annotations

import argparse

HELP = "play and print one seeded game between random players (or other bots)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--players", type=int, default=2, choices=[2, 3, 4])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bots", nargs="+", metavar="AGENT", help="one agent spec per seat (default: random)")
    p.add_argument("--every", choices=["turn", "end"], default="turn", help="print the board every turn or at the end")
    p.add_argument("--record", metavar="PATH", help="save the game record (JSON) here")


def run(args: argparse.Namespace) -> int:
    from keltis_env.bots import make_bot
    from keltis_env.games.keltis import GameConfig, GameRecord, Phase, action_to_string
    from keltis_env.games.keltis.render_text import board_text

    specs = args.bots or ["random"] * args.players
    if len(specs) != args.players:
        raise SystemExit(f"keltis demo: --bots needs {args.players} agent specs (one per seat), got {len(specs)}")
    bots = [make_bot(spec, seed=args.seed * 100 + i) for i, spec in enumerate(specs)]
    record, state = GameRecord.start(GameConfig(num_players=args.players), args.seed, players=specs)
    print(f"Keltis demo: seed {args.seed}, seats: {', '.join(f'{i}={s}' for i, s in enumerate(specs))}\n")
    print(board_text(state, show_hands="all"))
    moves: list[str] = []
    while not state.is_over:
        seat = state.current
        action = bots[seat].act(state.view(seat))
        moves.append(action_to_string(action))
        state.apply(action)
        record.actions.append(action)
        if state.phase == Phase.PLAY or state.is_over:
            if args.every == "turn":
                print(f"\nturn {state.turn}: player {seat}: {'; '.join(moves)}")
            moves = []
    if args.every == "turn":
        print()
    print(board_text(state, show_hands=None))
    scores = state.scores()
    winners = state.winners()
    kind = "truncated" if state.truncated else f"ended ({state.end.name.lower()})"
    print(f"\nGame {kind} after {state.turn} turns. Scores: {scores}. Winner(s): {winners}")
    if args.record:
        record.save(args.record)
        print(f"record saved to {args.record}")
    return 0
