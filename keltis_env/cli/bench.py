"""``keltis bench``: decisions per second of the bare engine, of the match loop and of the
AEC loop.

* ``engine``: random legal play on the engine alone (``legal_actions`` / ``apply``), the
  reference the other loops are compared with;
* ``match``: :class:`~keltis_env.core.match.Match` with a random bot at every seat, each
  acting on its own player's view: the loop of the evaluation and of the learner's
  opponents;
* ``aec``: the PettingZoo loop on the wrapped ``env()`` (which runs on the match loop),
  with observation and mask every step;
* ``openspiel`` (not measured unless asked for; the ``openspiel`` extra): random legal
  play through OpenSpiel's ``pyspiel`` API on the game's OpenSpiel form
  (:func:`keltis_env.integrations.openspiel.random_play`), chance outcomes drawn by their
  probabilities: ``keltis bench --loops aec openspiel`` puts it next to the AEC loop.

``keltis bench --peers`` instead puts our environments and PettingZoo's classic card games
through one AEC loop (:func:`aec_loop`), in one process, one after the other in every
repeat (so a busy machine slows all of them alike). The loop is the one every PettingZoo
user writes: ``agent_iter()``, ``last()`` (the observation and its action mask, every
step), ``step()`` with a random legal action drawn from the mask, ``step(None)`` for a
finished agent. Every environment is built with its constructor's defaults (two
players), except that ours run on ``--backend`` (default ``auto``: the compiled core
where numba is installed, else the Python engine; the output names the backend, and
``--backend python`` times the Python engine). Every environment plays a short
untimed run first (loading the compiled kernels). The peers need the ``peers`` extra:
``rlcard`` and ``pygame-ce`` (PettingZoo's classic modules import pygame), and a
PettingZoo older than 1.27 for ``gin_rummy_v4``, which 1.27 removed (PettingZoo issue
#1383); a peer that cannot be imported is listed as skipped, with the reason.

``keltis bench --learner`` instead measures learner steps per second of ``--games`` (64)
games in one process against ``--opponents`` (``random``, ``heuristic`` with its options:
both games' compiled cores play it, or the card game's ``planner``), observations and masks included, the
learner's actions drawn among the legal ones from the masks in one numpy call for all games:
the Python learner view (:class:`~keltis_env.envs.learner.KeltisLearnerEnv`, one per game) and the
vector environment on the game's compiled core (:class:`~keltis_env.envs.vector.KeltisVectorEnv`,
the ``fast`` extra), in turn in every repeat. A game without a compiled core, or whose
compiled core does not play those opponents, is listed as skipped.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

HELP = "measure engine, match-loop and PettingZoo AEC-loop speed (random legal play, medians of repeated runs)"
LOOPS = ("engine", "match", "aec")
#: loops measured only when named in --loops
OPTIONAL_LOOPS = ("openspiel",)
#: PettingZoo classic card games measured by --peers when importable
PEERS = ("texas_holdem_v4", "leduc_holdem_v4", "gin_rummy_v4", "texas_holdem_no_limit_v6")
#: our environments' backends (keltis_env.core.compiled_match.BACKENDS, listed here so that --help loads nothing)
BACKENDS = ("auto", "compiled", "python")
#: how --learner's random learner draws its actions (see add_arguments)
SAMPLERS = ("numpy", "compiled")
#: the untimed run that every environment of --peers plays first, seconds
WARM_UP = 0.2


def add_arguments(p: argparse.ArgumentParser) -> None:
    from keltis_env.cli.arguments import MAX_REPEATS, MAX_RUN_SECONDS, count, seconds
    from keltis_env.core.game import game_names

    p.add_argument("--game", choices=[*game_names(), "all"], default="all", help="which game to measure (default: all)")
    p.add_argument("--players", type=int, nargs="+", default=[2, 3, 4], choices=[2, 3, 4])
    p.add_argument("--seconds", type=seconds(MAX_RUN_SECONDS), default=1.5,
                   help=f"length of one timed run, > 0 and <= {MAX_RUN_SECONDS:g} (default 1.5)")
    p.add_argument("--repeats", type=count(1, MAX_REPEATS), default=5,
                   help=f"timed runs per figure, 1 to {MAX_REPEATS}; the median is reported (default 5)")
    p.add_argument(
        "--loops", nargs="+", choices=LOOPS + OPTIONAL_LOOPS, default=list(LOOPS),
        help="which loops to measure (default: engine match aec; openspiel needs the openspiel extra)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument(
        "--peers", action="store_true",
        help="instead: our two environments and PettingZoo's classic card games in one AEC loop (the peers extra)",
    )
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="the backend of our environments under --peers (default auto: compiled where numba is "
                        "installed, else python)")
    p.add_argument(
        "--learner", action="store_true",
        help="instead: learner steps/s of --games games against --opponents, one process: "
             "the Python learner view and the compiled batched step (the fast extra)",
    )
    p.add_argument("--games", type=count(1, 4096), default=64,
                   help="games stepped together by --learner, 1 to 4096 (default 64)")
    p.add_argument("--baseline", metavar="DIR",
                   help="with --learner: also time the same vector-environment loop in DIR, another checkout of "
                        "this project (e.g. a git worktree of an older commit), in separate processes alternating "
                        "with this checkout's, and print the ratio of the medians")
    p.add_argument("--sampler", choices=SAMPLERS, default="numpy",
                   help="how --learner's random learner draws its legal actions: numpy (uniform noise times the "
                        "masks, argmax; the default) or compiled (one numba call for every game)")
    p.add_argument("--opponents", default="random", metavar="SPEC",
                   help="the opponents of --learner: an agent spec the game's compiled core plays (random, the "
                        "default, heuristic with its options, or the card game's planner)")


# ---------------------------------------------------------------------- the loops
def engine_run(spec: Any, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """Random legal play on the bare engine: (decisions, games, elapsed seconds)."""
    config = spec.make_config(num_players=num_players)
    rng = random.Random(seed)
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        state = spec.new_state(config, seed + games)
        while not state.is_over:
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
            decisions += 1
        games += 1
    return decisions, games, time.perf_counter() - start


def match_run(spec: Any, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """Random bots at every seat under the match loop: (decisions, games, elapsed seconds)."""
    from keltis_env.bots import RandomBot
    from keltis_env.core.match import Match

    config = spec.make_config(num_players=num_players)
    bots = [RandomBot(seed + seat) for seat in range(num_players)]
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        match = Match(spec, spec.new_state(config, seed + games), bots)
        match.run()
        decisions += sum(match.decisions)
        games += 1
    return decisions, games, time.perf_counter() - start


def aec_loop(make_env: Callable[[], Any], seconds: float, seed: int) -> tuple[int, int, float]:
    """Random legal play through the AEC API: (decisions, games, elapsed seconds)."""
    env = make_env()
    rng = random.Random(seed)
    decisions = games = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        env.reset(seed=seed + games)
        for _agent in env.agent_iter():
            obs, _reward, terminated, truncated, _info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[rng.randrange(len(legal))]))
            decisions += 1
        games += 1
    elapsed = time.perf_counter() - start
    env.close()
    return decisions, games, elapsed


def aec_run(game: Any, num_players: int, seconds: float, seed: int) -> tuple[int, int, float]:
    """The PettingZoo loop on the wrapped env of ``game`` (a name or descriptor): agent_iter
    / last (observation and mask every step) / step with a random legal action taken from
    the mask; the same loop ``keltis bench --peers`` times on PettingZoo's own games."""
    from keltis_env.envs import make_env

    return aec_loop(lambda: make_env(game, num_players=num_players), seconds, seed)


# ---------------------------------------------------------------------- keltis bench
def json_option_error(args: argparse.Namespace, prog: str) -> int | None:
    """Check ``--json`` before anything is measured: print why it cannot be written and
    return the exit status 2, or ``None`` when it is fine or not given."""
    if args.json is None:
        return None
    from keltis_env.core.output_files import OutputPathError, check_output_file

    try:
        check_output_file(args.json, "the results")
    except OutputPathError as exc:
        print(f"{prog}: error: --json: {exc}", file=sys.stderr)
        return 2
    return None


def run(args: argparse.Namespace) -> int:
    if (status := json_option_error(args, "keltis bench")) is not None:
        return status
    if getattr(args, "peers", False):
        return run_peers(args)
    from keltis_env.core.compile_notice import compile_notice

    with compile_notice():  # the first run on a machine compiles the kernels for minutes
        return run_learner(args) if getattr(args, "learner", False) else run_loops(args)


def run_loops(args: argparse.Namespace) -> int:
    """``keltis bench`` without ``--learner`` or ``--peers``: the loops of every game."""
    from keltis_env.core.game import game_names, get_game

    games = game_names() if args.game == "all" else [args.game]
    loops = [kind for kind in LOOPS + OPTIONAL_LOOPS if kind in args.loops]
    random_play = None
    if "openspiel" in loops:
        random_play = _openspiel_random_play(args.game)
        if random_play is None:
            return 2
    # with --game all, the openspiel loop measures the games that have an OpenSpiel form
    jobs = [(g, n, kind) for g in games for n in args.players for kind in loops
            if kind != "openspiel" or get_game(g).chance_model is not None]
    results = _measure_loops(jobs, args.seconds, args.repeats, random_play)
    print(_loops_table(results))
    print(f"medians of {args.repeats} runs of {args.seconds:g} s each; single process, random legal play")
    if args.json is not None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(args.json, json.dumps(results, indent=1))
    return 0


def _openspiel_random_play(game: str) -> Callable[..., tuple[int, int, float]] | None:
    """OpenSpiel's random play for the ``openspiel`` loop, or ``None`` after saying on
    stderr why it cannot be measured (OpenSpiel missing, a ``--game`` without an OpenSpiel
    form)."""
    from keltis_env.core.game import get_game

    try:
        from keltis_env.integrations.openspiel import random_play
    except ImportError as exc:
        print(f"keltis bench: the openspiel loop needs OpenSpiel (pip install 'keltis-rl[openspiel]', "
              f"Python 3.11 or later): {exc}", file=sys.stderr)
        return None
    if game != "all" and get_game(game).chance_model is None:
        print(f"keltis bench: the game {game!r} has no OpenSpiel form (it declares no chance model); "
              "leave out --loops openspiel or pick another --game", file=sys.stderr)
        return None
    return random_play


def _measure_loops(jobs: list[tuple[str, int, str]], seconds: float, repeats: int,
                   random_play: Callable[..., tuple[int, int, float]] | None) -> list[dict[str, Any]]:
    """Every (game, players, loop) job timed ``repeats`` times: its median rates."""
    from tqdm import tqdm

    from keltis_env.core.game import get_game

    results: list[dict[str, Any]] = []
    with tqdm(total=len(jobs) * repeats, desc="bench", unit="run", leave=False) as bar:
        for game, n, kind in jobs:
            rates, game_rates = [], []
            for r in range(repeats):
                if kind == "engine":
                    d, g, el = engine_run(get_game(game), n, seconds, seed=1000 * r)
                elif kind == "match":
                    d, g, el = match_run(get_game(game), n, seconds, seed=1000 * r)
                elif kind == "openspiel":
                    assert random_play is not None
                    d, g, el = random_play(game, n, seconds, seed=1000 * r)
                else:
                    d, g, el = aec_run(get_game(game), n, seconds, seed=1000 * r)
                rates.append(d / el)
                game_rates.append(g / el)
                bar.update(1)
            results.append(
                {
                    "game": game,
                    "players": n,
                    "loop": kind,
                    "decisions_per_s": statistics.median(rates),
                    "games_per_s": statistics.median(game_rates),
                    "min_decisions_per_s": min(rates),
                    "max_decisions_per_s": max(rates),
                    "repeats": repeats,
                    "seconds_per_run": seconds,
                }
            )
    return results


def _loops_table(results: list[dict[str, Any]]) -> str:
    """The table of the loops: each one's speed, its spread and its ratio to the engine's."""
    engine = {(r["game"], r["players"]): r["decisions_per_s"] for r in results if r["loop"] == "engine"}
    head = f"{'game':<8}{'players':>8}  {'loop':<10}{'decisions/s':>13}{'games/s':>10}"
    lines = [f"{head}{'(min..max)':>22}{'/engine':>10}"]
    for r in results:
        base = engine.get((r["game"], r["players"]))
        ratio = f"{r['decisions_per_s'] / base:.2f}" if base else "-"
        span = f"{r['min_decisions_per_s']:,.0f}..{r['max_decisions_per_s']:,.0f}"
        lines.append(
            f"{r['game']:<8}{r['players']:>8}  {r['loop']:<10}{r['decisions_per_s']:>13,.0f}"
            f"{r['games_per_s']:>10,.1f}{span:>22}{ratio:>10}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------- keltis bench --peers
def ours(backend: str = "python") -> dict[str, Callable[[], Any]]:
    """Environment name -> factory, for every registered game (``keltis_v0``, ...), on
    ``backend``."""
    from keltis_env.core.game import game_names, get_game
    from keltis_env.envs import make_env

    return {get_game(name).env_name: partial(make_env, name, backend=backend) for name in game_names()}


def our_backends(backend: str) -> dict[str, str]:
    """Environment name -> the backend ``backend`` resolves to for it (``"auto"``: compiled
    where numba is installed and the game has a compiled core). ``"compiled"`` without
    numba raises the kernels' one-line ``ImportError``."""
    from keltis_env.core.compiled_match import resolve_backend
    from keltis_env.core.game import game_names, get_game

    return {get_game(name).env_name: resolve_backend(get_game(name), backend) for name in game_names()}


def available_peers() -> dict[str, Callable[[], Any]]:
    """Peer name -> environment factory, for the peers that import here."""
    found, _skipped = _peers()
    return found


def _peers() -> tuple[dict[str, Callable[[], Any]], dict[str, str]]:
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    found: dict[str, Callable[[], Any]] = {}
    skipped: dict[str, str] = {}
    for name in PEERS:
        try:
            module = importlib.import_module(f"pettingzoo.classic.{name}")
            found[name] = module.env
        except (ImportError, AttributeError) as exc:  # a missing extra, or a release without that game
            skipped[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
            removed = isinstance(exc, ModuleNotFoundError) and exc.name == f"pettingzoo.classic.{name}"
            if name == "gin_rummy_v4" and removed:
                skipped[name] = "not in this PettingZoo (removed in 1.27, PettingZoo issue #1383): pettingzoo<1.27"
    return found, skipped


def measure_peers(seconds: float, repeats: int, seed: int = 0,
                  backend: str = "python") -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Median decisions/s and games/s of our environments (on ``backend``, one of
    :data:`BACKENDS`) and the importable peers."""
    peers, skipped = _peers()
    if not peers:
        return [], skipped
    backends = our_backends(backend)
    envs = ours(backend)
    own = set(envs)
    envs.update(peers)
    for make_env in envs.values():
        aec_loop(make_env, min(WARM_UP, seconds), seed=seed)  # loads the kernels and fills the caches, untimed
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
    for r in range(repeats):
        for name, make_env in envs.items():
            d, g, el = aec_loop(make_env, seconds, seed=1000 * r + seed)
            rates[name].append((d / el, g / el))
    results = []
    for name, runs in rates.items():
        results.append({
            "env": name,
            "peer": name not in own,
            "backend": backends.get(name),
            "decisions_per_s": statistics.median(r[0] for r in runs),
            "games_per_s": statistics.median(r[1] for r in runs),
            "min_decisions_per_s": min(r[0] for r in runs),
            "max_decisions_per_s": max(r[0] for r in runs),
            "repeats": repeats,
            "seconds_per_run": seconds,
        })
    return results, skipped


def peers_table(results: list[dict[str, Any]]) -> str:
    """The table of --peers: each environment's speed, and each of ours divided by it."""
    ours = {r["env"]: r["decisions_per_s"] for r in results if not r["peer"]}
    head = f"{'environment':<26}{'backend':<10}{'decisions/s':>13}{'games/s':>10}"
    head += "".join(f"{'ratio ' + name:>24}" for name in ours)
    lines = [head]
    for r in results:
        line = f"{r['env']:<26}{r.get('backend') or '-':<10}{r['decisions_per_s']:>13,.0f}{r['games_per_s']:>10,.1f}"
        line += "".join(f"{value / r['decisions_per_s']:>23.2f}x" for value in ours.values())
        lines.append(line)
    return "\n".join(lines)


def run_peers(args: argparse.Namespace) -> int:
    backend = getattr(args, "backend", "auto")
    try:
        backends = our_backends(backend)
    except (ImportError, ValueError) as exc:
        print(f"keltis bench --peers: {exc}", file=sys.stderr)
        return 2
    results, skipped = measure_peers(args.seconds, args.repeats, backend=backend)
    if not results:
        reasons = "; ".join(f"{k}: {v}" for k, v in skipped.items())
        raise SystemExit(f"keltis bench --peers: no peer environment could be imported ({reasons}); "
                         "install the peers extra: pip install -e '.[peers]'")
    print(peers_table(results))
    print(f"medians of {args.repeats} runs of {args.seconds:g} s each, interleaved; one process; "
          "ratio = our decisions/s divided by that row's")
    ran = ", ".join(f"{name} on the {kind} backend" for name, kind in backends.items())
    print(f"ours: {ran} (--backend {backend}; --backend python times the Python engine)")
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    if args.json is not None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(args.json, json.dumps({"results": results, "skipped": skipped}, indent=1))
    return 0


# ---------------------------------------------------------------------- keltis bench --learner
def _legal_choice(masks: Any, rng: Any) -> Any:
    """A uniformly drawn legal action per row of ``masks``, in one numpy pass."""
    import numpy as np

    return np.argmax(masks * rng.random(masks.shape), axis=1)


def learner_python_run(game: str, num_players: int, games: int, seconds: float, seed: int,
                       opponents: str = "random") -> tuple[int, int, float]:
    """``games`` Python learner views of ``game`` against ``opponents``, stepped in turn:
    (learner steps, episodes, elapsed seconds)."""
    import numpy as np

    from keltis_env.envs.learner import KeltisLearnerEnv

    envs = [KeltisLearnerEnv(game=game, num_players=num_players, opponents=opponents) for _ in range(games)]
    for g, env in enumerate(envs):
        env.reset(seed=seed + g)
    rng = np.random.default_rng(seed)
    steps = episodes = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        actions = _legal_choice(np.stack([env.action_masks() for env in envs]), rng)
        for env, action in zip(envs, actions.tolist(), strict=True):
            _obs, _reward, terminated, truncated, _info = env.step(action)
            if terminated or truncated:
                env.reset()
                episodes += 1
        steps += games
    return steps, episodes, time.perf_counter() - start


def learner_vector_run(game: str, num_players: int, games: int, seconds: float, seed: int,
                       opponents: str = "random", sampler: str = "numpy") -> tuple[int, int, float]:
    """The compiled core's vector environment (:class:`~keltis_env.envs.vector.KeltisVectorEnv`)
    with ``games`` sub-environments, its own buffers read in place (``copy=False``) and the
    actions drawn into a buffer of their own (``sampler``, :data:`SAMPLERS`): (learner steps,
    episodes, elapsed seconds)."""
    import numpy as np

    from keltis_env.core.kernels import random_legal, seed_generators
    from keltis_env.envs.vector import KeltisVectorEnv

    env = KeltisVectorEnv(games, game=game, num_players=num_players, opponents=opponents, copy=False)
    _obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    noise = np.empty(info["action_mask"].shape, np.float32)
    generators, actions = seed_generators(seed, games), np.zeros(games, np.int64)
    steps = episodes = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        if sampler == "compiled":
            random_legal(info["action_mask"], generators, actions)
        else:
            rng.random(out=noise, dtype=np.float32)  # a legal action per game, drawn in place
            np.multiply(noise, info["action_mask"], out=noise)
            np.argmax(noise, axis=1, out=actions)
        _obs, _rewards, terminated, truncated, info = env.step(actions)
        episodes += int(terminated.sum() + truncated.sum())
        steps += games
    return steps, episodes, time.perf_counter() - start


#: the vector-environment loop of ``--baseline``, run in a fresh interpreter in each checkout
#: (argv: game, players, games, opponents, seconds, seed, sampler): the same code for both,
#: using ``copy=False`` where the environment has it, its compiled sampler written out here
#: (an older checkout has no ``random_legal``); prints learner steps/s as JSON
AB_LOOP = r"""
import inspect, json, sys, time
import numpy as np
try:
    from keltis_env.envs.vector import KeltisVectorEnv
except ImportError:  # a checkout from before the front-ends moved into keltis_env.envs
    from keltis_env.vector import KeltisVectorEnv
game, n, games, opponents, seconds, seed, sampler = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    sys.argv[4], float(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
fast = {"copy": False} if "copy" in inspect.signature(KeltisVectorEnv).parameters else {}
env = KeltisVectorEnv(games, game=game, num_players=n, opponents=opponents, **fast)
_obs, info = env.reset(seed=seed)
rng = np.random.default_rng(seed)
noise = np.empty((games, int(env.single_action_space.n)), np.float32)
actions = np.zeros(games, np.int64)
def choose_numpy(masks):
    rng.random(out=noise, dtype=np.float32)
    np.multiply(noise, masks, out=noise)
    return np.argmax(noise, axis=1, out=actions)
if sampler == "compiled":
    import numba
    @numba.njit
    def draw(masks, out):
        for g in range(masks.shape[0]):
            count = 0
            for a in range(masks.shape[1]):
                if masks[g, a]:
                    count += 1
            pick = np.random.randint(0, max(count, 1))
            for a in range(masks.shape[1]):
                if masks[g, a]:
                    if pick == 0:
                        out[g] = a
                        break
                    pick -= 1
    @numba.njit
    def seed_draw(seed):
        np.random.seed(seed)
    seed_draw(seed)
    def choose(masks):
        draw(masks, actions)
        return actions
else:
    choose = choose_numpy
for _ in range(200):
    _obs, _r, _te, _tr, info = env.step(choose(info["action_mask"]))
steps, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    for _ in range(100):
        _obs, _r, _te, _tr, info = env.step(choose(info["action_mask"]))
    steps += 100 * games
print(json.dumps({"steps_per_s": steps / (time.perf_counter() - start)}))
"""


def ab_rate(checkout: str, game: str, players: int, games: int, opponents: str, seconds: float, seed: int,
            sampler: str = "numpy") -> float:
    """Learner steps/s of :data:`AB_LOOP` in the checkout ``checkout`` (a fresh interpreter)."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=checkout)
    done = subprocess.run([sys.executable, "-c", AB_LOOP, game, str(players), str(games), opponents, str(seconds),
                           str(seed), sampler], cwd=checkout, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"the loop failed in {checkout}: {done.stderr.strip().splitlines()[-1:]}")
    rates = json.loads(done.stdout.strip().splitlines()[-1])
    rate: float = rates["steps_per_s"]
    return rate


def run_baseline(args: argparse.Namespace) -> int:
    """``--learner --baseline DIR``: the vector loop here and in DIR, alternating, medians and ratios."""
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[2])
    there = str(Path(args.baseline).resolve())
    if not any((Path(there) / "keltis_env" / where).is_file() for where in ("envs/vector.py", "vector.py")):
        print(f"keltis bench: --baseline {args.baseline!r} is not a checkout of this project (no vector environment "
              "under keltis_env/)", file=sys.stderr)
        return 2
    game = "keltis" if args.game == "all" else args.game
    rows = []
    for n in args.players:
        for where in (there, here):  # compiles, or loads, each checkout's kernels before timing
            ab_rate(where, game, n, args.games, args.opponents, 0.2, 0, args.sampler)
        rates: dict[str, list[float]] = {"baseline": [], "this": []}
        for r in range(args.repeats):
            rates["baseline"].append(ab_rate(there, game, n, args.games, args.opponents, args.seconds, 1000 * r,
                                             args.sampler))
            rates["this"].append(ab_rate(here, game, n, args.games, args.opponents, args.seconds, 1000 * r,
                                         args.sampler))
        old, new = statistics.median(rates["baseline"]), statistics.median(rates["this"])
        ratios = [b / a for a, b in zip(rates["baseline"], rates["this"], strict=True)]
        rows.append({"game": game, "players": n, "games": args.games, "opponents": args.opponents,
                     "baseline_steps_per_s": old, "steps_per_s": new, "ratio_of_medians": new / old,
                     "ratio_min": min(ratios), "ratio_max": max(ratios), "repeats": args.repeats,
                     "sampler": args.sampler,
                     "seconds_per_run": args.seconds})
    print(f"{'game':<8}{'players':>8}{'baseline steps/s':>18}{'this steps/s':>15}{'ratio':>8}{'pairs min-max':>16}")
    for row in rows:
        print(f"{row['game']:<8}{row['players']:>8}{row['baseline_steps_per_s']:>18,.0f}{row['steps_per_s']:>15,.0f}"
              f"{row['ratio_of_medians']:>7.2f}x{row['ratio_min']:>9.2f}-{row['ratio_max']:.2f}")
    print(f"medians of {args.repeats} alternating runs of {args.seconds:g} s, one process each; {args.games} games, "
          f"opponents {args.opponents}, the learner's actions drawn among the legal ones ({args.sampler} sampler); "
          f"baseline: {args.baseline}")
    if args.json is not None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(args.json, json.dumps(rows, indent=1))
    return 0


def run_learner(args: argparse.Namespace) -> int:
    if getattr(args, "baseline", None) is not None:
        return run_baseline(args)
    from keltis_env.compiled import core_module, has_core
    from keltis_env.core.game import game_names

    results, skipped = [], []
    for game in game_names() if args.game == "all" else [args.game]:
        if not has_core(game):
            skipped.append(f"{game}: no compiled core (it runs on the Python engine alone)")
            continue
        try:
            core_module(game)
        except ImportError as exc:
            print(f"keltis bench --learner: {exc}", file=sys.stderr)
            return 2
        try:
            from keltis_env.compiled.batch import learner_batch

            learner_batch(game, 1, opponents=args.opponents).reset()  # compiles, or loads the kernels, before timing
        except ValueError as exc:
            skipped.append(f"{game}: {exc}")
            continue
        for n in args.players:
            rates: dict[str, list[float]] = {"python": [], "compiled": []}
            for r in range(args.repeats):
                steps, _, elapsed = learner_python_run(game, n, args.games, args.seconds, 1000 * r, args.opponents)
                rates["python"].append(steps / elapsed)
                steps, _, elapsed = learner_vector_run(game, n, args.games, args.seconds, 1000 * r, args.opponents,
                                                       args.sampler)
                rates["compiled"].append(steps / elapsed)
            py, fast = statistics.median(rates["python"]), statistics.median(rates["compiled"])
            results.append({"game": game, "players": n, "games": args.games, "opponents": args.opponents,
                            "python_steps_per_s": py,
                            "compiled_steps_per_s": fast, "ratio": fast / py, "repeats": args.repeats,
                            "sampler": args.sampler,
                            "seconds_per_run": args.seconds})
    print(_learner_table(results))
    print(f"medians of {args.repeats} runs of {args.seconds:g} s each, in turn; one process, {args.games} games, "
          f"opponents {args.opponents}, the learner's actions drawn among the legal ones ({args.sampler} sampler in "
          "the compiled loop)")
    for reason in skipped:
        print(f"skipped {reason}")
    if args.json is not None:
        from keltis_env.core.output_files import atomic_write_text

        atomic_write_text(args.json, json.dumps(results, indent=1))
    return 0


def _learner_table(results: list[dict[str, Any]]) -> str:
    lines = [f"{'game':<8}{'players':>8}{'python steps/s':>16}{'compiled steps/s':>18}{'ratio':>9}"]
    for row in results:
        lines.append(f"{row['game']:<8}{row['players']:>8}{row['python_steps_per_s']:>16,.0f}"
                     f"{row['compiled_steps_per_s']:>18,.0f}{row['ratio']:>8.1f}x")
    return "\n".join(lines)
