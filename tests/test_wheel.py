"""An installed wheel, not only an editable checkout, runs what the README shows: the
benchmark protocol (benchmarks/v1 with its calibration and frozen policies), the shipped
policies and the configs are package data (keltis_env.data), found from any working folder.

The slow test builds the wheel offline (``pip wheel . --no-deps --no-build-isolation``),
installs it without its dependencies into a new virtualenv that borrows them from this
one's site-packages (a ``.pth`` file), and runs ``keltis ladder``, ``keltis evaluate`` (the
shipped policy named by its repository path, ``ppo:policies/keltis_2p.zip``) and ``keltis
demo`` from a folder outside the repository."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from keltis_env.data import DATA_DIR, SHIPPED_FOLDERS, resolve, shipped

ROOT = Path(__file__).resolve().parents[1]


def test_the_data_folder_links_to_the_one_copy_in_the_repository():
    for name in SHIPPED_FOLDERS:
        link = DATA_DIR / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve(), name


def test_a_shipped_path_is_found_from_any_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve("policies/keltis_2p.zip") == DATA_DIR / "policies" / "keltis_2p.zip"
    assert resolve("policies/keltis_2p.zip").is_file()
    assert shipped("benchmarks/v1") is not None and shipped("configs/recipes/keltis_3p.yaml") is not None
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "keltis_2p.zip").write_bytes(b"mine")
    assert resolve("policies/keltis_2p.zip") == Path("policies/keltis_2p.zip")  # a file of the user's comes first
    for outside in ("../policies/keltis_2p.zip", "/policies/keltis_2p.zip", "tests/test_wheel.py", "nothing.zip"):
        assert shipped(outside) is None
        assert resolve(outside) == Path(outside)


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    """A virtualenv holding the wheel built from this checkout (its dependencies from this one)."""
    tmp = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-q", "-w",
          str(tmp / "dist")], tmp, dict(os.environ))
    (wheel,) = (tmp / "dist").glob("keltis_rl-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, dict(os.environ))
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel)], tmp, dict(os.environ))
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp,
                     dict(os.environ)).strip())
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")  # numpy, torch... from here
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    outside = tmp / "elsewhere"
    outside.mkdir()
    return wheel, venv, site, env, outside


@pytest.mark.slow
def test_the_wheel_holds_the_protocols_the_policies_and_the_configs(wheel_venv):
    wheel = wheel_venv[0]
    names = set(zipfile.ZipFile(wheel).namelist())
    for path in [*(p for v in ("v1", "v2") for p in (ROOT / "benchmarks" / v).rglob("*") if p.is_file()),
                 *(ROOT / "policies").glob("*.zip"), *(ROOT / "configs").rglob("*.yaml")]:
        assert f"keltis_env/data/{path.relative_to(ROOT)}" in names, path
    assert not any(n.startswith(("benchmarks/", "policies/", "configs/")) for n in names)


@pytest.mark.slow
def test_an_installed_wheel_runs_the_readme_commands_from_any_folder(wheel_venv):
    _, venv, site, env, outside = wheel_venv
    keltis = str(venv / "bin" / "keltis")
    where = _run([str(venv / "bin" / "python"), "-c", "import keltis_env; print(keltis_env.__file__)"], outside, env)
    assert Path(where.strip()).is_relative_to(site), where  # the wheel's copy, not this checkout
    assert (site / "keltis_env" / "data" / "policies" / "keltis_2p.zip").is_file()
    assert not (outside / "policies").exists()  # the relative spec can only name the wheel's shipped copy
    spec = "ppo:policies/keltis_2p.zip"
    card = _run([keltis, "ladder", spec, "--track", "keltis-2p", "--quick", "--rungs", "random",
                 "--workers", "2", "--quiet", "--json", "card.json"], outside, env)
    assert "protocol v1, QUICK" in card and "custom" not in card
    assert (outside / "card.json").is_file()
    assert "random" in _run([keltis, "evaluate", spec, "random", "--games", "2", "--workers", "1"], outside, env)
    assert _run([keltis, "demo", "--every", "end"], outside, env).strip()
