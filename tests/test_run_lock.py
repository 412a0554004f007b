"""One process at a time in a run folder: a training run, an expert-iteration run or a
recipe's work folder is claimed while it runs (keltis_env.core.output_files.FolderLock, an
flock the operating system drops when the process ends), and a second run in it is refused
with one line that names the folder and the process holding it, having written nothing."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from keltis_env.core.output_files import LOCK_NAME, FolderInUseError, FolderLock

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"

_HOLD = """
import sys, time
from keltis_env.core.output_files import FolderLock
FolderLock(sys.argv[1], "the test folder").acquire()
print("held", flush=True)
time.sleep(600)
"""


class Holder:
    """A process that claims a folder and sleeps until it is ended."""

    def __init__(self, folder: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder)], stdout=subprocess.PIPE, text=True,
                                     cwd=ROOT)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "held"

    def end(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=30)


@pytest.fixture
def holder():
    made: list[Holder] = []

    def hold(folder: Path) -> Holder:
        made.append(Holder(folder))
        return made[-1]

    yield hold
    for h in made:
        h.end(signal.SIGKILL)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` with its bytes and modification time."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------- the lock itself
def test_a_second_claim_of_a_folder_is_refused_naming_the_folder_and_the_holder(tmp_path, holder):
    held = holder(tmp_path / "run")
    with pytest.raises(FolderInUseError) as caught:
        FolderLock(tmp_path / "run", "the training run folder").acquire()
    message = str(caught.value)
    assert "\n" not in message
    assert f"the training run folder {tmp_path / 'run'} is in use by process {held.proc.pid}" in message


def test_a_claim_in_the_same_process_through_another_lock_is_refused_too(tmp_path):
    with FolderLock(tmp_path, "the folder"), pytest.raises(FolderInUseError, match=f"process {os.getpid()}"):
        FolderLock(tmp_path, "the folder").acquire()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["ended", "killed"])
def test_the_lock_of_a_process_that_died_does_not_block_the_folder(tmp_path, holder, sig):
    held = holder(tmp_path)
    held.end(sig)
    assert (tmp_path / LOCK_NAME).exists()  # a killed holder leaves its file: it must not count as a claim
    with FolderLock(tmp_path, "the folder"):
        assert f"process {os.getpid()}" in (tmp_path / LOCK_NAME).read_text()


def test_a_released_folder_keeps_no_lock_file_and_can_be_claimed_again(tmp_path):
    lock = FolderLock(tmp_path, "the folder").acquire()
    lock.release()
    assert not (tmp_path / LOCK_NAME).exists()
    FolderLock(tmp_path, "the folder").acquire().release()


# ---------------------------------------------------------------------- the commands
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    from training.train.__main__ import main

    runs = tmp_path_factory.mktemp("runs")
    assert main(["--config", str(CONFIGS / "train" / "smoke.yaml"), "--set", f"runs_dir={runs}", "--no-progress"]) == 0
    (run,) = runs.iterdir()
    return run


@pytest.mark.slow
def test_two_resumes_of_one_training_run_at_once_are_refused_and_write_nothing(smoke_run, tmp_path, holder, capsys):
    from training.train.__main__ import main

    run = tmp_path / smoke_run.name
    shutil.copytree(smoke_run, run)
    assert not (run / LOCK_NAME).exists()  # the first run gave its folder back when it ended
    held = holder(run)
    before = snapshot(run)
    capsys.readouterr()
    assert main(["--resume", str(run), "--set", "total_timesteps=1536", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"the training run folder {run} is in use by process {held.proc.pid}" in err
    assert snapshot(run) == before
    held.end(signal.SIGKILL)  # the holder dies: the folder is free again
    assert main(["--resume", str(run), "--set", "total_timesteps=1536", "--no-progress"]) == 0
    with open(run / "eval.csv") as f:
        assert [int(r["timesteps"]) for r in csv.DictReader(f)] == [512, 1024, 1536]
    assert not (run / LOCK_NAME).exists()


def test_an_expert_iteration_run_in_a_folder_in_use_is_refused_and_writes_nothing(tmp_path, holder, capsys):
    from training.exit.__main__ import main

    out = tmp_path / "exit"
    held = holder(out)
    before = snapshot(out)
    assert main(["--config", str(CONFIGS / "exit" / "exit_tiny.yaml"), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"the expert-iteration run folder {out} is in use by process {held.proc.pid}" in err
    assert snapshot(out) == before


def test_a_recipe_in_a_work_folder_in_use_is_refused_and_writes_nothing(tmp_path, holder, capsys):
    from training.recipe.__main__ import main

    work = tmp_path / "work"
    held = holder(work)
    before = snapshot(work)
    assert main([str(CONFIGS / "recipes" / "keltis_3p.yaml"), "--work", str(work), "--tiny"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"the recipe work folder {work} is in use by process {held.proc.pid}" in err
    assert snapshot(work) == before


# ---------------------------------------------------------------------- evaluation and ladder folders
def test_a_second_evaluation_on_a_run_folder_in_use_is_refused(tmp_path) -> None:
    from keltis_env.evaluation import EvaluationError, evaluate

    out = tmp_path / "run"
    evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, out=out)
    kept = (out / "games.jsonl").read_text()
    # as another evaluation resuming it holds it
    with FolderLock(out, "the evaluation's run folder"), \
            pytest.raises(EvaluationError, match=rf"the evaluation's run folder {out} is in use by process"):
        evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, out=out, resume=True)
    assert (out / "games.jsonl").read_text() == kept
    assert evaluate(["random", "random"], games=2, seed=0, workers=1, progress=False, out=out, resume=True).games == 2


def test_a_second_ladder_on_a_run_folder_in_use_is_refused(tmp_path) -> None:
    from keltis_env.benchmark import BenchmarkError, score

    out = tmp_path / "ladder"
    score("random", "keltis-2p", rungs=["random"], quick=True, workers=1, progress=False, out=out)
    with FolderLock(out, "the ladder's run folder"), \
            pytest.raises(BenchmarkError, match=rf"the ladder's run folder {out} is in use by process"):
        score("random", "keltis-2p", rungs=["random"], quick=True, workers=1, progress=False, out=out, resume=True)
