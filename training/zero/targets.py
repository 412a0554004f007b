"""What a setting of the search gives the loop: how much of its improved policy (the fits'
target) is noise, and how much it and the move it plays gain over the network's own
policy, in points of score margin, judged by many rollouts of each candidate move.

    python -m training.zero.targets policies/keltis_2p.zip --search simulations=32,depth=64 \\
        --search simulations=128,depth=64,q_range=1.0

The positions come from games the network's file plays against itself as the ``ppo`` bot,
each stopped after a number of moves drawn from ``--seed``. At each, the network's ``--candidates``
most likely moves are judged by ``--rollouts`` simulations each (the search's own rollouts,
``depth`` 64: the network plays both seats on, its moves drawn from its policy, to the end of
the game or :data:`keltis_env.bots.gumbel.MAX_MOVES` moves), every candidate in the same
worlds; a candidate's value is their mean. Each ``--search`` (options of the ``gumbel`` bot:
``simulations``, ``top_k``, ``c_visit``, ``c_scale``, ``q_range``, ``depth``, ``replies``,
``temperature``)
then searches every position ``--repeats`` times with other random numbers and reports:

- ``H``: the targets' entropy (the network's own, ``prior H``, is printed first);
- ``noise``: the KL from one search's targets to another's on the same positions;
- ``moved``: the KL from the targets to the network's policy;
- ``target gain``: the value of the targets less that of the network's policy, over the
  judged candidates (both renormalised on them), in points, with its standard error over the
  positions;
- ``move gain``: the value of the move the search plays (no root noise) less that of the
  network's most likely move, in points (a move outside the candidates is not counted);
- ``agreed``: the share of positions where the targets' most likely move is the network's,
  and where two searches' targets have the same most likely move (how much of the search's
  overruling of the network a second search of the position would repeat).

The judged values hold their own noise: the root mean square difference of a candidate's
value between the two halves of its rollouts is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..common.cli import check_json_out, print_error_line, quiet_threads
from ..common.config import ConfigError

quiet_threads()

#: the ``gumbel`` bot's options a ``--search`` may set
SEARCH_OPTIONS = ("simulations", "top_k", "c_visit", "c_scale", "q_range", "depth", "replies", "temperature")
POINTS = 50.0  # a score reward of 1 is 50 points of margin (keltis_env.core.rewards.SCORE_SCALE)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training.zero.targets", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("net", metavar="POLICY", help="a policy file with a value head of the score reward")
    p.add_argument("--search", action="append", metavar="OPTIONS",
                   help="a setting of the search, as the gumbel bot's options (repeatable; default "
                        "simulations=32,depth=64)")
    p.add_argument("--positions", type=int, default=200, help="games played to a position (default 200; positions "
                                                              "with one legal move or at the end are skipped)")
    p.add_argument("--candidates", type=int, default=8, help="the network's most likely moves judged (default 8)")
    p.add_argument("--rollouts", type=int, default=128, help="rollouts judging each candidate (default 128)")
    p.add_argument("--repeats", type=int, default=2, help="searches of each setting (default 2, at least 2)")
    p.add_argument("--seed", type=int, default=0, help="the positions, the judging worlds and the searches")
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    return p


def parse_search(text: str) -> dict[str, Any]:
    """A ``--search`` text as :class:`~keltis_env.bots.gumbel.GumbelSearch` keywords."""
    from keltis_env.bots import parse_spec

    try:
        _, options = parse_spec(f"gumbel:{text}")
    except ValueError as exc:
        raise ConfigError(f"--search {text!r}: {exc}") from None
    unknown = sorted(set(options) - set(SEARCH_OPTIONS))
    if unknown:
        raise ConfigError(f"--search {text!r}: unknown option {unknown[0]!r}; allowed: {', '.join(SEARCH_OPTIONS)}")
    replies = options.pop("replies", "sample")
    if replies not in ("sample", "best"):
        raise ConfigError(f"--search {text!r}: replies must be sample or best, got {replies!r}")
    return {"simulations": 32, "depth": 64, **options, "sample_replies": replies == "sample"}


def check_args(args: argparse.Namespace) -> list[dict[str, Any]]:
    for name, least in (("positions", 1), ("candidates", 2), ("rollouts", 2), ("repeats", 2)):
        value = getattr(args, name)
        if not least <= value <= 100_000:
            raise ConfigError(f"--{name} must be from {least} to 100000, got {value}")
    if not 0 <= args.seed < 2**63:
        raise ConfigError(f"--seed must be from 0 to 2**63 - 1, got {args.seed}")
    return [parse_search(text) for text in (args.search or ["simulations=32,depth=64"])]


def play_positions(path: str, num_players: int, count: int, seed: int) -> list[Any]:
    """Positions of the file's ``ppo`` bot playing itself, stopped after 0-109 moves."""
    from keltis_env.bots import make_bot
    from keltis_env.games.keltis import GameConfig, GameState

    bot = make_bot(f"ppo:{path}", seed=seed, num_players=num_players)
    rng = random.Random(seed)
    found = []
    for g in range(count):
        state = GameState.new_game(GameConfig(num_players=num_players), seed=seed * 100_003 + g)
        for _ in range(rng.randrange(0, 110)):
            if state.is_over:
                break
            state.apply(bot.act(state.view(state.current_player)))
        if not state.is_over and len(state.legal_actions()) > 1:
            found.append(state)
    return found


class Judge:
    """The judged values of the network's candidates at the positions ``roots``."""

    def __init__(self, network: Any, num_players: int, features: tuple[str, ...], roots: np.ndarray,
                 candidates: int, rollouts: int, seed: int) -> None:
        from keltis_env.bots.gumbel import GumbelSearch

        self.roots = roots
        self.judge = GumbelSearch(network, num_players, features=features, depth=64, seed=seed)
        self.mes = roots[:, self.judge.current].astype(np.int64)
        obs, masks = self.judge.observe(roots, self.mes)
        logits = np.where(masks, np.asarray(network.logits(obs), np.float64), -np.inf)
        logp = logits - logits.max(axis=1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
        self.prior = np.where(masks, np.exp(logp), 0.0)
        order = np.argsort(-np.where(masks, logp, -np.inf), axis=1, kind="stable")[:, :candidates]
        self.first = order[:, 0]
        self.values = np.full(self.prior.shape, np.nan)
        self.half_rms = self._judge(order, np.minimum(candidates, masks.sum(axis=1)), rollouts, seed)

    def _judge(self, order: np.ndarray, count: np.ndarray, rollouts: int, seed: int) -> float:
        rows = np.repeat(np.arange(len(order)), count)
        acts = np.concatenate([order[r, :c] for r, c in enumerate(count)])
        worlds = np.random.default_rng([seed, 0x7A]).integers(0, 2**63, size=(len(order), rollouts), dtype=np.int64)
        of_root = np.repeat(rows, rollouts)
        seeds = worlds[of_root, np.tile(np.arange(rollouts), len(rows))].astype(np.uint64)
        moves = np.repeat(acts, rollouts)
        chunk = 16_384
        got = np.concatenate([self.judge.simulate(self.roots, self.mes, of_root[i:i + chunk], moves[i:i + chunk],
                                                  seeds[i:i + chunk]) for i in range(0, len(moves), chunk)])
        got = got.reshape(len(rows), rollouts)
        self.values[rows, acts] = got.mean(axis=1)
        half = rollouts // 2
        return float(POINTS * np.sqrt(np.mean((got[:, :half].mean(axis=1) - got[:, half:2 * half].mean(axis=1)) ** 2)))

    def value_of(self, policy: np.ndarray) -> np.ndarray:
        """The value of ``policy`` renormalised on the judged candidates, a position each."""
        judged = ~np.isnan(self.values)
        weights = np.where(judged, policy, 0.0)
        total: np.ndarray = (weights * np.nan_to_num(self.values)).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-12)
        return total


def entropy(p: np.ndarray) -> float:
    q = np.clip(p, 1e-12, 1.0)
    return float(-(np.where(p > 0, p * np.log(q), 0.0)).sum(axis=1).mean())


def kl(p: np.ndarray, q: np.ndarray) -> float:
    a, b = np.clip(p, 1e-12, 1.0), np.clip(q, 1e-12, 1.0)
    return float(np.where(p > 0, p * (np.log(a) - np.log(b)), 0.0).sum(axis=1).mean())


def measure(judge: Judge, network: Any, num_players: int, features: tuple[str, ...], options: dict[str, Any],
            repeats: int, seed: int) -> dict[str, Any]:
    """One ``--search`` setting's row (see the module)."""
    from keltis_env.bots.gumbel import GumbelSearch

    started = time.perf_counter()
    rows = np.arange(len(judge.roots))
    targets, target_gain, move_gain = [], [], []
    base = judge.value_of(judge.prior)
    first = judge.values[rows, judge.first]
    for r in range(repeats):
        for noise in (True, False):
            search = GumbelSearch(network, num_players, features=features, noise=noise, seed=seed * 1_000 + r,
                                  **options)
            result = search.search(judge.roots, judge.mes)
            if noise:
                targets.append(result["policy"].astype(np.float64))
                target_gain.append(POINTS * (judge.value_of(targets[-1]) - base))
            else:
                move_gain.append(POINTS * (judge.values[rows, result["action"]] - first))
    tg, mg = np.mean(target_gain, axis=0), np.mean(move_gain, axis=0)
    counted = ~np.isnan(mg)
    noise_kl = np.mean([kl(targets[i], targets[i + 1]) for i in range(repeats - 1)])
    firsts = [np.argmax(t, axis=1) for t in targets]  # zero off the legal moves
    agree_network = float(np.mean([f == judge.first for f in firsts]))
    agree_repeat = float(np.mean([firsts[i] == firsts[i + 1] for i in range(repeats - 1)]))
    return {"search": describe(options), "entropy": np.mean([entropy(t) for t in targets]),
            "agree_network": agree_network, "agree_repeat": agree_repeat,
            "noise": float(noise_kl), "moved": float(np.mean([kl(t, judge.prior) for t in targets])),
            "target_gain": float(tg.mean()), "target_gain_se": float(tg.std() / math.sqrt(len(tg))),
            "move_gain": float(mg[counted].mean()) if counted.any() else math.nan,
            "move_gain_se": float(mg[counted].std() / math.sqrt(counted.sum())) if counted.any() else math.nan,
            "moves_counted": int(counted.sum()), "seconds": time.perf_counter() - started}


def describe(options: dict[str, Any]) -> str:
    shown = {k: v for k, v in options.items() if k != "sample_replies"}
    if not options.get("sample_replies", True):
        shown["replies"] = "best"
    return ",".join(f"{k}={v}" for k, v in shown.items())


def run(args: argparse.Namespace, log: Any = print) -> list[dict[str, Any]]:
    from keltis_env.bots.gumbel import GumbelSearch, MLPNetwork
    from keltis_env.games.keltis.bots.compiled import pack_view
    from keltis_env.policy import load_policy

    settings = check_args(args)
    policy = load_policy(args.net)
    policy.info.check("keltis", None)
    if not policy.has_value or policy.info.value_target != "score":
        raise ConfigError(f"{args.net!r} needs a value head of the score reward (the search reads values as score "
                          "rewards)")
    network, n = MLPNetwork.from_policy(policy), policy.info.num_players
    features = tuple(policy.info.features)
    for options in settings:  # each setting's values checked before any work
        try:
            GumbelSearch(network, n, features=features, **options)
        except ValueError as exc:
            raise ConfigError(f"--search {describe(options)!r}: {exc}") from None
    states = play_positions(args.net, n, args.positions, args.seed)
    if not states:
        raise ConfigError(f"--positions {args.positions} gave no position with two legal moves; give more")
    roots = np.stack([pack_view(s.view(s.current_player)) for s in states])  # what the seat sees, the rest zero
    log(f"{len(states)} positions; judging {args.candidates} candidates by {args.rollouts} rollouts each ...")
    judge = Judge(network, n, features, roots, args.candidates, args.rollouts, args.seed)
    log(f"judged: a candidate's value, the two halves of its rollouts apart: {judge.half_rms:.2f} points rms; "
        f"prior H {entropy(judge.prior):.3f}")
    rows = []
    for options in settings:
        row = measure(judge, network, n, features, options, args.repeats, args.seed)
        rows.append(row)
        log(f"{describe(options)}: H {row['entropy']:.3f}, noise {row['noise']:.3f}, moved {row['moved']:.3f}, "
            f"target gain {row['target_gain']:+.3f} ± {row['target_gain_se']:.3f}, move gain "
            f"{row['move_gain']:+.3f} ± {row['move_gain_se']:.3f} points; most likely move agreed with the "
            f"network's {row['agree_network']:.1%}, with another search's {row['agree_repeat']:.1%} "
            f"({row['seconds']:.0f} s)")
    if args.json:
        head = {"net": args.net, "positions": len(states), "candidates": args.candidates, "rollouts": args.rollouts,
                "seed": args.seed, "judged_half_rms": judge.half_rms, "prior_entropy": entropy(judge.prior)}
        Path(args.json).write_text(json.dumps({**head, "rows": rows}, indent=1) + "\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    check_json_out(parser, args.json, "the rows")
    try:
        run(args)
    except (ConfigError, ValueError) as exc:  # a policy file refused (PolicyLoadError) is a ValueError
        print_error_line(f"python -m training.zero.targets: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
