"""Self-play throughput of expert iteration: decisions per second of the network-guided
search playing a config's self-play games, on the device its ``device`` key names, measured
by ``python -m training.bench --zero CONFIG`` (:mod:`training.bench`).

The config's start network (``init``, else fresh weights of ``seed``) plays generation 0's
games as a run does (:func:`training.zero.selfplay.play_generation`: the same search, the
same ``selfplay.parallel`` games side by side in one batch), with no fit in between. The
first :data:`WARMUP` batches of the search are not counted (on a machine's first run they
compile its kernels), then it plays for ``seconds`` and stops after the batch that passes
them. Reported: decisions per second, the share of that wall time spent in the network's
calls (the observations' transfer and the results' return included; the rest is the
search's and the games' own work on the CPU), and the network's rows a decision and a call.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .config import ZeroConfig, torch_device
from .loop import make_search, place_policy, start_model
from .selfplay import play_generation

#: batches of the search played before the measurement starts
WARMUP = 2


def measure(config: ZeroConfig, seconds: float, log: Any = None) -> dict[str, Any]:
    """Self-play decisions per second of ``config`` over at least ``seconds`` after the warm-up."""
    from importlib.metadata import version

    import torch

    from keltis_env.games.keltis import GameConfig

    torch.set_num_threads(config.torch_threads)
    device = torch_device(config.device)
    policy = place_policy(start_model(config).policy, config)
    policy.set_training_mode(False)
    search = make_search(config, policy)
    network = search.network
    game_config = GameConfig(num_players=config.env.num_players, **config.env.game_options())
    seen = {"batches": 0, "counted": 0, "decisions": 0, "start": 0.0, "network": 0.0, "rows": 0}

    def on_batch(made: int) -> bool:
        seen["batches"] += 1
        if seen["batches"] < WARMUP:
            return False
        now = time.perf_counter()
        if seen["batches"] == WARMUP:
            seen.update(start=now, network=network.seconds, rows=search.network_rows)
            if log is not None:
                log(f"warm-up done ({WARMUP} batches); measuring for {seconds:g} s")
            return False
        seen["counted"] += 1
        seen["decisions"] += made
        return now - seen["start"] >= seconds

    parallel = config.selfplay.parallel
    play_generation(search, game_config, parallel * 1000, parallel, config.seed, 0, on_batch=on_batch)
    wall = time.perf_counter() - seen["start"]
    decisions, rows = seen["decisions"], search.network_rows - seen["rows"]
    return {"device": device, "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
            "cpus": os.cpu_count(), "torch_threads": config.torch_threads,
            "first_layer": config.first_layer, "torch": torch.__version__,
            "numba": version("numba"), "simulations": config.search.simulations, "depth": config.search.depth,
            "parallel": parallel, "seconds": round(wall, 2), "batches": seen["counted"], "decisions": decisions,
            "decisions_per_s": decisions / wall if wall > 0 else 0.0,
            "network_share": (network.seconds - seen["network"]) / wall if wall > 0 else 0.0,
            "network_rows_per_decision": rows / max(decisions, 1)}


def summary_line(result: dict[str, Any]) -> str:
    where = result["gpu"] or f"CPU, {result['torch_threads']} torch threads"
    return (f"{result['decisions_per_s']:.2f} decisions/s of self-play on {result['device']} ({where}): "
            f"{result['decisions']:,} decisions in {result['seconds']:.1f} s; the network's calls "
            f"{result['network_share']:.0%} of the time, {result['network_rows_per_decision']:,.0f} rows a decision")


__all__ = ["WARMUP", "measure", "summary_line"]
