"""``python -m training.bench.board SPEC OPPONENT``: how a card-game agent builds its board
against an opponent, at the end of each game: the paths it opened, its figures left in the
minus area (rows 1-3) and in the goal area (rows 7-9), the cards in its rows, its wishing
stones and its score, each side's mean over the games (2 players, seats alternating, deal
seeds ``seed .. seed + games - 1``).

    python -m training.bench.board ppo:policies/keltis_2p_scratch.zip heuristic --games 100
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from keltis_env.bots import make_bot
from keltis_env.core.match import play_game

#: the columns of :func:`board_stats`, in order
COLUMNS = ("score", "paths opened", "figures in the minus area", "figures in the goal area", "cards in rows",
           "wishing stones")


def board_stats(spec: str, opponent: str, games: int, seed: int = 1000) -> tuple[list[float], list[float]]:
    """The mean of each of :data:`COLUMNS` over ``games`` games, for ``spec`` and for ``opponent``."""
    totals = ([0.0] * len(COLUMNS), [0.0] * len(COLUMNS))
    for g in range(games):
        bots = [make_bot(spec, seed=g), make_bot(opponent, seed=g)]
        order = bots if g % 2 == 0 else bots[::-1]
        state, result = play_game("keltis", order, seed + g)
        for seat in range(2):
            side = 0 if (seat == 0) == (g % 2 == 0) else 1
            pos = state.pos[seat]
            row = (result.scores[seat], sum(p > 0 for p in pos), sum(1 <= p <= 3 for p in pos),
                   sum(p >= 7 for p in pos), sum(len(r) for r in state.rows[seat]), state.wishing[seat])
            for i, x in enumerate(row):
                totals[side][i] += x
    return [x / games for x in totals[0]], [x / games for x in totals[1]]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.bench.board", description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="the agent measured (an agent spec: ppo:FILE, heuristic, ...)")
    parser.add_argument("opponent", help="its opponent (an agent spec)")
    parser.add_argument("--games", type=int, default=100, help="games, seats alternating (default 100)")
    parser.add_argument("--seed", type=int, default=1000, help="the first game's deal seed (default 1000)")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f"--games must be at least 1, got {args.games}")
    mine, theirs = board_stats(args.spec, args.opponent, args.games, args.seed)
    width = max(map(len, COLUMNS))
    print(f"{'':{width}}  {args.spec}  against  {args.opponent}")
    for name, a, b in zip(COLUMNS, mine, theirs, strict=True):
        print(f"{name:{width}}  {a:8.2f}  {b:8.2f}")


if __name__ == "__main__":
    main()
