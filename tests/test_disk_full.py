"""A full disk (ENOSPC) ends training, evaluations with records and ladders with one line
naming the folder and what it needed, never a traceback; what was written stays
resumable. The disk is filled by a writer that fails (``os.fsync`` or a file's ``write``
raising ENOSPC, as a full device does)."""

from __future__ import annotations

import errno
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from benchmark_helpers import tiny_protocol

from keltis_env.cli import main as keltis_main
from keltis_env.core import output_files
from keltis_env.core.output_files import DiskFullError, atomic_write_text
from keltis_env.evaluation import store


def _enospc(*args: Any, **kwargs: Any) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _one_line(err: str, *parts: str) -> None:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "no space left on the device of" in err, err
    for part in parts:
        assert part in err, err


def test_atomic_write_on_a_full_disk_names_the_folder_and_keeps_the_old_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out" / "card.json"
    atomic_write_text(path, "old")
    monkeypatch.setattr(output_files.os, "fsync", _enospc)
    with pytest.raises(DiskFullError) as info:
        atomic_write_text(path, "x" * 5000)
    assert str(info.value).startswith(f"no space left on the device of {path.parent} for card.json (it needed "
                                      "about 5.0 kB")
    assert path.read_text() == "old" and [p.name for p in path.parent.iterdir()] == ["card.json"]
    copy = pickle.loads(pickle.dumps(info.value))  # it crosses from a worker process whole
    assert str(copy) == str(info.value) and copy.errno == errno.ENOSPC


class _FullAfter:
    """A file whose writes fail with ENOSPC after ``lines`` lines (a disk that fills up)."""

    def __init__(self, real: Any, lines: int) -> None:
        self.real, self.left = real, lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            _enospc()
        self.left -= 1
        return int(self.real.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __enter__(self) -> _FullAfter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()


def _disk_full_after(monkeypatch: pytest.MonkeyPatch, lines: int) -> None:
    def opener(*args: Any, **kwargs: Any) -> _FullAfter:
        return _FullAfter(open(*args, **kwargs), lines)  # the wrapper closes it

    monkeypatch.setattr(store, "open", opener, raising=False)


def test_ladder_on_a_full_disk_ends_in_one_line_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=2)
    run = tmp_path / "run"
    common = ["ladder", "heuristic", "--track", "dice-2p", "--protocol", str(folder), "--workers", "1", "--quiet"]
    _disk_full_after(monkeypatch, 2)
    assert keltis_main([*common, "--out", str(run)]) == 1
    _one_line(capsys.readouterr().err, str(run), "random.jsonl", f"continue with --resume {run}")
    monkeypatch.undo()
    assert keltis_main([*common, "--resume", str(run), "--json", str(tmp_path / "card.json")]) == 0
    card = json.loads((tmp_path / "card.json").read_text())
    assert [r["games"] for r in card["rungs"]] == [4, 4]


def test_ladder_scorecard_on_a_full_disk_ends_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = tiny_protocol(tmp_path / "p", deals=1)
    real_replace = output_files.os.replace

    def full_for_cards(src: Any, dst: Any) -> None:
        if str(dst).endswith("card.json"):
            _enospc()
        real_replace(src, dst)

    monkeypatch.setattr(output_files.os, "replace", full_for_cards)
    code = keltis_main(["ladder", "heuristic", "--track", "dice-2p", "--protocol", str(folder), "--workers", "1",
                        "--quiet", "--json", str(tmp_path / "card.json")])
    assert code == 1
    _one_line(capsys.readouterr().err.splitlines()[-1] + "\n", str(tmp_path), "card.json", "run it again")
    assert not (tmp_path / "card.json").exists()


def test_evaluate_records_on_a_full_disk_end_in_one_line_and_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    records, run = tmp_path / "records", tmp_path / "run"
    calls = {"n": 0}
    real_fsync = output_files.os.fsync

    def full_at_third(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] >= 3:
            _enospc()
        real_fsync(fd)

    monkeypatch.setattr(output_files.os, "fsync", full_at_third)
    code = keltis_main(["evaluate", "random", "random", "--games", "6", "--workers", "1", "--quiet",
                        "--records", str(records), "--out", str(run)])
    assert code == 1
    _one_line(capsys.readouterr().err, str(records), "game_0000", f"continue with --resume {run}")
    monkeypatch.undo()
    assert keltis_main(["evaluate", "random", "random", "--games", "6", "--workers", "1", "--quiet",
                        "--resume", str(run)]) == 0
    assert len((run / next(p.name for p in run.glob("*.jsonl"))).read_text().splitlines()) == 6


#: a py: agent whose module fills the disk of the worker process that loads it (not of the
#: main process, which loads it too, to check it)
FILLS_DISK = '''
import errno, multiprocessing, os

def _full(fd):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

if multiprocessing.parent_process() is not None:
    os.fsync = _full

def first(observation, action_mask):
    return int(action_mask.nonzero()[0][0])
'''


def test_records_full_disk_in_a_worker_process_is_not_blamed_on_an_agent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent = tmp_path / "fills.py"
    agent.write_text(FILLS_DISK)
    records = tmp_path / "records"
    code = keltis_main(["evaluate", f"py:{agent}:first", "random", "--games", "4", "--workers", "2", "--quiet",
                        "--records", str(records)])
    err = capsys.readouterr().err
    assert code == 1
    _one_line(err, str(records), "run it again")
    assert "failed" not in err and "stopped its worker process" not in err


def test_training_checkpoint_on_a_full_disk_ends_in_one_line_and_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from training.sb3 import trainer as trainer_module
    from training.train.__main__ import main as train_main

    config = tmp_path / "tiny.yaml"
    config.write_text(f"""name: full
runs_dir: {tmp_path / 'runs'}
total_timesteps: 256
n_envs: 2
workers: 0
checkpoint_every: 128
ppo: {{n_steps: 64, batch_size: 64, n_epochs: 1}}
pool: {{snapshot_every: 128}}
eval: {{every: 0, final_games: 2, opponents: [random]}}
env: {{game: dice}}
""")
    real_save = trainer_module.save_checkpoint
    saves = {"n": 0}

    def fills_at_second(*args: Any, **kwargs: Any) -> None:
        saves["n"] += 1
        if saves["n"] < 2:
            return real_save(*args, **kwargs)
        with pytest.MonkeyPatch.context() as full:
            full.setattr(output_files.os, "fsync", _enospc)
            return real_save(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "save_checkpoint", fills_at_second)
    assert train_main(["--config", str(config), "--no-progress"]) == 1
    # a first compiled run says first that it compiles the kernels (keltis_env.core.compile_notice)
    err = "".join(line for line in capsys.readouterr().err.splitlines(keepends=True) if "kernels" not in line)
    (run,) = (tmp_path / "runs").iterdir()
    _one_line(err, str(run / "checkpoints"), "last.zip", f"--resume {run}")
    assert (run / "checkpoints" / "last.zip").is_file()  # the checkpoint before stays whole
    monkeypatch.undo()
    assert train_main(["--resume", str(run), "--no-progress"]) == 0
    assert json.loads((run / "run.json").read_text())["timesteps"] >= 256
