"""The ``ppo`` bot's forward passes (its ``forward`` option): the sparse first layer, compiled
and in numpy with the same bits, rows that never depend on each other, and the benchmark
protocols that keep playing the dense forward pass they were frozen with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from subprocess_helpers import WITHOUT_NUMBA

from keltis_env.benchmark import BenchmarkError, load_protocol
from keltis_env.benchmark.games import table_tasks
from keltis_env.bots import make_bot
from keltis_env.core.match import play_game
from keltis_env.evaluation.play import make_bots, with_forward
from keltis_env.policy import load_policy
from keltis_env.policy.network import sparse_rows, sparse_rows_numpy

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = "ppo:policies/keltis_2p.zip"


def _observations(spec: str = SHIPPED, game: str = "keltis", seeds: range = range(2)) -> np.ndarray:
    """The observations a policy's bot encodes along games against the heuristic."""
    bot = make_bot(spec, game=game, num_players=2)
    seen: list[np.ndarray] = []

    class Recording:
        name = "recording"

        def act(self, view):
            seen.append(bot.encoder.encode(view))
            return bot.act(view)

    for seed in seeds:
        play_game(game, [Recording(), make_bot("heuristic", game=game)], seed=seed)
    return np.array(seen, dtype=np.float32)


def _awkward_rows(size: int) -> np.ndarray:
    """Rows of every kind the first layer meets, and some it should not: mostly zeros,
    negative zeros, all zeros, all non-zero, tiny and large values."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, size)).astype(np.float32)
    x[rng.random(x.shape) < 0.85] = 0.0
    x[3] = 0.0
    x[4] = -0.0
    x[5, ::2] = -0.0
    x[6] = rng.standard_normal(size)
    x[7, :10] = np.float32(1e-30)
    x[8, :10] = np.float32(3e4)
    return x


def test_the_compiled_first_layer_and_its_numpy_form_give_the_same_bits() -> None:
    pytest.importorskip("numba")
    w = load_policy(ROOT / "policies" / "keltis_2p.zip").layers[0][0]
    for x in (_awkward_rows(w.shape[0]), _observations()):
        compiled = sparse_rows(np.ascontiguousarray(x), w)
        assert np.array_equal(compiled, sparse_rows_numpy(x, w))
        assert np.allclose(compiled, x @ w, rtol=1e-4, atol=1e-4)  # the same product, summed in another order
    assert sparse_rows(np.zeros((0, w.shape[0]), np.float32), w).shape == (0, w.shape[1])


@pytest.mark.parametrize("spec,game", [(SHIPPED, "keltis"), ("ppo:policies/dice_2p.zip", "dice")])
def test_a_row_s_sparse_logits_do_not_depend_on_the_rows_beside_it(spec: str, game: str) -> None:
    obs = _observations(spec, game)
    sparse, dense = make_bot(spec, game=game, num_players=2), make_bot(f"{spec},forward=dense", game=game,
                                                                       num_players=2)
    alone = np.array([sparse.batch_logits(o) for o in obs])
    assert np.array_equal(sparse.batch_logits_each(obs), alone)
    assert np.array_equal(sparse.batch_logits_each(obs[::-1])[::-1], alone)
    assert np.allclose(alone, np.array([dense.batch_logits(o) for o in obs]), rtol=1e-4, atol=1e-4)
    # the first layer of a product of all rows at once is each row's too
    w = sparse.policy.layers[0][0]
    first = sparse_rows(np.ascontiguousarray(obs), w)
    assert np.array_equal(first[5:6], sparse_rows(np.ascontiguousarray(obs[5:6]), w))


def test_without_numba_the_sparse_forward_computes_the_same_first_layer(tmp_path: Path) -> None:
    pytest.importorskip("numba")
    obs = _observations()[:40]
    np.save(tmp_path / "obs.npy", obs)
    code = WITHOUT_NUMBA + (
        "import numpy as np\n"
        "from keltis_env.bots import make_bot\n"
        "from keltis_env.policy.network import sparse_rows\n"
        f"bot = make_bot({SHIPPED!r}, game='keltis', num_players=2)\n"
        f"obs = np.load({str(tmp_path / 'obs.npy')!r})\n"
        "assert bot.batch_logits_each(obs).shape == (40, 187)\n"
        f"np.save({str(tmp_path / 'first.npy')!r}, sparse_rows(obs, bot.policy.layers[0][0]))\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] == 'numba' or 'kernels' in m)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""  # numpy computed it
    # the later layers are numpy's products in both cases (their bits are BLAS's, as for forward=dense)
    w = load_policy(ROOT / "policies" / "keltis_2p.zip").layers[0][0]
    assert np.array_equal(np.load(tmp_path / "first.npy"), sparse_rows(obs, w))


def test_the_forward_option_is_checked_and_shown() -> None:
    with pytest.raises(ValueError, match="option forward must be one of sparse, dense, got 'fast'"):
        make_bot(f"{SHIPPED},forward=fast", game="keltis", num_players=2)
    dense = make_bot(f"{SHIPPED},forward=dense", game="keltis", num_players=2)
    sparse = make_bot(SHIPPED, game="keltis", num_players=2)
    assert sparse.forward == "sparse" and "forward" not in repr(sparse) and "forward=dense" in repr(dense)
    assert dense.network_key[2] == "dense" and sparse.twin().network_key == sparse.network_key


def test_with_forward_names_the_forward_pass_of_ppo_specs_that_name_none() -> None:
    assert with_forward("ppo:x.zip", "dense") == "ppo:x.zip,forward=dense"
    assert with_forward("ppo:x.zip,sample=1", "dense") == "ppo:x.zip,sample=1,forward=dense"
    assert with_forward("ppo:x.zip,forward=sparse", "dense") == "ppo:x.zip,forward=sparse"
    assert with_forward("heuristic", "dense") == "heuristic"
    assert with_forward("ppo:x.zip", None) == "ppo:x.zip"


def test_the_frozen_protocols_play_policies_by_the_dense_forward_pass() -> None:
    for version in ("v1", "v2"):
        protocol = load_protocol(ROOT / "benchmarks" / version)
        assert {t.ppo_forward for t in protocol.tracks.values()} == {"dense"}
    track = load_protocol(ROOT / "benchmarks" / "v2").track("dice-2p")
    specs = track.table("ppo:policies/dice_2p.zip", "policy")
    pinned = make_bots(table_tasks(specs, track.game, track.seed, 1, None, track.ppo_forward)[0], None)
    assert [b.forward for b in pinned] == ["dense", "dense"]
    # outside a protocol a spec plays by the bot's default
    assert [b.forward for b in make_bots(table_tasks(specs, track.game, track.seed, 1)[0], None)] == ["sparse"] * 2


def test_a_protocol_may_name_its_forward_pass_and_a_wrong_one_is_refused(tmp_path: Path) -> None:
    from benchmark_helpers import tiny_protocol

    folder = tiny_protocol(tmp_path / "p")
    text = (folder / "protocol.yaml").read_text()
    (folder / "protocol.yaml").write_text("ppo_forward: sparse\n" + text)
    assert load_protocol(folder).track("dice-2p").ppo_forward == "sparse"
    (folder / "protocol.yaml").write_text("ppo_forward: fast\n" + text)
    with pytest.raises(BenchmarkError, match=r"ppo_forward must be one of sparse, dense .*got 'fast'"):
        load_protocol(folder)


def test_each_row_s_relabellings_made_inside_the_kernel_give_the_rows_bits() -> None:
    pytest.importorskip("numba")
    from keltis_env.core import kernels

    bot = make_bot(SHIPPED, game="keltis", num_players=2)
    gather = bot.symmetry.obs_source
    w = bot.policy.layers[0][0]
    obs = _observations()[:30]
    made = np.ascontiguousarray(obs[:, gather].reshape(-1, obs.shape[1]))
    inside = np.empty((made.shape[0], w.shape[1]), dtype=np.float32)
    kernels.sparse_rows_gathered(obs, gather, w, inside)
    assert np.array_equal(inside, sparse_rows(made, w))
    assert np.array_equal(inside, sparse_rows_numpy(made, w))
    gathered = bot.policy.sparse_logits_gathered(obs, gather)
    assert gathered.shape == (30, bot.symmetry.size, 187)
    assert np.array_equal(gathered[7], bot.policy.sparse_logits(obs[7][gather]))


class _NoNetwork:
    """Stands for a network that must not be asked."""

    def __call__(self, obs):
        raise AssertionError("the network was asked")

    sparse_logits = sparse_logits_gathered = __call__


@pytest.mark.parametrize("options", ["", ",sample=1,temperature=0.5"])
def test_a_forced_move_is_played_without_the_network_and_draws_as_with_it(options: str) -> None:
    from keltis_env.core.game import get_game

    game = get_game("keltis")
    state = game.new_state(game.make_config(num_players=2), 3)
    rng = np.random.default_rng(0)
    while len(state.legal_actions()) != 1:
        state.apply(int(rng.choice(state.legal_actions())))
    view = state.view(state.current_player)
    asked, unasked = (make_bot(f"{SHIPPED}{options}", seed=9, game="keltis", num_players=2) for _ in range(2))
    with_logits = asked.choose(view.legal_actions, asked.logits(view))
    unasked.policy = _NoNetwork()
    assert unasked.act(view) == with_logits == view.legal_actions[0]
    assert unasked.rng.random() == asked.rng.random()  # the same draws consumed
    with pytest.raises(ValueError, match="needs the network's logits to choose among 2 legal actions"):
        unasked.choose([1, 2], None)


def test_making_a_ppo_bot_loads_no_kernel_and_the_evaluation_loads_it_before_the_first_move() -> None:
    pytest.importorskip("numba")
    code = (
        "import sys\n"
        "from keltis_env.bots import make_bot\n"
        f"bot = make_bot({SHIPPED!r}, game='keltis', num_players=2)\n"
        "print('numba' in sys.modules)\n"
        "from keltis_env.evaluation.play import make_bots, make_tasks\n"
        f"make_bots(make_tasks([{SHIPPED!r}, 'random'], 1, 5, 'keltis', {{}}, None)[0], None)\n"
        "print('keltis_env.core.kernels' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.slow
def test_the_sparse_kernels_agree_with_numbas_bounds_checking_on(tmp_path: Path) -> None:
    """In a fresh interpreter with ``NUMBA_BOUNDSCHECK=1`` and an empty cache (so that the
    kernels are compiled with the checks): the sparse forward pass of every shipped card and
    dice policy over the observations of a game gives numpy's bits."""
    pytest.importorskip("numba")
    import os

    code = (
        "import sys, numpy as np\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import test_ppo_forward as t\n"
        "from keltis_env.core import kernels\n"
        "from keltis_env.policy.network import sparse_rows_numpy\n"
        "for spec, game in [(t.SHIPPED, 'keltis'), ('ppo:policies/dice_2p.zip', 'dice')]:\n"
        "    obs = t._observations(spec, game, range(1))\n"
        "    bot = t.make_bot(spec, game=game, num_players=2)\n"
        "    w = bot.policy.layers[0][0]\n"
        "    gather = bot.symmetry.obs_source if bot.symmetry is not None else np.arange(w.shape[0])[None]\n"
        "    out = np.empty((len(obs) * len(gather), w.shape[1]), np.float32)\n"
        "    kernels.sparse_rows_gathered(obs, gather, w, out)\n"
        "    assert np.array_equal(out, sparse_rows_numpy(obs[:, gather].reshape(-1, obs.shape[1]), w))\n"
        "try:\n"
        "    one = np.ones((1, 3), np.float32)\n"
        "    kernels.sparse_rows(one, np.ones((2, 2), np.float32), np.ones((1, 2), np.float32))\n"
        "    sys.exit('no IndexError: bounds checking is off')\n"
        "except IndexError:\n"
        "    pass\n"
        "print('ok')\n"
    )
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=900)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
