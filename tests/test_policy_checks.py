"""One check of a policy file for every loader (keltis_env.policy.load_policy): ``ppo:PATH``,
a search's ``net=PATH`` and ``keltis policy PATH`` refuse the same files, NaN or infinite
weights among them, each with one line naming the file and what is wrong."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from keltis_env.bots import check_spec, make_bot
from keltis_env.cli import main
from keltis_env.policy import INFO_MEMBER, PolicyLoadError, load_policy

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {"keltis": ROOT / "policies" / "keltis_2p.zip", "dice": ROOT / "policies" / "dice_2p.zip"}


# ---------------------------------------------------------------------- making broken files
def repack(source: Path, dest: Path, replace: dict[str, bytes | None]) -> Path:
    """A copy of the zip ``source`` at ``dest``: the members named in ``replace`` get the
    bytes given (``None``: left out), the others are copied as they are."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(dest, "w") as out:
        for item in src.infolist():
            data = replace.get(item.filename, src.read(item.filename))
            if data is not None:
                out.writestr(item, data)
    return dest


def with_weights(source: Path, dest: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of ``source`` whose state dict (``policy.pth``) ``change`` edits in place."""
    torch = pytest.importorskip("torch")
    with zipfile.ZipFile(source) as zf:
        state = torch.load(io.BytesIO(zf.read("policy.pth")), map_location="cpu", weights_only=True)
    change(state)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return repack(source, dest, {"policy.pth": buffer.getvalue()})


def with_metadata(source: Path, dest: Path, **fields: Any) -> Path:
    """A copy of ``source`` whose metadata has ``fields`` changed (``None``: removed)."""
    with zipfile.ZipFile(source) as zf:
        meta = json.loads(zf.read(INFO_MEMBER))
    meta.update(fields)
    meta = {k: v for k, v in meta.items() if v is not None}
    return repack(source, dest, {INFO_MEMBER: json.dumps(meta).encode()})


def bad_crc(source: Path, dest: Path) -> Path:
    """``source`` with one byte of the stored ``policy.pth`` flipped: its checksum fails."""
    with zipfile.ZipFile(source) as zf:
        info = zf.getinfo("policy.pth")
    data = bytearray(source.read_bytes())
    data[info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + info.compress_size // 2] ^= 0xFF
    dest.write_bytes(bytes(data))
    return dest


def set_tensor(name: str, value: float) -> Callable[[dict[str, Any]], None]:
    def change(state: dict[str, Any]) -> None:
        state[name].view(-1)[0] = value

    return change


def drop_tensor(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda state: state.pop(name)


def reshape_tensor(name: str, rows: int = 0, columns: int = 0) -> Callable[[dict[str, Any]], None]:
    """Grow (or, negative, shrink) the tensor ``name`` by ``rows`` and ``columns``."""
    torch = pytest.importorskip("torch")

    def change(state: dict[str, Any]) -> None:
        t = state[name]
        if t.ndim == 1:
            state[name] = torch.zeros(t.shape[0] + rows)
        else:
            state[name] = torch.zeros(t.shape[0] + rows, t.shape[1] + columns)

    return change


def sigmoid_without_metadata(source: Path, dest: Path) -> Path:
    """``source`` without metadata, its SB3 ``data`` naming the Sigmoid activation."""
    with zipfile.ZipFile(source) as zf:
        data = json.loads(zf.read("data"))
    data.setdefault("policy_kwargs", {})["activation_fn"] = "<class 'torch.nn.modules.activation.Sigmoid'>"
    return repack(source, dest, {"data": json.dumps(data).encode(), INFO_MEMBER: None})


def with_data(source: Path, dest: Path, space: str, key: str, value: Any) -> Path:
    """A copy of ``source`` whose SB3 ``data`` has ``data[space][key] = value``."""
    with zipfile.ZipFile(source) as zf:
        data = json.loads(zf.read("data"))
    data[space][key] = value
    return repack(source, dest, {"data": json.dumps(data).encode()})


def with_pickle(source: Path, dest: Path, pickled: bytes) -> Path:
    """A copy of ``source`` whose weights' pickle (``archive/data.pkl`` in ``policy.pth``) is ``pickled``."""
    with zipfile.ZipFile(source) as zf:
        weights = zf.read("policy.pth")
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(weights)) as inner, zipfile.ZipFile(buffer, "w") as out:
        for name in inner.namelist():
            out.writestr(name, pickled if name.endswith("/data.pkl") else inner.read(name))
    return repack(source, dest, {"policy.pth": buffer.getvalue()})


#: a pickle that appends to an ordered dict (what a flipped opcode can make of one)
APPEND_TO_DICT = b"\x80\x02ccollections\nOrderedDict\n)\x81K\x01a."
#: a pickle whose byte string claims more bytes than any machine holds
HUGE_BYTES = b"\x80\x04\x8e" + (2**63 - 1).to_bytes(8, "little") + b"."

NAN, INF = float("nan"), float("inf")
HIDDEN = "mlp_extractor.policy_net.0.weight"

#: every kind of broken file: (its name, the game of the file it is made from, how, what the refusal says)
BROKEN: list[tuple[str, str, Callable[[Path, Path], Path], str]] = [
    ("bad_crc", "dice", bad_crc, r"its member 'policy.pth' cannot be read \(Bad CRC"),
    ("no_weights", "dice", lambda s, d: repack(s, d, {"policy.pth": None}), r"holds no 'policy\.pth'"),
    ("weights_not_a_zip", "dice", lambda s, d: repack(s, d, {"policy.pth": b"garbage"}), "policy.pth"),
    ("head_rows_missing", "dice", lambda s, d: with_weights(s, d, reshape_tensor("action_net.weight", rows=-1)),
     r"action_net\.weight/\.bias are missing or do not fit"),
    ("hidden_too_wide", "dice", lambda s, d: with_weights(s, d, reshape_tensor(HIDDEN, columns=3)),
     r"policy_net\.0\.weight/\.bias are missing or do not fit"),
    ("bias_missing", "dice", lambda s, d: with_weights(s, d, drop_tensor("action_net.bias")),
     r"action_net\.weight/\.bias are missing"),
    ("hidden_missing", "keltis", lambda s, d: with_weights(s, d, drop_tensor(HIDDEN)), "do not fit"),
    ("value_head_wide", "dice", lambda s, d: with_weights(s, d, reshape_tensor("value_net.weight", rows=1)),
     "value_net"),
    ("card_net_labelled_dice", "keltis", lambda s, d: with_metadata(s, d, game="dice", features=None,
                                                                       symmetry=None, format=2),
     "2-player dice policy taking observations of size 1205, but this dice encoder makes"),
    ("dice_net_labelled_keltis", "dice", lambda s, d: with_metadata(s, d, game="keltis"),
     "2-player keltis policy taking observations of size 313, but this keltis encoder makes"),
    ("nine_players", "dice", lambda s, d: with_metadata(s, d, num_players=9), "dice is for 2 to 4 players"),
    ("one_player", "keltis", lambda s, d: with_metadata(s, d, num_players=1), "keltis is for 2 to 4 players"),
    ("three_players_of_two", "dice", lambda s, d: with_metadata(s, d, num_players=3),
     "3-player dice policy taking observations of size 313, but this dice encoder makes"),
    ("sigmoid", "dice", lambda s, d: with_metadata(s, d, activation="Sigmoid"),
     "hidden activation 'Sigmoid' is not supported; expected one of Tanh, ReLU"),
    ("sigmoid_in_data", "dice", sigmoid_without_metadata, "hidden activation 'Sigmoid' is not supported"),
    ("features_dropped", "keltis", lambda s, d: with_metadata(s, d, features=None),
     "taking observations of size 1205, but this keltis encoder makes .* without features"),
    ("pickle_appends_to_a_dict", "dice", lambda s, d: with_pickle(s, d, APPEND_TO_DICT),
     r"its weights \(policy\.pth\) are not a tensor dictionary \(AttributeError"),
    ("pickle_claims_huge_bytes", "dice", lambda s, d: with_pickle(s, d, HUGE_BYTES),
     r"its weights \(policy\.pth\) are not a tensor dictionary"),
    ("observation_size_infinite", "dice", lambda s, d: with_data(s, d, "observation_space", "_shape", [1e400]),
     "its 'data' member is not SB3's description .*\\(OverflowError"),
    ("observation_size_text", "dice", lambda s, d: with_data(s, d, "observation_space", "_shape", ["a"]),
     "its 'data' member is not SB3's description .*\\(ValueError"),
    ("observation_size_nested", "dice", lambda s, d: with_data(s, d, "observation_space", "_shape", [[313]]),
     "its 'data' member is not SB3's description .*\\(TypeError"),
    ("actions_infinite", "dice", lambda s, d: with_data(s, d, "action_space", "n", 1e400),
     "its 'data' member is not SB3's description .*\\(OverflowError"),
    ("actions_negative", "dice", lambda s, d: with_data(s, d, "action_space", "n", -48),
     "has -48 actions; expected positive numbers"),
    ("nan_weight", "dice", lambda s, d: with_weights(s, d, set_tensor(HIDDEN, NAN)),
     f"tensor {HIDDEN} holds NaN/inf values"),
    ("inf_bias", "keltis", lambda s, d: with_weights(s, d, set_tensor("action_net.bias", INF)),
     "tensor action_net.bias holds NaN/inf values"),
    ("minus_inf_value", "dice", lambda s, d: with_weights(s, d, set_tensor("value_net.weight", -INF)),
     "tensor value_net.weight holds NaN/inf values"),
]


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("broken")
    return {name: make(SHIPPED[game], folder / f"{name}.zip") for name, game, make, _ in BROKEN}


# ---------------------------------------------------------------------- one check, every loader
@pytest.mark.parametrize(("name", "game", "message"), [(n, g, m) for n, g, _, m in BROKEN])
def test_keltis_policy_refuses_every_file_ppo_refuses(broken, capsys, name, game, message):
    path = broken[name]
    with pytest.raises(PolicyLoadError, match=message):
        make_bot(f"ppo:{path}", game=game)
    capsys.readouterr()
    assert main(["policy", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("keltis policy: error: ") and err.count("\n") == 1, err
    assert str(path) in err and "Traceback" not in err
    assert main(["policy", str(path), "--json"]) == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("name", ["nan_weight", "inf_bias", "card_net_labelled_dice", "sigmoid"])
def test_keltis_policy_symmetry_leaves_a_refused_file_as_it_was(broken, tmp_path, capsys, name):
    path = tmp_path / "p.zip"
    path.write_bytes(broken[name].read_bytes())
    assert main(["policy", str(path), "--symmetry", "none"]) == 2
    assert "keltis policy: error: " in capsys.readouterr().err
    assert path.read_bytes() == broken[name].read_bytes()


@pytest.mark.parametrize(
    ("name", "tensor"),
    [("nan_weight", HIDDEN), ("inf_bias", "action_net.bias"), ("minus_inf_value", "value_net.weight")],
)
def test_nan_and_inf_weights_are_refused_naming_the_file_and_the_tensor(broken, name, tensor):
    path = broken[name]
    game = "keltis" if name == "inf_bias" else "dice"
    refused = rf"{path.name}'?: tensor {tensor} holds NaN/inf values \(.*\); a usable policy has finite weights"
    with pytest.raises(PolicyLoadError, match=refused):
        load_policy(path)
    with pytest.raises(PolicyLoadError, match=refused):
        make_bot(f"ppo:{path}", game=game, num_players=2)
    with pytest.raises(PolicyLoadError, match=refused):
        make_bot(f"ismcts:net={path},iterations=4", game=game, num_players=2)
    with pytest.raises(PolicyLoadError, match=refused):
        make_bot(f"ismcts:net={path},leaf=model,rollout=net", game=game, num_players=2)
    with pytest.raises(ValueError, match=refused):  # the spec check that configs and the benchmark share
        check_spec(f"ppo:{path}", game, 2)


def test_evaluate_with_a_nan_network_search_exits_2_at_once(broken):
    """It used to hang at the first decision (the network's NaN priors left no candidate):
    run in its own process, a hang fails the test at the time limit instead of stalling it."""
    path = broken["nan_weight"]
    argv = ["evaluate", f"ismcts:net={path},iterations=4", "random", "--game", "dice", "--games", "2",
            "--workers", "1", "--quiet"]
    done = subprocess.run([sys.executable, "-m", "keltis_env", *argv], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 2, done.stderr
    assert f"tensor {HIDDEN} holds NaN/inf values" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_keltis_policy_refuses_nan_weights_in_its_own_process_with_one_line(broken):
    done = subprocess.run([sys.executable, "-m", "keltis_env", "policy", str(broken["nan_weight"])],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert f"tensor {HIDDEN} holds NaN/inf values" in done.stderr


@pytest.mark.parametrize("path", sorted((ROOT / "policies").glob("*.zip")), ids=lambda p: p.stem)
def test_every_shipped_policy_passes_the_check_and_keltis_policy_describes_it(path, capsys):
    info = load_policy(path).info
    assert main(["policy", str(path), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert (facts["game"], facts["num_players"]) == (info.game, info.num_players)
    make_bot(f"ppo:{path}", game=info.game, num_players=info.num_players)
