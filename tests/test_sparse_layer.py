"""Training's sparse first layer (training/common/sparse.py): the products and gradients of
``nn.Linear`` over the non-zero inputs, on random sparse rows (all-zero rows among them), in
an SB3 policy as training builds it (``first_layer``), with the state dict, the saved
model and the exported policy file of the dense network."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch as th

from keltis_env.policy import load_policy
from training.common.masked import forward
from training.common.sparse import SparseLinear, sparsify
from training.imitate.network import export_policy, load_model
from training.sb3.collector import BatchedSelfPlayVecEnv
from training.sb3.config import load_config
from training.sb3.model import new_model
from training.sb3.pipeline import PipelinedMaskablePPO

pytest.importorskip("numba")


def _sparse_rows(rng: np.random.Generator, rows: int, size: int, density: float) -> th.Tensor:
    """Rows with about ``density`` of their entries non-zero (ones, and other values), the
    first and the last rows all zeros."""
    x = np.where(rng.random((rows, size)) < density, rng.choice([1.0, 1.0, -0.5, 2.25, 0.125], (rows, size)), 0.0)
    x[[0, -1]] = 0.0
    return th.from_numpy(x.astype(np.float32))


@pytest.mark.parametrize("threads", [1, 2])
def test_the_kernels_are_the_products_over_the_non_zero_entries(threads):
    """The entries found row by row and column by column are ``x``'s non-zero ones in order;
    the products are ``x @ wt + bias`` and ``x.T @ g`` within float rounding."""
    from keltis_env.core import sparse_kernels as k

    k.set_threads(threads)
    rng = np.random.default_rng(threads)
    x = _sparse_rows(rng, 40, 30, 0.2).numpy()
    c = k.compress_columns(x, k.compress_rows(x))
    rows, cols = np.nonzero(x)
    assert c.nnz == len(rows) and c.ptr[0] == 0 and c.ptr[-1] == c.nnz and len(c.ptr) == 41
    np.testing.assert_array_equal(c.idx[:c.nnz], cols)
    np.testing.assert_array_equal(c.val[:c.nnz], x[rows, cols])
    np.testing.assert_array_equal(np.diff(c.ptr), np.count_nonzero(x, axis=1))
    by_column = np.lexsort((rows, cols))
    np.testing.assert_array_equal(c.cidx[:c.nnz], rows[by_column])
    np.testing.assert_array_equal(c.cval[:c.nnz], x[rows, cols][by_column])
    np.testing.assert_array_equal(np.diff(c.cptr), np.count_nonzero(x, axis=0))
    wt = rng.standard_normal((30, 9)).astype(np.float32)
    bias = rng.standard_normal(9).astype(np.float32)
    out = np.full((40, 9), np.nan, dtype=np.float32)
    k.rows_product(c.ptr, c.idx, c.val, wt, bias, out)
    np.testing.assert_allclose(out, x.astype(np.float64) @ wt + bias, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal((40, 9)).astype(np.float32)
    grad = np.full((30, 9), np.nan, dtype=np.float32)
    k.columns_product(c.cptr, c.cidx, c.cval, g, grad)
    np.testing.assert_allclose(grad, x.T.astype(np.float64) @ g, rtol=1e-5, atol=1e-5)
    fewer = _sparse_rows(rng, 40, 30, 0.05).numpy()  # the same arrays, longer than its entries
    again = k.compress_columns(fewer, k.compress_rows(fewer, c))
    assert again.idx is c.idx and again.nnz == np.count_nonzero(fewer)
    more = _sparse_rows(rng, 40, 30, 0.5).numpy()  # new arrays, as long as its entries
    grown = k.compress_rows(more, again)
    assert grown.idx is not c.idx and len(grown.idx) == grown.nnz == np.count_nonzero(more)
    k.rows_product(grown.ptr, grown.idx, grown.val, wt, bias, out)
    np.testing.assert_allclose(out, more.astype(np.float64) @ wt + bias, rtol=1e-5, atol=1e-5)


def test_a_batch_is_compressed_once_for_both_layers_and_never_reused_stale():
    """The actor's and the critic's first layers on one tensor: one compression forward and
    backward. Another tensor over the same memory, rewritten, or the same tensor changed in
    place: their own products."""
    from training.common import sparse

    th.manual_seed(5)
    actor, critic = SparseLinear(th.nn.Linear(12, 4)), SparseLinear(th.nn.Linear(12, 3))
    dense_actor = th.nn.Linear(12, 4)
    dense_actor.load_state_dict(actor.state_dict())
    buffer = _sparse_rows(np.random.default_rng(5), 8, 12, 0.3).numpy()
    x = th.from_numpy(buffer)
    token = sparse._COMPRESSIONS.token
    (actor(x).sum() + critic(x).sum()).backward()
    assert sparse._COMPRESSIONS.token == token + 1
    buffer[:] = _sparse_rows(np.random.default_rng(6), 8, 12, 0.3).numpy()
    y = th.from_numpy(buffer)  # the same memory, a new tensor: not the batch held
    th.testing.assert_close(actor(y), dense_actor(y), rtol=1e-5, atol=1e-5)
    y.mul_(2.0)  # changed in place: its version moves
    th.testing.assert_close(actor(y), dense_actor(y), rtol=1e-5, atol=1e-5)
    assert sparse._COMPRESSIONS.token == token + 3


@pytest.mark.parametrize(("rows", "density"), [(1, 0.13), (2, 0.0), (33, 0.13), (512, 0.3), (64, 1.0)])
def test_the_sparse_layer_is_the_dense_layer(rows, density):
    """Outputs and the gradients of the weight and the bias, within float rounding."""
    rng = np.random.default_rng(rows)
    th.manual_seed(rows)
    dense = th.nn.Linear(83, 17)
    sparse = SparseLinear(copy.deepcopy(dense))
    x = _sparse_rows(rng, rows, 83, density)
    g = th.from_numpy(rng.standard_normal((rows, 17)).astype(np.float32))
    out_d, out_s = dense(x), sparse(x)
    th.testing.assert_close(out_s, out_d, rtol=1e-5, atol=1e-5)
    th.testing.assert_close(out_s[0], dense.bias.detach())  # an all-zero row: the bias alone
    out_d.backward(g)
    out_s.backward(g)
    th.testing.assert_close(sparse.weight.grad, dense.weight.grad, rtol=1e-5, atol=1e-5)
    th.testing.assert_close(sparse.bias.grad, dense.bias.grad, rtol=1e-5, atol=1e-5)
    assert sparse.weight.grad.stride() == sparse.weight.stride()  # accumulated without a copy


def test_the_sparse_layer_keeps_the_linear_layers_parameters():
    dense = th.nn.Linear(20, 5)
    weight, bias = dense.weight, dense.bias
    values = weight.detach().clone()
    sparse = SparseLinear(dense)
    assert sparse.weight is weight and sparse.bias is bias  # the optimizer's objects
    assert th.equal(sparse.weight, values) and sparse.weight.t().is_contiguous()
    state = sparse.state_dict()
    assert list(state) == ["weight", "bias"] and state["weight"].is_contiguous()
    assert th.equal(state["weight"], values)
    fresh = SparseLinear(th.nn.Linear(20, 5))
    fresh.load_state_dict(state)
    assert th.equal(fresh.weight, values) and fresh.weight.t().is_contiguous()


def test_inputs_it_does_not_take_go_through_the_dense_product():
    """Inputs that need a gradient, or not rows: torch's product."""
    th.manual_seed(1)
    dense = th.nn.Linear(10, 4)
    sparse = SparseLinear(copy.deepcopy(dense))
    x = _sparse_rows(np.random.default_rng(1), 6, 10, 0.3)
    xg = x.clone().requires_grad_(True)
    sparse(xg).sum().backward()
    th.testing.assert_close(xg.grad, dense.weight.detach().sum(dim=0).expand(6, 10))
    th.testing.assert_close(sparse(x.reshape(2, 3, 10)), dense(x.reshape(2, 3, 10)), rtol=1e-5, atol=1e-5)


def _config(first_layer: str, n_envs: int = 4):
    return load_config("configs/train/smoke.yaml", [f"n_envs={n_envs}", "ppo.n_steps=16", "ppo.batch_size=32",
                                                    f"first_layer={first_layer}"])


def _venv(n_envs: int = 4) -> BatchedSelfPlayVecEnv:
    return BatchedSelfPlayVecEnv(n_envs, ["random"], [1.0], reward="score", workers=0)


def test_training_builds_the_sparse_layer_by_its_config():
    venv = _venv()
    try:
        for first_layer, layer in (("dense", th.nn.Linear), ("sparse", SparseLinear)):
            model = new_model(_config(first_layer), venv)
            extractor = model.policy.mlp_extractor
            assert type(extractor.policy_net[0]) is layer and type(extractor.value_net[0]) is layer
        assert _config("dense").first_layer == load_config("configs/train/scratch.yaml").first_layer
        assert sparsify(model.policy) == 0
    finally:
        venv.close()


def test_a_sparse_policy_computes_and_learns_as_the_dense_one(tmp_path):
    """The same seed: the same weights, state-dict keys and layout; values, log-probabilities
    and every gradient of the PPO pass within float rounding; the saved model loads into
    either network; the exported policy file plays the same logits."""
    venv = _venv()
    try:
        dense, sparse = new_model(_config("dense"), venv), new_model(_config("sparse"), venv)
        assert isinstance(sparse, PipelinedMaskablePPO)
        state_d, state_s = dense.policy.state_dict(), sparse.policy.state_dict()
        assert list(state_d) == list(state_s)
        for key in state_d:
            assert th.equal(state_d[key], state_s[key]) and state_s[key].stride() == state_d[key].stride(), key
        obs = _sparse_rows(np.random.default_rng(2), 50, venv.observation_space.shape[0], 0.13)
        masks = th.from_numpy(np.random.default_rng(3).random((50, venv.action_space.n)) < 0.3)
        masks[:, 0] = True
        grads = []
        for model in (dense, sparse):
            values, log_probs, legal = forward(model.policy, obs, masks)
            loss = values.square().mean() - th.where(legal, log_probs.exp() * log_probs, 0.0).sum(dim=1).mean()
            model.policy.optimizer.zero_grad()
            loss.backward()
            grads.append({k: p.grad.clone() for k, p in model.policy.named_parameters()})
            with th.no_grad():
                logits = forward(model.policy, obs, masks)[1]
            grads[-1]["log_probs"] = logits
        for key in grads[0]:
            th.testing.assert_close(grads[1][key], grads[0][key], rtol=1e-4, atol=1e-6)
        sparse.policy.optimizer.step()  # an update of the column-major weight
        sparse.save(tmp_path / "model.zip")
        loaded = PipelinedMaskablePPO.load(tmp_path / "model.zip", device="cpu")
        for key, value in sparse.policy.state_dict().items():
            assert th.equal(loaded.policy.state_dict()[key], value), key
        export_policy(sparse, tmp_path / "policy.zip", "keltis", 2)
        played = load_policy(tmp_path / "policy.zip")
        with th.no_grad():
            expected = sparse.policy.action_net(sparse.policy.mlp_extractor.forward_actor(obs)).numpy()
        np.testing.assert_allclose(played(obs.numpy()), expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(played.sparse_logits(obs.numpy()), expected, rtol=1e-4, atol=1e-5)
    finally:
        venv.close()


def test_a_shipped_policy_loads_into_the_sparse_network():
    """The from-scratch policy file's weights, into a sparse network of its shape: its logits."""
    played = load_policy("policies/keltis_2p_scratch.zip")
    model = load_model("policies/keltis_2p_scratch.zip")
    reference = copy.deepcopy(model.policy)
    assert sparsify(model.policy) == 2
    model.policy.load_state_dict(reference.state_dict())
    obs = _sparse_rows(np.random.default_rng(4), 20, played.info.observation_size, 0.13)
    with th.no_grad():
        logits = model.policy.action_net(model.policy.mlp_extractor.forward_actor(obs)).numpy()
        values = model.policy.predict_values(obs).numpy()[:, 0]
    np.testing.assert_allclose(logits, played(obs.numpy()), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(values, played.values(obs.numpy()), rtol=1e-4, atol=1e-4)
