"""The expert-iteration loop: rounds of label, fit, gate and evaluate, every stage
resumable from the files it leaves in the run folder.

Round ``k`` (``net(k - 1)`` is the start network for ``k = 0``):

1. **label** (:mod:`.label`): the search guided by ``net(k - 1)`` plays ``label.games``
   games and labels its decisions, shard by shard (``round_k/labels/``), then
   ``round_k/label.json``;
2. **fit** (:mod:`.fit`): ``net(k - 1)`` fitted to the labels of the last ``label.window``
   rounds: ``round_k/network.zip``, then ``round_k/fit.json``;
3. **gate**: the new player (raw network or the search it guides, ``gate.player``) against
   the previous one over ``gate.games`` duplicate-deal games at seed ``gate.seed + k``;
   kept only with a win rate above 50% (above an equal share ``1/n`` with ``n`` players,
   the previous one in every other seat): ``net(k)`` is then the new network, else
   ``net(k - 1)`` (``round_k/gate.json``);
4. **evaluate**: the new network and the search it guides against ``eval.opponent`` at
   every reporting seed (``round_k/eval_network_seed7.json``, ...), then the report
   (:mod:`.report`) is written again.

A stage whose file exists is done, so ``--resume RUN`` goes on where the run stopped: in
the middle of labelling it labels the missing shards only, in the middle of a gate or an
evaluation it plays the missing games only (each keeps its games in a ``*_games/``
folder). Ctrl-C or SIGTERM stops the run between two files; SIGKILL loses at most the
shards and the stage in progress.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from keltis_env.core.output_files import atomic_write_text
from keltis_env.core.recorded_paths import recorded_text

from ..common.cli import Stopped, sigterm_stops
from .config import ExitConfig
from .fit import fit_round
from .label import label_round
from .report import write_report


def read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else None


def write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


class Run:
    """A run folder and its rounds (see the module doc)."""

    def __init__(self, config: ExitConfig, folder: Path, progress: bool = True, log: Any = None) -> None:
        self.config = config
        self.folder = folder
        self.progress = progress
        self.log = log or (lambda text: print(text, flush=True))

    # ------------------------------------------------------------------ paths
    def round_dir(self, k: int) -> Path:
        return self.folder / f"round_{k:03d}"

    @property
    def start(self) -> Path:
        return self.folder / "start.zip"

    def network(self, k: int) -> Path:
        """``net(k)``: the network round ``k`` ends with (``k = -1``: the start network)."""
        while k >= 0:
            gate = read_json(self.round_dir(k) / "gate.json")
            if gate is None:
                raise RuntimeError(f"round {k} has no gating result yet")
            if gate["kept"]:
                return self.round_dir(k) / "network.zip"
            k -= 1
        return self.start

    def search_spec(self, network: Path, k: int) -> str:
        """The labelling search of round ``k`` guided by ``network`` (or plain, per the config)."""
        s = self.config.search
        guided = s.guided and (k > 0 or s.first_round_guided)
        return self.config.search_spec(str(network) if guided else None)

    # ------------------------------------------------------------------ run
    def prepare(self, command: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.folder / "config.yaml", self.config.to_yaml())
        with open(self.folder / "command.txt", "a") as f:
            f.write(recorded_text(command) + "\n")  # paths relative to the repository
        if not self.start.is_file():
            tmp = self.folder / ".start.zip.tmp"
            shutil.copyfile(self.config.init, tmp)
            tmp.replace(self.start)

    def run(self) -> dict[str, Any]:
        c = self.config
        if c.eval.baseline:
            self.evaluate(-1, self.start, self.folder / "baseline")
            write_report(self)
        for k in range(c.rounds):
            start = time.perf_counter()
            self.round(k)
            self.log(f"round {k}: done ({time.perf_counter() - start:.0f} s in this session)")
            write_report(self)
        return write_report(self)

    def round(self, k: int) -> None:
        c = self.config
        folder = self.round_dir(k)
        previous = self.network(k - 1)
        if not (folder / "label.json").is_file():
            spec = self.search_spec(previous, k)
            self.log(f"round {k}: labelling {c.label.games} games with {spec}")
            totals = label_round(c, k, spec, folder / "labels", progress=self.progress, log=self.log)
            write_json(folder / "label.json", totals)
            self.log(f"round {k}: {totals['decisions']:,} decisions labelled ({totals['seconds']:.0f} s)")
        network = folder / "network.zip"
        if not (folder / "fit.json").is_file():
            first = max(0, k - c.label.window + 1)
            shards = sorted(p for j in range(first, k + 1) for p in (self.round_dir(j) / "labels").glob("shard_*.npz"))
            stats = fit_round(c, k, previous, shards, network, log=self.log)
            for stale in folder.glob("*_games"):  # games of a network fitted before and lost with its fit.json
                shutil.rmtree(stale)
            write_json(folder / "fit.json", {**stats, "from": str(previous), "rounds": list(range(first, k + 1))})
        if not (folder / "gate.json").is_file():
            write_json(folder / "gate.json", self.gate(k, network, previous))
        self.evaluate(k, network, folder)

    def player(self, network: Path, k: int, who: str) -> str:
        """The agent spec of the raw ``network`` or of the search it guides (the plain search
        when ``search.guided`` is false)."""
        if who == "network":
            return f"ppo:{network}"
        return self.config.search_spec(str(network) if self.config.search.guided else None)

    def play(self, agents: list[str], games: int, seed: int, workers: int, out: Path) -> Any:
        """``keltis_env.evaluation.evaluate`` keeping every finished game in ``out``: a run
        stopped in the middle of a gate or an evaluation plays only the missing games when
        resumed, with the same result as if it had never stopped."""
        from keltis_env.evaluation import evaluate

        c = self.config
        return evaluate(agents, games, seed, workers=workers, game=c.env.game, progress=self.progress,
                        options=c.env.game_options(), out=out, resume=(out / "run.json").is_file())

    def gate(self, k: int, network: Path, previous: Path) -> dict[str, Any]:
        c = self.config
        new, old = self.player(network, k, c.gate.player), self.player(previous, k, c.gate.player)
        self.log(f"round {k}: gating, {c.gate.games} games of {new} against {old}")
        start = time.perf_counter()
        n = c.env.num_players
        result = self.play([new] + [old] * (n - 1), c.gate.games, self.config.gate_seed(k), c.workers,
                           self.round_dir(k) / "gate_games")
        stats = result.agents[0]
        # the games cut at max_turns are counted apart: a lead made of stalling loops is no lead in play
        finished = result.finished(0)
        kept = finished["win_rate"] > 1 / n if finished["games"] else stats.win_rate > 1 / n
        low, high = finished["win_rate_ci"]
        self.log(f"round {k}: the new {c.gate.player} won {finished['win_rate']:.1%} [{low:.1%}, {high:.1%}] of the "
                 f"{finished['games']} finished games ({stats.win_rate:.1%} of all {stats.games}, "
                 f"{finished['truncated_games']} truncated): "
                 f"{'kept' if kept else 'dropped, the previous network goes on'}")
        return {"kept": kept, "player": c.gate.player, "new": new, "previous": old, "seed": self.config.gate_seed(k),
                "games": stats.games, "win_rate": stats.win_rate, "win_rate_ci": list(stats.win_rate_ci),
                "finished": finished, "seconds": round(time.perf_counter() - start, 1)}

    def evaluate(self, k: int, network: Path, folder: Path) -> None:
        """The raw network (and the search it guides) against ``eval.opponent`` at every
        reporting seed, each evaluation once (``folder/eval_<player>_seed<S>.json``)."""
        c = self.config
        if c.eval.games == 0:
            return
        # the plain search (search.guided false) is the same in every round: measured once, at the start
        search = c.eval.search and (c.search.guided or k < 0)
        players = ["network", "search"] if search else ["network"]
        for seed in c.eval.seeds:
            for who in players:
                path = folder / f"eval_{who}_seed{seed}.json"
                if path.is_file():
                    continue
                spec = self.player(network, k, who)
                self.log(f"{'start' if k < 0 else f'round {k}'}: evaluating {spec} against {c.eval.opponent} "
                         f"({c.eval.games} games, seed {seed})")
                start = time.perf_counter()
                agents = [spec] + [c.eval.opponent] * (c.env.num_players - 1)
                result = self.play(agents, c.eval.games, seed, c.workers, folder / f"eval_{who}_seed{seed}_games")
                mine, theirs = result.agents[0], result.agents[1]
                low, high = mine.win_rate_ci
                finished = result.finished(0)
                self.log(f"  won {mine.win_rate:.1%} [{low:.1%}, {high:.1%}], {mine.ms_per_decision:.1f} ms a decision "
                         f"({c.eval.opponent}: {theirs.ms_per_decision:.1f} ms); {finished['win_rate']:.1%} of the "
                         f"{finished['games']} finished games, {finished['truncated_games']} truncated")
                write_json(path, {"player": who, "spec": spec, "opponent": c.eval.opponent, "seed": seed,
                                  "games": mine.games, "win_rate": mine.win_rate, "win_rate_ci": [low, high],
                                  "mean_score": mine.mean_score, "ms_per_decision": mine.ms_per_decision,
                                  "opponent_ms_per_decision": theirs.ms_per_decision, "finished": finished,
                                  "seconds": round(time.perf_counter() - start, 1)})


__all__ = ["Run", "Stopped", "read_json", "sigterm_stops", "write_json"]
