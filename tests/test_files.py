"""The one atomic writer (keltis_env.core.output_files): whole files or none, no temporary file left,
links written through, special files never replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from keltis_env.core.output_files import atomic_path, atomic_write_bytes, atomic_write_text


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    out.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(out) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_the_temporary_path_keeps_the_suffix_for_writers_that_add_one(tmp_path: Path) -> None:
    import numpy as np

    out = tmp_path / "demos.npz"
    with atomic_path(out) as tmp:
        assert tmp.suffix == ".npz" and tmp.parent == tmp_path
        np.savez(tmp, x=np.arange(3))
    assert np.load(out)["x"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demos.npz"]


def test_a_symlink_is_written_through_to_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_special_file_is_written_directly_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    import threading

    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    atomic_write_bytes(fifo, b"through the pipe")
    reader.join(timeout=10)
    assert got == [b"through the pipe"]
    assert not fifo.is_file() and fifo.exists()  # still the pipe
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


def test_the_new_file_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    out = tmp_path / "a.txt"
    out.write_text("old")
    out.chmod(0o600)
    atomic_write_text(out, "new")
    assert out.read_text() == "new" and (out.stat().st_mode & 0o777) == 0o600
