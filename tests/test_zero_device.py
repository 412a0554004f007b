"""Where and how expert iteration's network is computed (the ``device`` and ``first_layer``
keys) and the self-play throughput command (``python -m training.bench --zero``): a GPU
asked for where PyTorch sees none is refused naming the key, ``auto`` falls back to the CPU,
a resumed run may move to another device, the files a run writes load on the CPU whatever
device wrote them, the sparse first layer computes what the dense one does, and the
measurement counts only decisions made after its warm-up."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
pytest.importorskip("torch")

import torch

from training.bench.__main__ import main as bench_main
from training.common.config import ConfigError
from training.zero.__main__ import main
from training.zero.config import load_config, torch_device

ROOT = Path(__file__).resolve().parent.parent
TINY = str(ROOT / "configs" / "zero" / "tiny.yaml")
CUDA = torch.cuda.is_available()


@pytest.mark.skipif(CUDA, reason="PyTorch sees a GPU here")
def test_a_gpu_asked_for_where_there_is_none_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"device: cuda, but PyTorch .* sees no GPU here"):
        load_config(TINY, ["device=cuda"])
    assert torch_device(load_config(TINY, ["device=auto"]).device) == "cpu"


def test_an_unknown_device_is_refused_naming_what_is_allowed():
    with pytest.raises(ConfigError, match=r"device.*cpu.*cuda.*auto"):
        load_config(TINY, ["device=tpu"])


def test_a_resumed_run_may_move_to_another_device_and_its_state_loads_on_the_cpu(tmp_path):
    run = tmp_path / "run"
    common = ["--quiet", "--set", "eval.every=0"]
    assert main(["--config", TINY, "--out", str(run), *common, "--set", "decisions=50"]) == 0
    assert main(["--resume", str(run), "--quiet", "--set", "device=auto", "--set", "decisions=600"]) == 0
    state = torch.load(run / "state.pt", weights_only=False, map_location="cpu")
    assert state["generation"] >= 2 and state["decisions"] >= 600


@pytest.mark.skipif(not CUDA, reason="needs a GPU that PyTorch sees")
def test_a_run_on_the_gpu_fits_there_and_writes_files_that_load_on_the_cpu(tmp_path):
    from keltis_env.policy import load_policy

    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set", "device=cuda",
                 "--set", "decisions=100"]) == 0
    state = torch.load(run / "state.pt", weights_only=False, map_location="cpu")
    assert all(np.isfinite(v.numpy()).all() for v in state["policy"].values())
    policy = load_policy(str(run / "network.zip"))
    assert policy.info.features == ()


def test_the_throughput_command_counts_the_decisions_after_its_warm_up(tmp_path, capsys):
    out = tmp_path / "zero.json"
    assert bench_main(["--zero", TINY, "--seconds", "0.5", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["zero_config"] == "configs/zero/tiny.yaml" and result["device"] == ("cpu")
    assert result["decisions"] > 0 and result["batches"] > 0 and result["seconds"] >= 0.5
    # a batch is one move of each of the games side by side: at most ``parallel`` decisions
    assert result["decisions"] <= result["batches"] * result["parallel"]
    assert result["decisions_per_s"] == pytest.approx(result["decisions"] / result["seconds"], rel=0.01)
    assert 0.0 < result["network_share"] < 1.0 and result["network_rows_per_decision"] >= 1.0
    assert "decisions/s of self-play on cpu" in capsys.readouterr().out


def test_the_throughput_command_refuses_the_collectors_options_with_zero(capsys):
    with pytest.raises(SystemExit) as exc:
        bench_main(["--zero", TINY, "--only", "collector"])
    assert exc.value.code == 2
    assert "--zero takes neither" in capsys.readouterr().err
    assert bench_main(["--zero", TINY, "--set", "search.top_k=1"]) == 2
    assert "config error: search.top_k" in capsys.readouterr().err


def test_the_sparse_first_layer_gives_the_search_what_the_dense_one_does():
    from training.common.sparse import SparseLinear
    from training.zero.loop import TorchNetwork, start_model

    config = load_config(ROOT / "configs" / "zero" / "keltis_2p.yaml")
    dense, sparse = start_model(config).policy, start_model(config).policy
    from training.common.sparse import sparsify

    assert sparsify(sparse) == 2 and isinstance(sparse.mlp_extractor.policy_net[0], SparseLinear)
    rng = np.random.default_rng(3)
    size = dense.observation_space.shape[0]
    obs = (rng.random((300, size)) < 0.13).astype(np.float32) * rng.random((300, size), dtype=np.float32)
    for a, b in zip(TorchNetwork(dense)(obs), TorchNetwork(sparse)(obs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(TorchNetwork(dense).values(obs), TorchNetwork(sparse).values(obs), rtol=1e-4,
                               atol=1e-5)


def test_a_run_with_the_sparse_first_layer_writes_the_files_a_dense_one_does(tmp_path):
    from keltis_env.bots.gumbel import load_critic
    from keltis_env.policy import load_policy

    run = tmp_path / "run"
    assert main(["--config", TINY, "--out", str(run), "--quiet", "--set", "eval.every=0", "--set", "critic=full",
                 "--set", "first_layer=sparse", "--set", "decisions=50"]) == 0
    policy = load_policy(str(run / "network.zip"))
    assert policy.info.activation == "Tanh" and len(policy.layers) == 3  # two hidden layers and the logits
    critic = load_critic(str(run / "network.critic.npz"), "keltis", 2, ())
    assert len(critic[0]) == 3 and critic[1] == "Tanh"
    with pytest.raises(ConfigError, match="first_layer: sparse is computed on the CPU; with device auto give dense"):
        load_config(TINY, ["first_layer=sparse", "device=auto"])
