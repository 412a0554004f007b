"""An SB3 run used in process (training.budget, training.recipe) gives its run folder back
when :meth:`training.sb3.trainer.Trainer.close` is called, and when a resume is refused, so
that the folder is not kept locked until the process ends: the same process resumes it, and
another lock on it (another process's, as far as the folder's lock is concerned) is granted."""

from __future__ import annotations

from pathlib import Path

import pytest

from keltis_env.core.output_files import LOCK_NAME, FolderLock

ROOT = Path(__file__).resolve().parent.parent
#: one rollout of 2 x 128 decisions, no evaluation, no report
TINY = ["total_timesteps=256", "checkpoint_every=256", "eval.every=0", "eval.final_games=0",
        "pool.weights={random: 1.0}"]


@pytest.fixture
def tiny_run(tmp_path):
    from training.sb3.config import load_config
    from training.sb3.trainer import Trainer

    config = load_config(ROOT / "configs" / "train" / "smoke.yaml", [*TINY, f"runs_dir={tmp_path}"])
    trainer = Trainer.new(config, "test", progress=False)
    try:
        trainer.train()
    finally:
        trainer.close()
    return trainer.run_dir


def _free(run: Path) -> bool:
    """Whether a new lock on ``run`` is granted (released again at once)."""
    if (run / LOCK_NAME).exists():
        return False
    FolderLock(run, "the training run folder").acquire().release()
    return True


def test_a_closed_trainer_does_not_keep_its_run_folder_locked_in_process(tiny_run):
    from training.sb3.run_folder import holds_run_dir
    from training.sb3.trainer import Trainer

    assert not holds_run_dir(tiny_run) and _free(tiny_run)
    trainer = Trainer.resume(tiny_run, "test", ["total_timesteps=512"], progress=False)
    try:
        assert holds_run_dir(tiny_run) and (tiny_run / LOCK_NAME).exists()  # held while it runs
        trainer.train()
        assert trainer.model.num_timesteps == 512
    finally:
        trainer.close()
    assert not holds_run_dir(tiny_run) and _free(tiny_run)
    trainer.close()  # closing again does nothing
    assert _free(tiny_run)


def test_a_refused_resume_does_not_keep_the_run_folder_locked_in_process(tiny_run):
    from training.common.config import ConfigError
    from training.sb3.run_folder import holds_run_dir
    from training.sb3.trainer import Trainer

    with pytest.raises(ConfigError, match="keeps its network"):
        Trainer.resume(tiny_run, "test", ["network.net_arch=[8]"], progress=False)
    assert not holds_run_dir(tiny_run) and _free(tiny_run)
