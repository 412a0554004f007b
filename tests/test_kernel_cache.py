"""The compiled kernels' disk cache (keltis_env.core.kernels.sources_stamp): a kernel's
compiled code holds the kernels it calls and the constants it reads, so a cached kernel is
loaded only while every file of ``STAMPED`` is unchanged, not only its own file (numba's
own check). Each run is a fresh interpreter on a copy of the package, so that this
checkout's cache is not touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

from keltis_env.core import kernels

ROOT = Path(__file__).resolve().parents[1]
#: compiles (or loads) one small kernel of core/kernels.py; prints cache hits and misses
PROBE = """
import numpy as np
from keltis_env.core.kernels import random_legal, seed_generators
random_legal(np.ones((2, 5), np.int8), seed_generators(0, 2), np.zeros(2, np.int64))
stats = random_legal.stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
"""


def probe(where: Path) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env["PYTHONPATH"] = str(where)
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=where, capture_output=True, text=True,
                          timeout=600, check=True)
    hits, misses = done.stdout.split()
    return int(hits), int(misses)


@pytest.fixture()
def package(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "keltis_env", tmp_path / "keltis_env", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_cached_kernel_is_compiled_again_when_a_file_it_depends_on_changes(package: Path) -> None:
    assert probe(package) == (0, 1)  # compiled and saved
    assert probe(package) == (1, 0)  # loaded
    # Not the kernel's own file: a game's constants, which other kernels freeze into their code.
    constants = package / "keltis_env" / "games" / "keltis" / "constants.py"
    constants.write_text(constants.read_text() + "\n# changed\n")
    assert probe(package) == (0, 1)
    assert probe(package) == (1, 0)


def test_the_stamp_covers_the_kernels_and_the_game_modules_they_read() -> None:
    stamped = {p.relative_to(ROOT / "keltis_env").as_posix() for pattern in kernels.STAMPED
               for p in (ROOT / "keltis_env").glob(pattern)}
    for name in ("core/kernels.py", "core/batch_kernels.py", "games/keltis/kernels_batch.py",
                 "games/keltis/kernels_heuristic.py", "games/keltis/constants.py", "games/keltis/bots/plan.py",
                 "games/dice/kernels.py"):
        assert name in stamped, name
    assert len(kernels.sources_stamp()) == 64
