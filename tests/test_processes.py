"""Processes an evaluation starts, run as users run them: SIGTERM stops ``keltis evaluate``
as Ctrl-C does (finished games kept, exit status 143, no process left behind), a worker
stops when its main process is killed outright, and ``evaluate([...])`` pasted into a
plain script without the ``if __name__ == "__main__":`` guard works as written."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from keltis_env.core.game import load_record

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def _wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of the process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) ": state, ppid, pgrp, ...
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _start_evaluation(tmp_path: Path, agents: list[str], ready: Callable[[int, Path], bool]
                      ) -> tuple[subprocess.Popen[str], Path]:
    """``keltis evaluate`` with 2 workers in a session of its own (its process group holds
    it and its workers), once ``ready(pgid, records_folder)``."""
    rec = tmp_path / "rec"
    argv = ["evaluate", *agents, "--games", "100000", "--workers", "2", "--quiet",
            "--json", str(tmp_path / "out.json"), "--records", str(rec)]
    proc = subprocess.Popen([sys.executable, "-m", "keltis_env", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    if not _wait_for(lambda: ready(proc.pid, rec), 120):
        _kill_group(proc.pid)
        proc.communicate()
        pytest.fail("the evaluation did not get going")
    return proc, rec


def _kill_group(pgid: int) -> None:
    for pid in _group_members(pgid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_sigterm_does_not_lose_the_finished_games_nor_leave_workers_behind(tmp_path: Path) -> None:
    proc, rec = _start_evaluation(tmp_path, ["random", "random"],
                                  lambda pgid, rec: len(list(rec.glob("game_*.json"))) >= 3)
    try:
        assert len(_group_members(proc.pid)) >= 3  # the main process and its 2 workers
        proc.send_signal(signal.SIGTERM)  # the main process alone, as `kill PID` does
        stdout, stderr = proc.communicate(timeout=60)
        gone = _wait_for(lambda: not _group_members(proc.pid), 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _kill_group(proc.pid)
    assert proc.returncode == 143, stderr
    assert gone, "a worker process outlived the evaluation"
    assert "Traceback" not in stderr and "terminated: the worker processes are stopped" in stderr
    assert "PARTIAL RESULT, interrupted after" in stdout
    assert not (tmp_path / "out.json").exists()
    data = json.loads((tmp_path / "out.partial.json").read_text())
    assert data["partial"] is True and data["games"] >= 3 and data["planned_games"] == 100000
    records = sorted(rec.iterdir())
    assert len(records) == data["games"]  # exactly the finished games, each one whole
    for path in records:
        assert load_record(path).replay().is_over


def test_workers_do_not_outlive_a_killed_evaluation(tmp_path: Path) -> None:
    # slow games (seconds each), so that a worker left behind would still be in one
    proc, rec = _start_evaluation(tmp_path, ["ismcts", "ismcts"], lambda pgid, rec: len(_group_members(pgid)) >= 3)
    time.sleep(3)  # the workers are playing
    try:
        proc.kill()  # SIGKILL: no chance to stop the workers
        proc.communicate(timeout=60)
        written = sorted(rec.glob("game_*.json"))
        gone = _wait_for(lambda: not _group_members(proc.pid), 2)
        time.sleep(0.5)
        assert sorted(rec.glob("game_*.json")) == written, "a worker went on writing records"
    finally:
        _kill_group(proc.pid)
    assert gone, "a worker process outlived its killed main process"


PLAIN_SCRIPT = """\
from keltis_env.evaluation import evaluate

result = evaluate(["heuristic", "random"], games=4, seed=0, progress=False{workers})
print("games played:", result.games)
"""


@pytest.mark.parametrize("workers", ["", ", workers=2"])
def test_evaluate_in_a_plain_script_without_main_guard_does_not_crash(tmp_path: Path, workers: str) -> None:
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT.format(workers=workers))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "games played: 4\n"  # the script's top level ran once: no worker ran it again
    assert "Traceback" not in done.stderr and "RuntimeError" not in done.stderr
    assert "if __name__ == \"__main__\":" in done.stderr and "workers=1" in done.stderr  # the warning says why


GUARDED_SCRIPT = """\
import os
import sys

from keltis_env.evaluation import evaluate

print("imported in", "worker" if __name__ == "__mp_main__" else "main", file=sys.stderr)

if __name__ == "__main__":
    result = evaluate(["heuristic", "random"], games=4, seed=0, progress=False, workers=2)
    print("games played:", result.games)
"""


def test_evaluate_in_a_guarded_script_still_uses_worker_processes(tmp_path: Path) -> None:
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED_SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "games played: 4\n"
    assert "imported in worker" in done.stderr and "workers=1" not in done.stderr


def test_unguarded_detection_reads_the_calling_line() -> None:
    from keltis_env.evaluation.play import _unguarded_line

    source = textwrap.dedent("""\
        import x
        x.evaluate()
        if __name__ == "__main__":
            x.evaluate()
        if "__main__" == __name__:
            x.evaluate()
        else:
            x.evaluate()
        """)
    assert [_unguarded_line(source, line) for line in (2, 4, 6, 8)] == [True, False, False, True]
