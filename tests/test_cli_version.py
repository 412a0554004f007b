"""``keltis --version`` prints the package's version and exits 0."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import keltis_env
from keltis_env.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"keltis {metadata.version('keltis-rl')}\n"


def test_version_works_as_a_command_without_a_subcommand() -> None:
    done = subprocess.run([sys.executable, "-m", "keltis_env", "--version"], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"keltis {keltis_env.__version__}" and done.stderr == ""


def test_version_falls_back_to_the_source_release_when_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    assert keltis_env._installed_version() == keltis_env._SOURCE_VERSION
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{keltis_env._SOURCE_VERSION}"' in pyproject, "the fallback is the release pyproject.toml names"
