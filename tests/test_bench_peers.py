"""``keltis bench --peers``: our environments on the backend ``--backend`` names, said in
the output, next to the peers in one AEC loop. A stand-in peer (our own dice environment
under another name) keeps these tests independent of the ``peers`` extra;
``tests/test_clients.py`` runs the real peers where they are installed."""

from __future__ import annotations

import importlib.util
import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from keltis_env.cli import bench, main
from keltis_env.core.compiled_match import compiled_kernels
from keltis_env.core.game import game_names, get_game
from keltis_env.envs import make_env

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="the compiled backend needs numba (the fast extra)")


@pytest.fixture
def stand_in_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    """One peer, ``stand_in_v0``: the dice environment on the Python engine."""
    monkeypatch.setattr(bench, "_peers", lambda: ({"stand_in_v0": partial(make_env, "dice")}, {}))


def run_peers(tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> tuple[str, dict[str, Any]]:
    out_file = tmp_path / "peers.json"
    assert main(["bench", "--peers", "--seconds", "0.05", "--repeats", "1", "--json", str(out_file), *options]) == 0
    return capsys.readouterr().out, json.loads(out_file.read_text())


def test_bench_peers_times_ours_on_the_python_engine_when_asked(stand_in_peer: None, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out, data = run_peers(tmp_path, capsys, "--backend", "python")
    ours = {r["env"]: r["backend"] for r in data["results"] if not r["peer"]}
    assert ours == {get_game(name).env_name: "python" for name in game_names()}
    assert [r["backend"] for r in data["results"] if r["peer"]] == [None]
    assert "--backend python" in out and "on the compiled backend" not in out
    assert "stand_in_v0" in out and "ratio" in out


@needs_numba
def test_bench_peers_times_ours_on_the_compiled_core_by_default_and_says_so(stand_in_peer: None, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    out, data = run_peers(tmp_path, capsys)
    ours = {r["env"]: r["backend"] for r in data["results"] if not r["peer"]}
    # a game without a compiled core (the test plugin's toy game) runs on the Python engine
    assert ours == {get_game(name).env_name: "python" if compiled_kernels(get_game(name)) is None else "compiled"
                    for name in game_names()}
    assert {get_game(name).env_name for name in ("keltis", "dice")} <= {name for name, kind in ours.items()
                                                                       if kind == "compiled"}
    table = out.splitlines()
    assert table[0].split()[:2] == ["environment", "backend"]
    for name, kind in ours.items():
        assert f"{name} on the {kind} backend" in out
        assert any(line.split()[:2] == [name, kind] for line in table)


def test_bench_peers_refuses_a_backend_it_does_not_have_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["bench", "--peers", "--backend", "numba"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "--backend" in err and "'auto', 'compiled', 'python'" in err


@needs_numba
def test_our_backends_resolve_auto_to_the_compiled_core_where_numba_is_installed() -> None:
    resolved = bench.our_backends("auto")
    assert resolved[get_game("keltis").env_name] == resolved[get_game("dice").env_name] == "compiled"
    assert set(bench.our_backends("python").values()) == {"python"}
    env = bench.ours("compiled")[get_game("dice").env_name]()
    assert env.unwrapped.backend == "compiled"
