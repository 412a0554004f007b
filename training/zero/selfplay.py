"""A generation of self-play: the network-guided search in every seat of ``selfplay.games``
games, ``selfplay.parallel`` of them side by side on the one driver's table
(:class:`keltis_env.compiled.table.GameTable`), every decision a sample.

A sample is what the seat to move saw and what the search concluded: the observation (the
learner's, with ``env.features``; with ``hidden``, followed by what the seat does not see,
for a critic that reads it in training), the legal-action mask, the search's improved policy
(the policy target), the search's mean simulated value of the move it chose, and, once the
game is over, the seat's ``score`` reward (its score less the others' mean, over 50); the
value target is the reward, or a mix of the two (``fit.search_value``). Game ``i`` of generation ``k`` is the
Python engine's deal from ``derive_seed(seed, "zero", k, i)``, and the search is seeded
from the generation alone, so a generation depends on the network and its index only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from keltis_env.evaluation import derive_seed


def game_seed(seed: int, generation: int, i: int) -> int:
    return derive_seed(seed, "zero", generation, i)


def _with_hidden(table: Any, games: np.ndarray, mes: np.ndarray, obs: np.ndarray, size: int) -> np.ndarray:
    """The observations ``obs`` of seats ``mes`` in ``games``, each followed by the ``size``
    values of what that seat does not see in the real game (the critic's inputs in training;
    the search never reads them)."""
    rows = np.zeros((len(games), obs.shape[1] + size), np.float32)
    rows[:, :obs.shape[1]] = obs
    table.privileged(games, mes, rows, obs.shape[1])
    return rows


def play_generation(search: Any, game_config: Any, games: int, parallel: int, seed: int, generation: int,
                    progress: Any = None, hidden: bool = False, on_batch: Any = None) -> dict[str, Any]:
    """The samples of one generation (``obs``, ``mask``, ``policy``, ``value``,
    ``search_value``, ``seat``, ``game``) and its statistics (games, decisions, seconds, mean game length, the share of
    games cut at the turn cap). ``on_batch(decisions)``, where given, is called after every
    batch of the search with the decisions it made; when it returns True the generation
    stops there and only ``stats`` is returned, its ``decisions`` those made so far (a
    throughput measurement, :mod:`training.zero.throughput`)."""
    from keltis_env.compiled.table import GameTable
    from keltis_env.core.rewards import final_rewards

    start = time.perf_counter()
    search.reseed(derive_seed(seed, "zero-search", generation))
    parallel = min(parallel, games)
    table = GameTable("keltis", game_config, parallel)
    n = table.num_players
    slot_game = np.full(parallel, -1, np.int64)
    samples: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, int, float]]] = [[] for _ in range(games)]
    values = np.zeros((games, n))
    truncated = 0
    next_game = 0
    seats0 = np.zeros(parallel, np.int64)
    potentials = np.zeros(parallel)

    def deal(slots: np.ndarray) -> None:
        nonlocal next_game
        fresh: list[int] = []
        for g in slots.tolist():
            if next_game < games:
                table.seeds[g, 1] = game_seed(seed, generation, next_game)
                slot_game[g] = next_game
                next_game += 1
                fresh.append(g)
            else:
                slot_game[g] = -1
        if fresh:
            idx = np.array(fresh, np.int64)
            table.start(idx, seats0, np.ones(len(idx), np.bool_), potentials)

    deal(np.arange(parallel))
    done = 0
    while True:
        active = np.nonzero(slot_game >= 0)[0].astype(np.int64)
        if not len(active):
            break
        waiting = table.advance(active)
        ended = active[waiting < 0]
        if len(ended):
            for g in ended.tolist():
                i = int(slot_game[g])
                position = table.position(g)
                values[i] = final_rewards(position.scores(), "score")
                truncated += int(position.end.name == "TRUNCATED")
                done += 1
            if progress is not None:
                progress(done, games)
            deal(ended)
        movers = active[waiting >= 0]
        if not len(movers):
            continue
        mes = waiting[waiting >= 0]
        result = search.search(table.states[movers], mes)
        legal = table.act(movers, result["action"])
        if not legal.all():
            raise RuntimeError("the search chose an illegal move")
        rows = _with_hidden(table, movers, mes, result["obs"], search.hidden_size) if hidden else result["obs"]
        chosen = result["q"][np.arange(len(movers)), result["action"]]
        for j, g in enumerate(movers.tolist()):
            samples[int(slot_game[g])].append((rows[j], result["mask"][j], result["policy"][j], int(mes[j]),
                                               float(chosen[j])))
        if on_batch is not None and on_batch(len(movers)):
            made = sum(len(s) for s in samples)
            return {"stats": {"games_finished": done, "decisions": made,
                              "seconds": round(time.perf_counter() - start, 2)}}
    data = _arrays(samples, values)
    decisions = len(data["obs"])
    data["stats"] = {"games": games, "decisions": decisions, "seconds": round(time.perf_counter() - start, 2),
                     "mean_length": decisions / max(games, 1), "truncated": truncated}
    return data


def _arrays(samples: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, int, float]]], values: np.ndarray
            ) -> dict[str, Any]:
    """The samples of every game as arrays, each with its seat's final reward ``values[game, seat]``
    and ``search_value``, the search's mean simulated value of the move it chose (the final
    reward where it simulated nothing: a move that was the only legal one)."""
    flat = [(i, *sample) for i, game_samples in enumerate(samples) for sample in game_samples]
    value = np.array([values[s[0], s[4]] for s in flat], np.float32)
    searched = np.array([s[5] for s in flat], np.float32)
    return {"obs": np.array([s[1] for s in flat], np.float32), "mask": np.array([s[2] for s in flat], np.bool_),
            "policy": np.array([s[3] for s in flat], np.float32), "value": value,
            "search_value": np.where(np.isnan(searched), value, searched).astype(np.float32),
            "seat": np.array([s[4] for s in flat], np.int8), "game": np.array([s[0] for s in flat], np.int32)}


__all__ = ["game_seed", "play_generation"]
